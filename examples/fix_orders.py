"""FIX orders: a SOW topic of FIX messages keyed on ClOrdID (tag 11), queried by tag.

Shows tag paths in filters (``/35 = 'D' AND /38 >= 100``), ordering on a tag, and a
delta publish that amends one order's quantity and price without resending the rest.

Run: python examples/fix_orders.py  (memory only; no servers)
"""

from __future__ import annotations

from sowlib import SowStore

SOH = "\x01"


def fix(**tags: object) -> str:
    """A FIX message from ``tag_<n>=value`` keywords, SOH-delimited."""
    return "".join(f"{name.removeprefix('tag_')}={value}{SOH}" for name, value in tags.items())


def show(text: str) -> str:
    return text.replace(SOH, "|")


def main() -> None:
    with SowStore() as store:
        # 35 MsgType, 11 ClOrdID, 55 Symbol, 54 Side, 38 OrderQty, 44 Price
        orders = store.create_topic("orders", message_type="fix", keys=["/11"])
        orders.publish(
            fix(tag_35="D", tag_11="ORD-1", tag_55="IBM", tag_54=1, tag_38=100, tag_44=145.5)
        )
        orders.publish(
            fix(tag_35="D", tag_11="ORD-2", tag_55="MSFT", tag_54=2, tag_38=50, tag_44=410)
        )
        orders.publish(
            fix(tag_35="D", tag_11="ORD-3", tag_55="AAPL", tag_54=1, tag_38=300, tag_44=190)
        )
        orders.publish(
            fix(tag_35="G", tag_11="ORD-4", tag_55="IBM", tag_54=1, tag_38=500, tag_44=146)
        )
        print(f"{len(orders)} orders stored")

        big_new = "/35 = 'D' AND /38 >= 100"
        print(f"\n{big_new}:")
        for rec in orders.sow(big_new, order_by="/38 DESC"):
            print("  ", show(rec.data.decode()))

        # An amend: only the key tag and the changed tags; everything else stays.
        result = orders.delta_publish(fix(tag_11="ORD-2", tag_38=250, tag_44=405.25))
        print(f"\ndelta publish of ORD-2: inserted={result.inserted} seq={result.seq}")
        amended = orders.get(result.sow_key)
        assert amended is not None
        print("   now:", show(amended.data.decode()))

        print(f"\n{big_new} after the amend:")
        for rec in orders.sow(big_new, order_by="/11"):
            print("  ", show(rec.data.decode()))

        buys = orders.sow("/54 = 1 AND /55 IN ('IBM', 'AAPL')", order_by="/44 DESC", top_n=2)
        print("\ntwo most expensive IBM/AAPL buys:", [rec.doc["11"] for rec in buys])


if __name__ == "__main__":
    main()
