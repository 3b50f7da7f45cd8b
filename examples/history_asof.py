"""History: keep old versions of every record and ask what the topic held at a past point.

A historical query passes ``bookmark=``: a sequence number (as of that write), a
``datetime`` or epoch seconds, or an AMPS timestamp such as ``20231114T221500Z``.
Deleted records come back in queries as of a time before the delete.

Run: python examples/history_asof.py  (memory only; the clock is virtual)
"""

from __future__ import annotations

from datetime import UTC, datetime

from sowlib import Record, SowStore


class Clock:
    """A virtual clock so the timestamps in this example are predictable."""

    def __init__(self, start: datetime) -> None:
        self.now = start.timestamp()

    def __call__(self) -> float:
        return self.now


def prices(records: list[Record]) -> dict[str, object]:
    return {rec.doc["sym"]: rec.doc["px"] for rec in records}


def main() -> None:
    clock = Clock(datetime(2024, 3, 1, 9, 0, tzinfo=UTC))
    with SowStore(clock=clock) as store:
        # Keep every version (granularity 0s) for one day.
        book = store.create_topic(
            "prices", keys=["/sym"], history={"window": "1d", "granularity": "0s"}
        )
        seqs = {}
        for minute, sym, px in [
            (0, "IBM", 145),
            (0, "MSFT", 410),
            (5, "IBM", 147),
            (10, "MSFT", 405),
            (15, "IBM", 150),
        ]:
            clock.now = datetime(2024, 3, 1, 9, minute, tzinfo=UTC).timestamp()
            seqs[(sym, px)] = book.publish({"sym": sym, "px": px}).seq
        clock.now = datetime(2024, 3, 1, 9, 20, tzinfo=UTC).timestamp()
        book.sow_delete("/sym = 'MSFT'")

        print("now:                  ", prices(book.sow()))
        seq = seqs[("IBM", 147)]
        print(f"as of seq {seq}:          ", prices(book.sow(bookmark=seq)))
        moment = datetime(2024, 3, 1, 9, 12, tzinfo=UTC)
        print("as of 09:12 (datetime):", prices(book.sow(bookmark=moment)))
        print("as of 20240301T090300Z:", prices(book.sow(bookmark="20240301T090300Z")))
        print(
            "as of 09:12, px > 146: ",
            prices(book.sow("/px > 146", bookmark=moment, order_by="/sym")),
        )
        print("as of 08:00 (before):  ", prices(book.sow(bookmark="20240301T080000Z")))


if __name__ == "__main__":
    main()
