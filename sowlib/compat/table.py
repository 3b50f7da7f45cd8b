"""The compatibility table: every name of the real AMPS Python client and what sowlib does.

``python -m sowlib.compat.table`` prints ``docs/compat.md``; a test fails when the
page is stale or when a name marked supported is missing. Imports only the
``compat`` modules it describes.
"""

from __future__ import annotations

import sys

import attrs

from sowlib.compat.message import camel_case
from sowlib.compat.samples_table import render_samples

__all__ = ["ENTRIES", "Entry", "render_table"]

SUPPORTED, DIFFERS, ABSENT = "supported", "differs", "absent"


@attrs.frozen
class Entry:
    """One real-client name: where it lives, its status and a note (how it differs / why not)."""

    owner: str  # "module", "Client", "Command", "Message", "MessageStream" or a store
    name: str
    status: str
    note: str = ""


def _many(owner: str, status: str, names: str, note: str = "") -> list[Entry]:
    return [Entry(owner, n, status, note) for n in names.split()]


def _camel(entries: list[Entry]) -> list[Entry]:
    """The camelCase spelling of every Client method provided (the real client's older names)."""
    listed = {(e.owner, e.name) for e in entries}
    return [
        Entry("Client", camel_case(e.name), e.status, f"camelCase spelling of {e.name}")
        for e in entries
        if e.owner == "Client" and e.status != ABSENT and "_" in e.name
        if ("Client", camel_case(e.name)) not in listed
    ]


