"""Topics of one name in several message types, side by side, as in the sample server
configuration the official client samples use (``messages-sow`` in json, xml, nvfix
and fix): the connection URI's message type picks the topic.

Only the import line differs from a program written for the real client.
"""

from __future__ import annotations

import json

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore

SERVER = """\
<AMPSConfig>
  <Name>sample-types</Name>
  <SOW>
    <Topic>
      <Name>messages-sow</Name><MessageType>json</MessageType>
      <Key>/messageNumber</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>messages-sow</Name><MessageType>xml</MessageType>
      <Key>/Data/messageNumber</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>messages-sow</Name><MessageType>nvfix</MessageType>
      <Key>/messageNumber</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>messages-sow</Name><MessageType>fix</MessageType>
      <Key>/1</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>json-only</Name><MessageType>json</MessageType>
      <Key>/messageNumber</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>
</AMPSConfig>
"""
HOST = "tcp://127.0.0.1:9027/amps"


@pytest.fixture
def server(tmp_path):
    config = tmp_path / "sample.xml"
    config.write_text(SERVER)
    store = SowStore.from_config(config)
    AMPS.reset()
    AMPS.attach(store, HOST + "/json")
    yield store
    AMPS.reset()
    store.close()


def connected(message_type, name=None):
    client = AMPS.Client(name or f"{message_type}-client")
    client.connect(f"{HOST}/{message_type}" if message_type else HOST)
    client.logon()
    return client


def records(client, topic="messages-sow", filter=None):
    return [m.get_data() for m in client.sow(topic, filter) if m.get_command() == "sow"]


def test_each_message_type_has_its_own_messages_sow(server):
    connected("json").publish("messages-sow", '{"messageNumber": 1, "message": "json"}')
    xml = "<Data><messageNumber>1</messageNumber><message>xml</message></Data>"
    connected("xml").publish("messages-sow", xml)
    connected("nvfix").publish("messages-sow", "messageNumber=1\x01message=nvfix\x01")
    connected("fix").publish("messages-sow", "1=1\x0158=fix\x01")

    assert [json.loads(d) for d in records(connected("json"))] == [
        {"messageNumber": 1, "message": "json"}
    ]
    assert records(connected("xml")) == [xml]
    assert records(connected("nvfix"), filter="/message = 'nvfix'") == [
        "messageNumber=1\x01message=nvfix\x01"
    ]
    assert records(connected("fix"), filter="/1 = 1") == ["1=1\x0158=fix\x01"]
    assert len(server.topic("messages-sow", "json")) == 1
    assert len(server.topic("messages-sow", "nvfix")) == 1


def test_a_fix_subscriber_does_not_receive_json_publishes(server):
    fix_seen, json_seen = [], []
    connected("fix", "fix-sub").subscribe(lambda m: fix_seen.append(m.get_data()), "messages-sow")
    connected("json", "json-sub").subscribe(
        lambda m: json_seen.append(m.get_data()), "messages-sow"
    )
    connected("json").publish("messages-sow", '{"messageNumber": 2}')
    connected("fix").publish("messages-sow", "1=2\x0158=hello\x01")
    assert fix_seen == ["1=2\x0158=hello\x01"]
    assert json_seen == ['{"messageNumber": 2}']


def test_pub_sub_topics_are_namespaced_by_type_too(server):
    got = {"json": [], "nvfix": []}
    for mtype, seen in got.items():
        connected(mtype, f"{mtype}-listener").subscribe(
            lambda m, seen=seen: seen.append(m.get_data()), "messages", "/n > 1"
        )
    connected("json").publish("messages", '{"n": 2}')
    connected("nvfix").publish("messages", "n=3\x01")
    connected("nvfix").publish("messages", "n=1\x01")
    assert got == {"json": ['{"n": 2}'], "nvfix": ["n=3\x01"]}


def test_nvfix_publish_to_a_name_whose_sow_is_json_is_pub_sub_of_nvfix(server):
    json_client = connected("json")
    json_client.publish("json-only", '{"messageNumber": 1}')
    nvfix = connected("nvfix")
    seen, fix_seen = [], []
    nvfix.subscribe(lambda m: seen.append(m.get_data()), "json-only")
    connected("fix").subscribe(lambda m: fix_seen.append(m.get_data()), "json-only")
    nvfix.publish("json-only", "messageNumber=5\x01")  # no "malformed json message"
    json_client.publish("json-only", '{"messageNumber": 2}')
    assert seen == ["messageNumber=5\x01"]
    assert fix_seen == []
    with pytest.raises(AMPS.InvalidTopicException):
        nvfix.sow("json-only")
    stored = [json.loads(d) for d in records(json_client, "json-only")]
    assert sorted(d["messageNumber"] for d in stored) == [1, 2]


def test_a_uri_without_a_type_lets_the_store_choose(server):
    connected("json").publish("json-only", '{"messageNumber": 1}')
    untyped = connected(None, "untyped")
    assert [json.loads(d) for d in records(untyped, "json-only")] == [{"messageNumber": 1}]
