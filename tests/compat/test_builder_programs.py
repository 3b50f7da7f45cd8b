"""Programs using the client's message helpers: FIX and NVFIX builders and shredders,
composite messages built and parsed part by part over a composite message type declared
in the server configuration (``<MessageTypes>``), filtered on a part's fields.

Only the import line differs from a program written for the real client.
"""

from __future__ import annotations

import array
import json

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from sowlib.codecs import available_codecs
from sowlib.codecs.registry import registrations_undone
from sowlib.errors import ConfigError

SERVER = """\
<AMPSConfig>
  <Name>helpers</Name>
  <MessageTypes>
    <MessageType>
      <Name>composite-json-binary</Name>
      <Module>composite-local</Module>
      <MessageType>json</MessageType>
      <MessageType>binary</MessageType>
    </MessageType>
    <MessageType>
      <Name>composite-global-json</Name>
      <Module>composite-global</Module>
      <MessageType>json</MessageType>
      <MessageType>json</MessageType>
    </MessageType>
    <MessageType>
      <Name>pipe-fix</Name>
      <Module>fix</Module>
      <FieldSeparator>124</FieldSeparator>
    </MessageType>
  </MessageTypes>
  <SOW>
    <Topic>
      <Name>orders</Name><MessageType>fix</MessageType>
      <Key>/11</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>orders</Name><MessageType>nvfix</MessageType>
      <Key>/ClOrdID</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>images</Name><MessageType>composite-json-binary</MessageType>
      <Key>/0/id</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>
</AMPSConfig>
"""
HOST = "tcp://127.0.0.1:9037/amps"


@pytest.fixture
def server(tmp_path):
    config = tmp_path / "amps.xml"
    config.write_text(SERVER)
    with registrations_undone():
        store = SowStore.from_config(config)
        AMPS.reset()
        AMPS.attach(store, HOST)
        yield store
        AMPS.reset()
        store.close()


def connected(message_type, name=None):
    client = AMPS.HAClient(name or f"{message_type}-client")
    chooser = AMPS.DefaultServerChooser()
    chooser.add(f"{HOST}/{message_type}")
    client.set_server_chooser(chooser)
    client.connect_and_logon()
    return client


def test_fix_builder_publish_and_shredder_on_receipt(server):
    subscriber = connected("fix", "fix-reader")
    received = []
    shredder = AMPS.FIXShredder()
    subscriber.subscribe(lambda m: received.append(shredder.to_map(m)), "orders", "/38 > 100")
    publisher = connected("fix", "fix-writer")
    builder = AMPS.FIXBuilder()
    for order_id, qty in (("A1", 50), ("A2", 500)):
        builder.reset()
        builder.append(11, order_id)
        builder.append(55, "IBM")
        builder.append(38, qty)
        publisher.publish("orders", builder.get_string())
    assert received == [{11: "A2", 55: "IBM", 38: "500"}]
    stored = [shredder.to_map(m.get_data()) for m in publisher.sow("orders") if m.get_data()]
    assert sorted(f[11] for f in stored) == ["A1", "A2"]


def test_nvfix_builder_and_shredder(server):
    client = connected("nvfix")
    builder = AMPS.NVFIXBuilder()
    builder.append("ClOrdID", "N1")
    builder.append("Symbol", "MSFT")
    client.publish("orders", builder.get_string())
    (record,) = [m for m in client.sow("orders", "/Symbol = 'MSFT'") if m.get_command() == "sow"]
    assert AMPS.NVFIXShredder().to_map(record) == {"ClOrdID": "N1", "Symbol": "MSFT"}
    with pytest.raises(AMPS.UsageException):
        AMPS.FIXBuilder().append("Symbol", "IBM")  # FIX tags are numbers
    with pytest.raises(AMPS.UsageException):
        builder.append("Note", "a\x01b")


def test_composite_publisher_and_subscriber(server):
    subscriber = connected("composite-json-binary", "composite-subscriber")
    parser = AMPS.CompositeMessageParser()
    seen = []
    for_messages = subscriber.subscribe("messages", "/0/number % 3 == 0")

    publisher = connected("composite-json-binary", "composite-publisher")
    data = array.array("d", [1.0, 1.0])
    for d in range(2, 10):
        data.append(float(d + data[d - 2]))
    for count in range(1, 10):
        header = json.dumps({"binary_type": "double", "size": len(data), "number": count})
        builder = AMPS.CompositeMessageBuilder()
        builder.append(header)
        builder.append(data.tobytes())
        publisher.publish("messages", builder.get_data())

    for message in for_messages.timeout(20):
        if message is None:
            break
        parts = parser.parse(message)
        values = array.array("d")
        values.frombytes(parser.get_part_raw(1))
        seen.append((parts, json.loads(parser.get_part(0))["number"], list(values)))
    assert [s[1] for s in seen] == [3, 6, 9]
    assert all(parts == 2 and values == list(data) for parts, _, values in seen)


