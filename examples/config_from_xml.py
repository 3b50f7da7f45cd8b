"""Open a store from an AMPS configuration: the ``<SOW>`` block of an AMPS server config.

Every ``<Topic>`` becomes a sowlib topic with the same keys, indexes, expiration,
history and durability; ``FileName`` is resolved under ``base_dir``. A bad element
raises ``ConfigError`` naming its place, e.g. ``SOW/Topic[2]/Expiration``.

Run: python examples/config_from_xml.py  (uses a temporary directory; no servers)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from sowlib import SowStore
from sowlib.errors import ConfigError

AMPS_CONFIG = """\
<AMPSConfig>
  <Name>pricing</Name>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <Key>/orderId</Key>
      <HashIndex><Key>/region</Key></HashIndex>
      <Index>/price</Index>
      <SlabSize>64KB</SlabSize>
    </Topic>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
      <Key>/sym</Key>
      <Expiration>30s</Expiration>
    </Topic>
    <Topic>
      <Name>positions</Name>
      <MessageType>xml</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <Key>/pos/book</Key>
      <Key>/pos/sym</Key>
      <History><Window>1d</Window><Granularity>0s</Granularity></History>
    </Topic>
  </SOW>
</AMPSConfig>
"""


def main(directory: Path) -> None:
    with SowStore.from_config(AMPS_CONFIG, base_dir=directory) as store:
        for topic in store.topics():
            config = topic.config
            print(
                f"{topic.name:10} {topic.message_type:5} keys={list(config.keys)}"
                f" durability={config.durability}"
            )
        orders = store.topic("orders")
        orders.publish('{"orderId": 1, "region": "EU", "price": 120}')
        orders.publish('{"orderId": 2, "region": "US", "price": 95}')
        print("plan for /region = 'EU':", orders.explain("/region = 'EU'").describe())
        positions = store.topic("positions")
        positions.publish("<pos><book>B1</book><sym>IBM</sym><qty>100</qty></pos>")
        print("positions:", [rec.data.decode() for rec in positions.sow("/pos/qty > 50")])
    print("files:", sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*.sow")))

    broken = AMPS_CONFIG.replace("<Expiration>30s</Expiration>", "<Expiration>30x</Expiration>")
    try:
        SowStore.from_config(broken)
    except ConfigError as exc:
        print(f"a bad unit is refused at {exc.where}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(Path(tmp))
