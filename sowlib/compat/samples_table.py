"""The official AMPS client samples and how they run on sowlib: a section of ``docs/compat.md``.

The AMPS Python client's source distribution ships 18 sample programs and the
server configuration they were written for (``sample.xml``).
``tests/compat/samples`` fetches them at test time and runs each pair unmodified
in one process and, where sowlib can, as two processes (the subscriber's store
opened read-only); this table is what those tests show. Imports nothing of sowlib.
"""

from __future__ import annotations

import attrs

__all__ = ["SAMPLES", "SampleRow", "render_samples"]

RUNS = "runs"
DIFFERS = "runs, differs"


@attrs.frozen
class SampleRow:
    """One sample program (or pair): how the test runs it, the outcome, the outcome as
    two processes (or why it is not run so), any shim."""

    programs: str
    how: str
    status: str
    two: str
    shim: str = "none"


SAMPLES: tuple[SampleRow, ...] = (
    SampleRow(
        "AMPSConsolePublisher + AMPSConsoleSubscriber",
        "the subscriber (it loops forever over `subscribe`) on a thread, then the publisher;"
        " the subscriber prints the message published to the pub/sub topic `messages`",
        RUNS,
        "runs: the publish reaches the read-only process through the store's pub/sub bus",
    ),
    SampleRow(
        "AMPSFIXBuilderPublisher + AMPSFIXShredderSubscriber",
        "over `/amps/fix`: sample.xml has no fix SOW topic `messages-sow`, so it is a fix"
        " pub/sub topic; the subscriber prints the three shredded fields",
        RUNS,
        "runs: fix `messages-sow` is a pub/sub topic (no fix SOW topic); the publish reaches "
        "the read-only process through the pub/sub bus",
    ),
    SampleRow(
        "AMPSNVFIXBuilderPublisher + AMPSNVFIXShredderSubscriber",
        "over `/amps/nvfix`: the nvfix SOW topic `messages-sow` is keyed on `/messageNumber`,"
        " which the sample's message lacks, so the publish is rejected (no key, not"
        " processed); sowlib's `publish` raises and the sample prints the error from its own"
        " `except` (the real client's `publish` does not wait for the server's answer);"
        " the subscriber gets nothing",
        DIFFERS,
        "as in one process: the publisher's error, nothing delivered (the nvfix SOW topic is "
        "followed, but no message is accepted)",
    ),
    SampleRow(
        "AMPSSOWConsolePublisher + AMPSSOWConsoleSubscriber",
        "the publisher, then the SOW query: group begin, the 10 records under 10 (number 5"
        " updated), group end",
        RUNS,
        "runs: the query in the read-only process answers with the writer's current SOW",
    ),
    SampleRow(
        "AMPSSOWandSubscribeConsoleSubscriber (+ AMPSSOWConsolePublisher)",
        "the publisher, the subscriber on a thread (the SOW part), the publisher again: its"
        " 11 matching publishes arrive live",
        RUNS,
        "runs: the second run's 11 publishes reach the read-only process live",
    ),
    SampleRow(
        "AMPSSOWandSubscribeWithOOF + AMPSUpdateForOOF",
        "the SOW publisher, the OOF subscriber on a thread, the updater (`allocate_message`,"
        " `send`, `sow_delete`): 8 `match` OOFs, one `deleted`, and one `expired` about a"
        " second later while the subscriber is idle",
        RUNS,
        "runs: `match` and `deleted` OOFs from the writer's log, `expired` on the reader's own "
        "clock",
    ),
    SampleRow(
        "AMPSPublishForReplay + AMPSSubscribeForReplay",
        "the publisher on a thread (9 messages a second, for 100 s: the process ends when the"
        " test has what it needs), then the `HAClient` bookmark subscriber: it replays"
        " orders 1-10 from the transaction log and exits; run again it resumes at 11 from"
        " its `MMapBookmarkStore` file",
        RUNS,
        "runs: the read-only process replays the writer's transaction log (followed read-only)"
        " and resumes at 11 from its `MMapBookmarkStore` file",
    ),
    SampleRow(
        "CompositeMessagePublisher + CompositeMessageSubscriber",
        "`composite-json-binary` over `HAClient`: the subscriber (filter"
        " `/0/number % 3 == 0`) on a thread, then the publisher's 9 messages; parts 3, 6"
        " and 9 arrive with their 50 doubles",
        RUNS,
        "runs: the publishes reach the read-only process through the pub/sub bus, filtered "
        "there on their first part",
        "`array.array.tostring` / `fromstring` (removed in Python 3.9) mapped to"
        " `tobytes` / `frombytes`",
    ),
    SampleRow(
        "AMPSQueuePublisher + AMPSQueueConsumer",
        "the publisher's 1000 messages (published to the queue topic `sample-queue`"
        " itself, which the transaction log records), then the consumer: each message once,"
        " leased one at a time (`MaxPerSubscriptionBacklog` 1) and acknowledged",
        RUNS,
        "runs: the read-only consumer's subscription is held by the writer, which leases it"
        " each message through the consumer's inbox; its acknowledgements go back through its"
        " outbox (see docs/queues.md)",
    ),
    SampleRow(
        "RandomServerChooser",
        "a module, not a program: imported, then used as an `HAClient`'s server chooser to"
        " connect, publish and query",
        RUNS,
        "not a pair",
    ),
)


def render_samples() -> list[str]:
    """The "official samples" section of ``docs/compat.md``, as lines."""
    out = [
        "## The official samples",
        "",
        "The AMPS Python client's source distribution ships sample programs and the server",
        "configuration they were written for (`sample.xml`). The tests fetch them at test",
        "time (they are not part of this repository), load `sample.xml` with",
        "`SowStore.from_config`, make `AMPS` mean `sowlib.compat`, and run each pair",
        "unmodified in one process, asserting on what the programs print. They also run the",
        "pairs sowlib can as two processes: the publisher over the writer's store, the",
        'subscriber over `SowStore.from_config("sample.xml", readonly=True)` in the same',
        "directory. A read-only process follows the writer: SOW topics through their logs,",
        "topics the transaction log records through the writer's journal (followed",
        "read-only), other pub/sub topics through the store's pub/sub bus (see \"Live",
        'subscriptions in other processes"); a read-only process consumes a queue and',
        "publishes to pub/sub topics through the writer (its outbox under the store",
        "directory). [R] The read-only store computes the configuration's views itself",
        "(transient topics, in its own memory, from the records it reads), and a `sow`",
        "through `sowlib.compat` over a read-only store refreshes it first: the query",
        "answers with the writer's state at the time of the call, as a server would.",
        "",
        "| sample | how it runs (one process) | status | two processes | shim |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in SAMPLES:
        cells = (row.programs, row.how, row.status, row.two, row.shim)
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out.append("")
    return out
