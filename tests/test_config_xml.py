"""AMPS XML configuration: samples load, bad input names the element, to_xml round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from sowlib.config import TopicConfig, expand_file_name, load_config
from sowlib.errors import ConfigError

SAMPLE = """\
<AMPSConfig>
  <Name>engine</Name>
  <SOW>
    <Topic>
      <Name>ORDERS</Name>
      <MessageType>json</MessageType>
      <FileName>sow/%n.sow</FileName>
      <Key>/orderId</Key>
      <Key>/venue</Key>
      <Expiration>30s</Expiration>
      <SlabSize>2MB</SlabSize>
      <HashIndex><Key>/region</Key><Key>/desk</Key></HashIndex>
      <Index>/price</Index>
      <History><Window>1d</Window><Granularity>5m</Granularity></History>
    </Topic>
    <TopicDefinition>
      <Topic>quotes</Topic>
      <MessageType>FIX</MessageType>
      <Durability>transient</Durability>
      <KeyDomain>shared</KeyDomain>
      <Key>/55</Key>
      <Expiration>enabled</Expiration>
    </TopicDefinition>
  </SOW>
</AMPSConfig>
"""


def topic(body: str) -> str:
    return f"<SOW><Topic>{body}</Topic></SOW>"


TRANSIENT = "<Name>t</Name><MessageType>json</MessageType><Durability>transient</Durability>"


def test_whole_amps_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "amps.xml"
    path.write_text(SAMPLE)
    orders, quotes = load_config(path, base_dir=tmp_path / "var")
    assert orders.name == "ORDERS"
    assert orders.keys == ("/orderId", "/venue")
    assert orders.file_name == str(tmp_path / "var" / "sow" / "%n.sow")
    assert expand_file_name(orders.file_name, orders.name, orders.message_type) == str(
        tmp_path / "var" / "sow" / "ORDERS.json.sow"
    )
    assert orders.expiration_enabled
    assert orders.default_ttl == 30.0
    assert orders.slab_size == 2 * 1024 * 1024
    assert orders.hash_indexes == (("/region", "/desk"),)
    assert orders.indexes == ("/price",)
    assert orders.history_window == 86400.0
    assert orders.history_granularity == 300.0
    assert quotes.name == "quotes"
    assert quotes.message_type == "fix"
    assert quotes.durability == "transient"
    assert quotes.key_domain == "shared"
    assert quotes.expiration_enabled
    assert quotes.default_ttl is None


def test_relative_file_name_defaults_to_config_directory(tmp_path: Path) -> None:
    path = tmp_path / "amps.xml"
    path.write_text(SAMPLE)
    orders = load_config(str(path))[0]
    assert orders.file_name == str(tmp_path / "sow" / "%n.sow")


def test_topic_metadata_root_and_bytes_source() -> None:
    xml = f"<TopicMetaData><TopicDefinition>{TRANSIENT}</TopicDefinition></TopicMetaData>"
    assert [c.name for c in load_config(xml.encode())] == ["t"]


def test_config_without_sow_section_has_no_topics() -> None:
    assert load_config("<AMPSConfig><Name>x</Name></AMPSConfig>") == []


def test_file_name_expands_strftime_and_percent() -> None:
    xml = topic("<Name>t</Name><MessageType>json</MessageType><FileName>%Y/%n-%%.sow</FileName>")
    template = load_config(xml, base_dir="/data")[0].file_name
    assert template == "/data/%Y/%n-%%.sow"
    got = expand_file_name(template, "t", "json")
    year = got.split("/")[2]
    assert year.isdigit()
    assert len(year) == 4
    assert got.endswith("/t.json-%.sow")


def test_environment_expansion_with_predefined_variables(tmp_path: Path) -> None:
    path = tmp_path / "amps.xml"
    path.write_text(
        topic(
            "<Name>${PREFIX}_orders</Name><MessageType>json</MessageType>"
            "<FileName>${AMPS_CONFIG_DIRECTORY}/%n.sow</FileName>"
        )
    )
    cfg = load_config(path, env={"PREFIX": "eu"})[0]
    assert cfg.name == "eu_orders"
    assert cfg.file_name == str(tmp_path.resolve() / "%n.sow")


def test_chaining_key_generator_recorded_in_options() -> None:
    xml = topic(
        TRANSIENT + "<KeyGenerator><Module>libamps_chaining_key_generator.so</Module>"
        "<Options><Key>/Doc</Key><Key>/Parent</Key><Validation>true</Validation></Options>"
        "</KeyGenerator>"
    )
    cfg = load_config(xml)[0]
    assert cfg.options["key_generator"] == {
        "module": "chaining",
        "options": {"keys": ["/Doc", "/Parent"], "validation": True},
    }


def test_custom_key_generator_module() -> None:
    xml = topic(
        TRANSIENT + "<KeyGenerator><Module>myapp.keys:make</Module>"
        "<Options><Seed>7</Seed><FieldName>/a</FieldName></Options></KeyGenerator>"
    )
    assert load_config(xml)[0].options["key_generator"] == {
        "module": "myapp.keys:make",
        "options": {"seed": "7", "field_name": "/a"},
    }


def test_legacy_record_size_times_increment() -> None:
    xml = topic(TRANSIENT + "<RecordSize>1kb</RecordSize><IncrementSize>2k</IncrementSize>")
    assert load_config(xml)[0].slab_size == 1024 * 2000


@pytest.mark.parametrize(
    ("xml", "where"),
    [
        (topic(TRANSIENT + "<Expiration>soon</Expiration>"), "SOW/Topic[1]/Expiration"),
        (
            f"<SOW><Topic>{TRANSIENT}</Topic><Topic>{TRANSIENT.replace('>t<', '>u<')}"
            "<SlabSize>12 parsecs</SlabSize></Topic></SOW>",
            "SOW/Topic[2]/SlabSize",
        ),
        (topic(TRANSIENT + "<Colour>red</Colour>"), "SOW/Topic[1]/Colour"),
        (topic(TRANSIENT + "<Key>/a[</Key>"), "SOW/Topic[1]/Key[1]"),
        (topic(TRANSIENT + "<Key>/a</Key><Key></Key>"), "SOW/Topic[1]/Key[2]"),
        (
            topic("<Name>t</Name><MessageType>json</MessageType><Durability>forever</Durability>"),
            "SOW/Topic[1]/Durability",
        ),
        (topic("<MessageType>json</MessageType>"), "SOW/Topic[1]/Name"),
        (topic("<Name>t</Name>"), "SOW/Topic[1]/MessageType"),
        (topic("<Name>t</Name><MessageType>json</MessageType>"), "SOW/Topic[1]/FileName"),
        (topic(TRANSIENT + "<HashIndex></HashIndex>"), "SOW/Topic[1]/HashIndex[1]"),
        (
            topic(TRANSIENT + "<HashIndex><Field>/a</Field></HashIndex>"),
            "SOW/Topic[1]/HashIndex[1]/Field",
        ),
        (
            topic(TRANSIENT + "<History><Granularity>1s</Granularity></History>"),
            "SOW/Topic[1]/History/Window",
        ),
        (
            topic(TRANSIENT + "<History><Window>1x</Window></History>"),
            "SOW/Topic[1]/History/Window",
        ),
        (
            topic(TRANSIENT + "<KeyGenerator><Options/></KeyGenerator>"),
            "SOW/Topic[1]/KeyGenerator/Module",
        ),
        (
            topic(TRANSIENT + "<KeyGenerator><Module>os.system</Module></KeyGenerator>"),
            "SOW/Topic[1]/KeyGenerator/Module",
        ),
        (
            topic(TRANSIENT + "<KeyGenerator><Module>chaining</Module></KeyGenerator>"),
            "SOW/Topic[1]/KeyGenerator/Options",
        ),
        (topic(TRANSIENT + "<Pattern>(</Pattern>"), "SOW/Topic[1]/Pattern"),
        (topic(TRANSIENT + "<Preprocessing/>"), "SOW/Topic[1]/Preprocessing"),
        (
            topic(TRANSIENT + "<KeyDomain>a</KeyDomain><KeyDomain>b</KeyDomain>"),
            "SOW/Topic[1]/KeyDomain[2]",
        ),
        (topic(TRANSIENT + "<FileName>${NOPE_NOT_SET}</FileName>"), "SOW/Topic[1]/FileName"),
        ("<SOW><Topics/></SOW>", "SOW/Topics"),
        (f"<SOW><Topic>{TRANSIENT}</Topic><Topic>{TRANSIENT}</Topic></SOW>", "SOW/Topic[2]"),
    ],
)
def test_bad_config_names_the_element(xml: str, where: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(xml, env={})
    assert info.value.where == where


def test_doctype_and_entities_rejected() -> None:
    evil = (
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        f"<SOW><Topic>{TRANSIENT}<KeyDomain>&e;</KeyDomain></Topic></SOW>"
    )
    with pytest.raises(ConfigError) as info:
        load_config(evil)
    assert info.value.where == "<document>"


def test_malformed_xml_reports_line() -> None:
    with pytest.raises(ConfigError) as info:
        load_config("<SOW>\n<Topic>\n</SOW>")
    assert info.value.where.startswith("line ")


def test_missing_file_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_config(tmp_path / "absent.xml")


@pytest.mark.parametrize(
    "config",
    [
        TopicConfig.make("t", durability="transient"),
        TopicConfig.make(
            "orders & <co>",
            keys=["/a", "/b/c"],
            key_domain="dom",
            expiration="90s",
            slab_size="64kb",
            hash_indexes=[["/x"], ["/y", "/z"]],
            indexes=["/p"],
            history={"window": "2h", "granularity": "1.5s"},
            file_name="/data/100%%/orders.sow",
        ),
        TopicConfig.make(
            "e", message_type="xml", durability="sync", expiration="enabled", file_name="/d/e.sow"
        ),
        TopicConfig.make(
            "c",
            durability="transient",
            options={
                "key_generator": {
                    "module": "chaining",
                    "options": {"primary": "/Doc", "secondary": ["/P"], "validation": False},
                },
                "pattern": "^c/.*",
            },
        ),
    ],
)
def test_to_xml_round_trips(config: TopicConfig) -> None:
    (back,) = load_config(config.to_xml())
    assert back == config
    assert dict(back.options) == dict(config.options)