_NO_SERVER = "accepted, does nothing: there is no connection"
_BASE: list[Entry] = list(
    [
        # ---------------------------------------------------------------- module
        *_many("module", SUPPORTED, "Client Command Message MessageStream"),
        *_many(
            "module",
            SUPPORTED,
            "AMPSException CommandException ConnectionException BadFilterException"
            " BadRegexTopicException BadSowKeyException InvalidTopicException"
            " InvalidBookmarkException InvalidOptionsException InvalidOrderByException"
            " SubscriptionAlreadyExistsException SubidInUseException PublishException"
            " DisconnectedException AlreadyConnectedException InvalidURIException"
            " MessageTypeNotFoundException NotEntitledException UsageException"
            " MissingFieldsException TimedOutException",
            "each is also the matching sowlib error (SowError subclass)",
        ),
        *_many(
            "module",
            SUPPORTED,
            "AuthenticationException ConnectionRefusedException NameInUseException"
            " RetryOperationException StreamException TransportTypeException"
            " InvalidTransportOptionsException DuplicateLogonException LogonRequiredException"
            " UnknownException LocalStorageError StoreException CorruptedException",
            "defined so except clauses resolve; raised only where an in-process cause exists",
        ),
        Entry("module", "HAClient", DIFFERS, "connects to the chooser's first URI; no failover"),
        Entry(
            "module", "DefaultServerChooser", DIFFERS, "keeps the URIs; failures are recorded only"
        ),
        *_many(
            "module",
            SUPPORTED,
            "BadFilter BadRegexTopic AlreadyConnected AuthenticationError",
            "deprecated spellings: the same classes as the ...Exception names",
        ),
        Entry(
            "module",
            "MemoryBookmarkStore",
            SUPPORTED,
            "logs bookmark-subscription messages; MOST_RECENT resumes after the last discarded",
        ),
        Entry(
            "module",
            "LoggedBookmarkStore",
            SUPPORTED,
            "as MemoryBookmarkStore, kept in a file: a restarted program resumes",
        ),
        Entry(
            "module",
            "MMapBookmarkStore",
            DIFFERS,
            "the LoggedBookmarkStore file (an append-only file, not a memory map)",
        ),
        Entry("module", "BookmarkStore", SUPPORTED, "sowlib only: the in-memory store's class"),
        *_many(
            "module",
            DIFFERS,
            "PublishStore MemoryPublishStore",
            "counts publishes and holds none: a publish is applied before publish returns",
        ),
        Entry(
            "module",
            "DefaultAuthenticator",
            DIFFERS,
            "logon calls authenticate and completed; nothing checks the password",
        ),
        Entry("module", "CMessageHandler", ABSENT, "C handlers need the native client"),
        *_many(
            "module",
            SUPPORTED,
            "FIXBuilder NVFIXBuilder",
            "append(tag, value), get_string, reset; a bad tag or value raises UsageException",
        ),
        *_many("module", SUPPORTED, "FIXShredder NVFIXShredder", "to_map(data or message)"),
        Entry(
            "module",
            "CompositeMessageBuilder",
            SUPPORTED,
            "append(part), get_data() -> bytes; types from <MessageTypes> composite-local/global",
        ),
        Entry(
            "module",
            "CompositeMessageParser",
            SUPPORTED,
            "parse, size, get_part (text), get_part_raw / get_field_at (bytes)",
        ),
        Entry("module", "attach", SUPPORTED, "sowlib only: bind a store (and journal) to a URI"),
        Entry("module", "install", SUPPORTED, "sowlib only: sys.modules['AMPS'] = sowlib.compat"),
        # ---------------------------------------------------------------- Client: data
        Entry(
            "Client",
            "connect",
            DIFFERS,
            "opens nothing; binds the attached or shared store; the URI's type picks the topics",
        ),
        Entry("Client", "logon", DIFFERS, "accepted; nothing to authenticate"),
        *_many("Client", SUPPORTED, "disconnect close get_name set_name get_uri"),
        *_many("Client", SUPPORTED, "publish delta_publish sow_delete"),
        Entry(
            "Client",
            "sow",
            SUPPORTED,
            "a handler's exception goes to the exception listener if set, else to the caller",
        ),
        *_many("Client", SUPPORTED, "sow_delete_by_keys sow_delete_by_data"),
        Entry("Client", "subscribe", SUPPORTED),
        Entry(
            "Client",
            "delta_subscribe",
            SUPPORTED,
            "a record that matched before (even before the subscription): keys + changed fields",
        ),
        Entry(
            "Client",
            "sow_and_delta_subscribe",
            SUPPORTED,
            "send_empties=False drops updates that change nothing",
        ),
        Entry(
            "Client",
            "bookmark_subscribe",
            DIFFERS,
            "needs a Journal attached with the store; deletes only with options='oof'",
        ),
        Entry("Client", "unsubscribe", SUPPORTED, "one id, or None / 'all'"),
        Entry(
            "Client",
            "sow_and_subscribe",
            DIFFERS,
            "a bookmark (historical query + replay) raises UsageException",
        ),
        Entry("Client", "execute", SUPPORTED, "acks requested with add_ack_type are delivered"),
        Entry("Client", "execute_async", SUPPORTED),
        Entry(
            "Client",
            "publish_flush",
            DIFFERS,
            "fsyncs the store and the journal; past `timeout` ms TimedOutException, the"
            " flush going on",
        ),
        Entry("Client", "flush", DIFFERS, "same as publish_flush"),
        Entry(
            "Client",
            "ack",
            SUPPORTED,
            "a queue message: consumed (options cancel/expire); a bookmark message: discarded"
            " in the bookmark store, else moves the in-memory MOST_RECENT",
        ),
        Entry("Client", "discard", SUPPORTED, "HAClient: the same as ack(message)"),
        Entry("Client", "flush_acks", DIFFERS, "nothing to flush: an ack applies at once"),
        Entry("Client", "allocate_message", SUPPORTED, "an empty Message to fill and send"),
        Entry(
            "Client",
            "send",
            DIFFERS,
            "queries and subscriptions need add_message_handler for their command id first",
        ),
        Entry("Client", "get_server_version", DIFFERS, "a fixed 5.3 number"),
        Entry("Client", "get_server_version_info", DIFFERS, "a fixed 5.3 string"),
        *_many("Client", SUPPORTED, "get_name_hash convert_version_to_number"),
        # ---------------------------------------------------------------- Client: settings
        *_many(
            "Client",
            DIFFERS,
            "set_heartbeat set_disconnect_handler add_connection_state_listener"
            " remove_connection_state_listener set_retry_on_disconnect",
            _NO_SERVER,
        ),
        *_many(
            "Client",
            DIFFERS,
            "set_duplicate_message_handler set_failed_write_handler"
            " set_last_chance_message_handler set_unhandled_message_handler"
            " set_global_command_type_message_handler set_thread_created_callback",
            "accepted, does nothing: the situation never arises in process",
        ),
        *_many("Client", SUPPORTED, "set_exception_listener get_exception_listener"),
        *_many("Client", SUPPORTED, "set_default_max_depth get_default_max_depth"),
        *_many(
            "Client",
            DIFFERS,
            "set_auto_ack get_auto_ack",
            "queue subscriptions: a handler's return acks, a raise cancels; with a bookmark"
            " store, a handler's return acks a bookmark message; streams ack explicitly",
        ),
        *_many(
            "Client",
            DIFFERS,
            "set_ack_batch_size get_ack_batch_size"
            " set_ack_timeout get_ack_timeout set_error_on_publish_gap"
            " get_error_on_publish_gap set_logon_correlation_data"
            " get_logon_correlation_data",
            "recorded and returned; no effect in process",
        ),
        Entry("Client", "get_unpersisted_count", DIFFERS, "always 0"),
        *_many(
            "Client",
            SUPPORTED,
            "set_bookmark_store get_bookmark_store",
            "bookmark subscriptions log to it; MOST_RECENT resumes from it",
        ),
        Entry("Client", "set_publish_store", DIFFERS, "the store counts publishes, holds none"),
        Entry("Client", "get_publish_store", SUPPORTED),
        *_many(
            "Client",
            DIFFERS,
            "get_duplicate_message_handler get_retry_on_disconnect",
            "returns what was set; never used in process",
        ),
        *_many("Client", DIFFERS, "start_timer stop_timer", "raises UsageException"),
        Entry(
            "Client",
            "set_transport_filter",
            DIFFERS,
            "accepted, never called: there are no raw frames in process",
        ),
        Entry(
            "Client",
            "connect_and_logon",
            SUPPORTED,
            "HAClient only: the chooser's URI; report_success / report_failure are called",
        ),
        *_many("Client", SUPPORTED, "set_server_chooser get_server_chooser", "HAClient only"),
        *_many(
            "Client",
            SUPPORTED,
            "add_message_handler remove_message_handler",
            "route the messages of a command sent with that command id",
        ),
        # ---------------------------------------------------------------- Command
        *_many(
            "Command",
            SUPPORTED,
            "get_command set_topic set_filter set_order_by set_top_n set_options set_data"
            " set_expiration set_correlation_id set_sub_id get_sub_id set_command_id"
            " get_command_id set_query_id get_query_id set_bookmark reset",
        ),
        Entry("Command", "set_sow_key", SUPPORTED, "publisher-supplied key of a publish"),
        Entry(
            "Command", "set_sow_keys", SUPPORTED, "honoured by sow, sow_and_subscribe, sow_delete"
        ),
        *_many("Command", SUPPORTED, "add_ack_type set_ack_type get_ack_type"),
        Entry("Command", "set_skip_n", DIFFERS, "sowlib only (AMPS uses options='skip_n=N')"),
        *_many(
            "Command",
            DIFFERS,
            "set_batch_size set_timeout",
            "accepted; every record is its own message, nothing waits",
        ),
        Entry("Command", "set_sequence", DIFFERS, "accepted; the store assigns sequences"),
        Entry("Command", "get_sequence", SUPPORTED),
        # ---------------------------------------------------------------- Message
        *_many(
            "Message",
            SUPPORTED,
            "get_command get_topic get_data get_data_raw get_sow_key get_sow_keys"
            " get_correlation_id get_bookmark get_timestamp get_reason get_sub_id"
            " get_sub_ids get_command_id get_query_id get_ack_type get_status get_matches"
            " get_topic_matches get_records_deleted get_records_returned"
            " get_records_inserted get_records_updated get_sow_deleted get_sequence"
            " get_filter get_options get_length is_delta set_data set_topic set_command copy"
            " set_sow_key set_sow_keys set_correlation_id set_filter set_options set_sub_id"
            " set_command_id set_query_id set_bookmark set_ack_type set_top_n set_order_by"
            " get_top_n get_order_by get_bookmark_seq_no",
        ),
        Entry("Message", "set_expiration", SUPPORTED, "a lifetime in seconds, for send"),
        Entry("Message", "set_batch_size", DIFFERS, "recorded; records are not batched"),
        Entry(
            "Message", "ack", SUPPORTED, "queue (cancel/expire) and bookmark messages; else no-op"
        ),
        Entry(
            "Message", "get_lease_period", DIFFERS, "queue messages: the lease's end (timestamp)"
        ),
        Entry("Message", "fields", SUPPORTED, "sowlib only: the header fields as a dict"),
        Entry("Message", "get_expiration", DIFFERS, "absolute epoch seconds, not the lifetime"),
        Entry("Message", "get_batch_size", DIFFERS, "always 1: records are not batched"),
        Entry("Message", "get_user_id", DIFFERS, "always '': no authentication"),
        *_many(
            "Message",
            SUPPORTED,
            "getCommand getTopic getData getSowKey getSowKeys getBookmark getTimestamp"
            " getCorrelationId getSubId getQueryId getAckType getStatus getMatches"
            " getExpiration getReason getSequence",
            "camelCase aliases",
        ),
        *_many("Message", SUPPORTED, "Command AckType Status Reason", "constant classes"),
        Entry(
            "Message",
            "Options",
            SUPPORTED,
            "constant class; Rate/RateMaxGap are accepted, a replay runs at full speed",
        ),
        Entry("Message", "get_password", ABSENT, "logon only"),
        # ---------------------------------------------------------------- MessageStream
        *_many(
            "MessageStream",
            SUPPORTED,
            "close conflate get_depth get_max_depth get_command_id",
        ),
        Entry(
            "MessageStream",
            "max_depth",
            SUPPORTED,
            "bounds from the start; a publisher on the reading thread is never held",
        ),
        Entry("MessageStream", "timeout", SUPPORTED, "yields None heartbeats on live streams"),
        Entry(
            "MessageStream",
            "__iter__",
            DIFFERS,
            "a query stream ends after its group_end; a subscription blocks until close",
        ),
        # ---------------------------------------------------------------- the stores
        *_many(
            "BookmarkStore",
            SUPPORTED,
            "log discard discard_message get_most_recent is_discarded get_oldest_bookmark_seq"
            " purge purge_sub_id",
        ),
        Entry("BookmarkStore", "persisted", DIFFERS, "accepted: the journal is the persistence"),
        *_many(
            "BookmarkStore",
            DIFFERS,
            "set_server_version set_resize_handler",
            "recorded; one bookmark format, the store grows as needed",
        ),
        Entry("PublishStore", "store", DIFFERS, "counts the publish (stored); holds nothing"),
        *_many(
            "PublishStore",
            DIFFERS,
            "get_unpersisted_count get_lowest_unpersisted discard_up_to replay replay_single",
            "nothing is ever unpersisted: 0, no-ops, nothing replayed",
        ),
        Entry("PublishStore", "get_last_persisted", SUPPORTED, "the last sequence stored"),
        Entry("PublishStore", "set_resize_handler", DIFFERS, "accepted; never called"),
    ]
)
ENTRIES: tuple[Entry, ...] = (*_BASE, *_camel(_BASE))