def test_composite_sow_topic_keyed_on_the_first_part(server):
    client = connected("composite-json-binary")
    for ident, blob in (("img-1", b"\x89PNG"), ("img-2", b"GIF8"), ("img-1", b"\x89PNG2")):
        builder = AMPS.CompositeMessageBuilder().append(json.dumps({"id": ident})).append(blob)
        client.publish("images", builder.get_data())
    parser = AMPS.CompositeMessageParser()
    stored = {}
    for message in client.sow("images", "/0/id LIKE 'img'"):
        if message.get_command() == "sow":
            parser.parse(message)
            stored[json.loads(parser.get_part(0))["id"]] = parser.get_part_raw(1)
    assert stored == {"img-1": b"\x89PNG2", "img-2": b"GIF8"}
    with pytest.raises(AMPS.AMPSException):
        client.delta_publish("images", AMPS.CompositeMessageBuilder().append("{}").get_data())
    with pytest.raises(AMPS.PublishException):
        client.publish("images", b"\x00\x00\x00\x09short")  # a part runs past the end


def test_composite_global_merges_the_parts_fields(server):
    client = connected("composite-global-json")
    got = []
    client.subscribe(lambda m: got.append(m), "notes", "/author = 'ann' AND /page = 2")
    builder = AMPS.CompositeMessageBuilder()
    builder.append('{"author": "ann"}').append('{"page": 2}')
    client.publish("notes", builder.get_data())
    assert len(got) == 1


def test_a_field_separator_from_the_configuration(server):
    client = connected("pipe-fix")
    got = []
    client.subscribe(lambda m: got.append(AMPS.FIXShredder("|").to_map(m)), "fills", "/38 = 5")
    builder = AMPS.FIXBuilder("|")
    builder.append(38, 5).append(55, "IBM")
    client.publish("fills", builder.get_string())
    assert got == [{38: "5", 55: "IBM"}]


def test_parser_refuses_what_is_not_composite():
    parser = AMPS.CompositeMessageParser()
    with pytest.raises(AMPS.UsageException, match="composite"):
        parser.parse(b"\x00\x00")
    assert parser.parse(b"") == 0
    with pytest.raises(AMPS.UsageException, match="part 0"):
        parser.get_part(0)


@pytest.mark.parametrize(
    ("definition", "complaint"),
    [
        ("<Name>c</Name><Module>composite-local</Module>", "one per part"),
        ("<Name>c</Name><Module>composite-local</Module><MessageType>nope</MessageType>", "nope"),
        ("<Name>c</Name><Module>json</Module><FieldSeparator>1</FieldSeparator>", "option"),
        ("<Name>c</Name><Module>fix</Module><FieldSeparator>61</FieldSeparator>", "ASCII"),
        ("<Name>json</Name><Module>xml</Module>", "already"),
        ("<Module>json</Module>", "Name"),
        ("<Name>c</Name><Module>json</Module><Bogus/>", "unknown"),
    ],
)
def test_bad_message_type_definitions(tmp_path, definition, complaint):
    text = (
        f"<AMPSConfig><MessageTypes><MessageType>{definition}</MessageType></MessageTypes>"
        "<SOW/></AMPSConfig>"
    )
    with registrations_undone(), pytest.raises(ConfigError, match=complaint):
        SowStore.from_config(text, base_dir=tmp_path)
    assert "c" not in available_codecs()


def test_a_declared_module_sowlib_lacks_is_refused_where_it_is_used(tmp_path):
    declared = (
        "<AMPSConfig><MessageTypes><MessageType><Name>proto-orders</Name>"
        "<Module>protobuf</Module></MessageType></MessageTypes>{sow}</AMPSConfig>"
    )
    with registrations_undone():
        SowStore.from_config(declared.format(sow="<SOW/>"), base_dir=tmp_path).close()
        topic = (
            "<SOW><Topic><Name>o</Name><MessageType>proto-orders</MessageType>"
            "<Key>/id</Key><Durability>transient</Durability></Topic></SOW>"
        )
        with pytest.raises(ConfigError, match=r"protobuf.*not implemented"):
            SowStore.from_config(declared.format(sow=topic), base_dir=tmp_path)
