"""Code written for the AMPS Python client, run in process against ``sowlib.compat.Client``.

``OrderDesk`` below only uses the AMPS client API (``publish``, ``delta_publish``, ``sow``,
``sow_and_subscribe`` with a message handler, ``sow_delete``, ``Command``/``execute``), so
the same class works with a client connected to an AMPS server. Here the store an AMPS
configuration would describe is attached to the server's URI with
``sowlib.compat.attach``; the client connects to that URI as it would to a server. No
server, no network, which is how such code can be unit-tested.

Run: python examples/amps_client_compat.py
"""

from __future__ import annotations

import json
from typing import Any

import sowlib.compat
from sowlib import SowStore
from sowlib.compat import Client, Command


class OrderDesk:
    """Application code: knows the AMPS client API and nothing about sowlib."""

    def __init__(self, client: Any, topic: str = "orders") -> None:
        self.client = client
        self.topic = topic
        self.events: list[str] = []

    def place(self, order_id: int, symbol: str, qty: int, price: float) -> int:
        body = json.dumps({"id": order_id, "sym": symbol, "qty": qty, "px": price})
        return int(self.client.publish(self.topic, body))

    def amend_qty(self, order_id: int, qty: int) -> int:
        return int(self.client.delta_publish(self.topic, json.dumps({"id": order_id, "qty": qty})))

    def watch_large(self, min_qty: int) -> str:
        def on_message(message: Any) -> None:
            command = message.get_command()
            if command in ("sow", "publish", "oof"):
                self.events.append(f"{command}:{json.loads(message.get_data())['id']}")

        filter_text = f"/qty >= {min_qty}"
        return str(
            self.client.sow_and_subscribe(on_message, self.topic, filter_text, oof_enabled=True)
        )

    def largest(self, n: int) -> list[dict[str, Any]]:
        stream = self.client.sow(self.topic, "/qty > 0", order_by="/qty DESC", top_n=n)
        return [json.loads(m.get_data()) for m in stream if m.get_command() == "sow"]

    def cancel_symbol(self, symbol: str) -> int:
        ack = self.client.sow_delete(self.topic, f"/sym = '{symbol}'")
        return int(ack.get_records_deleted())

    def count_with_command(self, filter_text: str) -> int:
        command = Command("sow").set_topic(self.topic).set_filter(filter_text)
        return sum(1 for m in self.client.execute(command) if m.get_command() == "sow")


def main() -> None:
    store = SowStore()
    store.create_topic("orders", keys=["/id"])  # the server's <SOW><Topic> config
    sowlib.compat.attach(store, "tcp://localhost:9007/amps/json")
    client = Client("order-desk")
    client.connect("tcp://localhost:9007/amps/json")  # reaches the attached store
    client.logon()

    desk = OrderDesk(client)
    desk.place(1, "IBM", 500, 145.5)
    desk.place(2, "MSFT", 50, 410.0)
    sub_id = desk.watch_large(100)
    desk.place(3, "AAPL", 800, 190.0)
    desk.amend_qty(1, 20)  # order 1 leaves the focus of /qty >= 100: an OOF message
    desk.amend_qty(2, 200)  # order 2 enters it: a publish
    print("subscription", sub_id, "saw:", desk.events)
    print("largest two:", [(o["id"], o["qty"]) for o in desk.largest(2)])
    print("cancelled AAPL orders:", desk.cancel_symbol("AAPL"))
    print("the subscription saw the cancel as:", desk.events[-1])
    print("orders with qty > 100 via Command:", desk.count_with_command("/qty > 100"))
    client.disconnect()
    sowlib.compat.detach("tcp://localhost:9007/amps/json")
    store.close()


if __name__ == "__main__":
    main()
