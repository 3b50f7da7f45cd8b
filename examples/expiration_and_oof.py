"""Expiration on an injected clock, and out-of-focus (OOF) notifications with their reasons.

A ``sow_and_subscribe`` with ``oof=True`` first receives the matching records, then every
change; when a record it has seen stops matching (``match``), is deleted (``deleted``) or
expires (``expired``), it gets an ``oof`` message naming the reason.

Run: python examples/expiration_and_oof.py  (memory only; the clock is virtual)
"""

from __future__ import annotations

from sowlib import Message, SowStore


class Clock:
    """A virtual clock: expiration happens when the example says so, not after real seconds."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        print(f"-- {seconds:g}s later")


def on_message(message: Message) -> None:
    if message.command == "oof":
        print(f"   OOF {message.sow_key} reason={message.reason}: {message.data.decode()}")
    elif message.command in ("sow", "publish"):
        print(f"   {message.command:7} {message.data.decode()}")
    else:
        print(f"   [{message.command}]")


def main() -> None:
    clock = Clock()
    with SowStore(clock=clock) as store:
        # Records live 30 seconds unless a publish says otherwise (0 = never expire).
        quotes = store.create_topic("quotes", keys=["/sym"], expiration="30s")
        quotes.publish('{"sym": "IBM", "bid": 145}')
        quotes.publish('{"sym": "MSFT", "bid": 410}')
        quotes.publish('{"sym": "AAPL", "bid": 190}', expiration=5)
        quotes.publish('{"sym": "NVDA", "bid": 880}', expiration=0)

        print("sow_and_subscribe('/bid > 150', oof=True):")
        sub = quotes.sow_and_subscribe(on_message, "/bid > 150", oof=True)

        print("MSFT drops below the filter:")
        quotes.publish('{"sym": "MSFT", "bid": 120}')
        print("IBM rises into the filter:")
        quotes.publish('{"sym": "IBM", "bid": 151}')

        clock.advance(10)
        print(f"expired now: {store.process_expirations()} (AAPL lived 5s)")

        print("IBM is deleted:")
        quotes.sow_delete("/sym = 'IBM'")

        clock.advance(30)
        print(f"expired now: {store.process_expirations()} (the 30s default)")
        print("still stored:", [rec.doc["sym"] for rec in quotes.sow(order_by="/sym")])
        sub.unsubscribe()


if __name__ == "__main__":
    main()