def render_table() -> str:
    """The Markdown page ``docs/compat.md``."""
    out = [
        "# AMPS client compatibility",
        "",
        "`import sowlib.compat as AMPS` offers the names of the AMPS Python client over",
        "in-process stores (see [AMPS programs in process](compat-guide.md)). This page is",
        "generated from `sowlib/compat/table.py` by `python -m sowlib.compat.table`; a test",
        "fails when it is stale.",
        "",
        "*supported*: same name, arguments and meaning. *differs*: accepted, with the",
        "difference noted. *absent*: not provided, and why.",
        "",
    ]
    owners = ("module", "Client", "Command", "Message", "MessageStream")
    for owner in (*owners, "BookmarkStore", "PublishStore"):
        title = "Module `AMPS`" if owner == "module" else f"`{owner}`"
        out += [f"## {title}", "", "| name | status | note |", "| --- | --- | --- |"]
        for entry in sorted((e for e in ENTRIES if e.owner == owner), key=lambda e: e.name):
            note = entry.note.replace("|", "\\|")
            out.append(f"| `{entry.name}` | {entry.status} | {note} |")
        out.append("")
    counts = {s: sum(e.status == s for e in ENTRIES) for s in (SUPPORTED, DIFFERS, ABSENT)}
    out.append(f"{counts[SUPPORTED]} supported, {counts[DIFFERS]} differ, {counts[ABSENT]} absent.")
    out += ["", *render_samples()]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_table())
