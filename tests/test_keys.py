"""SOW keys (spec §6.2-§6.5): content keys, publisher keys, the chaining generator."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sowlib.errors import ConfigError, InvalidSowKeyError, MissingKeyFieldError
from sowlib.keys import (
    ChainingKeyGenerator,
    ContentKeyGenerator,
    describe_generator,
    generator_name_conflict,
    load_key_generator,
    stored_key_generator,
    validate_user_key,
)


def gen(fields: list[str], domain: str = "orders") -> ContentKeyGenerator:
    return ContentKeyGenerator(fields, domain=domain, topic="orders")


def test_same_values_same_key_and_key_is_unsigned_decimal() -> None:
    key = gen(["/id"])({"id": 7, "other": 1})
    assert key == gen(["/id"])({"id": 7, "other": 2})
    assert key.isdigit()
    assert 0 <= int(key) < 2**64


def test_numeric_spellings_share_a_key() -> None:
    g = gen(["/id"])
    assert g({"id": 5}) == g({"id": "5"}) == g({"id": 5.0})
    assert g({"id": "05"}) != g({"id": 5})


def test_domains_separate_identical_values() -> None:
    assert gen(["/id"], "a")({"id": 1}) != gen(["/id"], "b")({"id": 1})


def test_composite_key_distinguishes_every_combination() -> None:
    g = gen(["/a", "/b"])
    keys = {g({"a": a, "b": b}) for a in ("x", "xy") for b in ("y", "z")}
    assert len(keys) == 4
    assert g({"a": "ab", "b": "c"}) != g({"a": "a", "b": "bc"})


def test_nested_key_field() -> None:
    g = gen(["/order/id"])
    assert g({"order": {"id": 1}}) == g({"order": {"id": 1, "x": 2}})


@pytest.mark.parametrize("doc", [{}, {"id": None}, {"id": ""}, {"id": []}, {"other": 1}])
def test_missing_or_null_key_field_is_rejected(doc: dict[str, object]) -> None:
    with pytest.raises(MissingKeyFieldError) as info:
        gen(["/id"])(doc)
    assert info.value.field == "/id"


def test_key_for_values_matches_generated_key() -> None:
    g = gen(["/a", "/b"])
    assert g.key_for_values([1, "x"]) == g({"a": 1, "b": "x"})
    assert g.key_for_values([None, "x"]) is None


@given(st.lists(st.one_of(st.integers(), st.text(min_size=1)), min_size=2, max_size=2))
def test_distinct_values_give_distinct_keys(values: list[object]) -> None:
    g = gen(["/a"])
    a, b = values
    from sowlib.document import canonical_text

    if canonical_text(a) != canonical_text(b):
        assert g({"a": a}) != g({"a": b})


@pytest.mark.parametrize("key", ["abc", "AZaz09+/=", "x" * 100])
def test_base64_user_keys_are_accepted(key: str) -> None:
    assert validate_user_key(key) == key


@pytest.mark.parametrize("key", ["", "a b", "é", "a,b", "a-b", 5, None])
def test_other_user_keys_are_rejected(key: object) -> None:
    with pytest.raises(InvalidSowKeyError):
        validate_user_key(key)


def test_chaining_generator_follows_the_spec_example() -> None:
    g = ChainingKeyGenerator("/Doc", ["/Parent"], domain="docs", topic="docs")
    keys = {
        g({"Doc": 10, "Status": "open"}),
        g({"Doc": 11, "Parent": 10, "Item": "bolts"}),
        g({"Doc": 12, "Parent": 11, "Item": "nuts"}),
        g({"Doc": 13, "Parent": 10, "Status": "shipped"}),
    }
    assert len(keys) == 1
    assert g({"Doc": 99}) not in keys


def test_chaining_generator_rejects_a_message_joining_two_chains() -> None:
    g = ChainingKeyGenerator("/Doc", ["/Parent"], domain="d", topic="d")
    g({"Doc": 1})
    g({"Doc": 2})
    g({"Doc": 3, "Parent": 1})
    with pytest.raises(InvalidSowKeyError):
        g({"Doc": 3, "Parent": 2})


def test_chaining_generator_persists_chains(tmp_path: Path) -> None:
    file = str(tmp_path / "chains.txt")
    g = ChainingKeyGenerator("/Doc", ["/Parent"], domain="d", topic="d", file_name=file)
    head = g({"Doc": 1})
    g({"Doc": 2, "Parent": 1})
    again = ChainingKeyGenerator("/Doc", ["/Parent"], domain="d", topic="d", file_name=file)
    assert again({"Doc": 2}) == head


@pytest.mark.parametrize("plant", ["fifo", "symlink"])
def test_chaining_generator_refuses_a_chain_file_that_is_not_a_regular_file(
    tmp_path: Path, plant: str
) -> None:
    file = tmp_path / "chains.txt"
    if plant == "fifo":
        os.mkfifo(file)
    else:
        (tmp_path / "real.txt").write_text("1\t1\n")
        file.symlink_to(tmp_path / "real.txt")
    with pytest.raises(ConfigError, match="chain file"):
        ChainingKeyGenerator("/Doc", ["/Parent"], domain="d", topic="d", file_name=str(file))


def test_chaining_generator_that_cannot_write_its_chain_file_raises_and_forgets(
    tmp_path: Path,
) -> None:
    file = tmp_path / "chains.txt"
    g = ChainingKeyGenerator("/Doc", ["/Parent"], domain="d", topic="d", file_name=str(file))
    g({"Doc": 1})
    file.unlink()
    file.mkdir()
    with pytest.raises(ConfigError, match="chain file"):
        g({"Doc": 2, "Parent": 1})
    file.rmdir()
    assert g({"Doc": 2}) != g({"Doc": 1})


def test_generators_round_trip_through_their_description() -> None:
    g = ChainingKeyGenerator("/Doc", ["/Parent"], domain="d", topic="d")
    rebuilt = load_key_generator(describe_generator(g), domain="d", topic="d")
    assert isinstance(rebuilt, ChainingKeyGenerator)
    assert rebuilt({"Doc": 4}) == g({"Doc": 4})
    assert describe_generator(lambda doc: "x") is None


@pytest.mark.parametrize(
    "spec",
    [{"x": 1}, {"module": "no_colon"}, {"module": "nonexistent.module:f"}, {"module": "chaining"}],
)
def test_bad_generator_descriptions_raise_config_error(spec: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        load_key_generator(spec, domain="d", topic="d")


@pytest.mark.parametrize(
    "spec",
    [
        {"module": "subprocess:Popen", "options": {"args": "true", "shell": True}},
        {"module": "os:system", "options": {}},
        {"module": "chaining", "options": {"primary": "/Doc", "file_name": "/tmp/x"}},
        {"module": "chaining", "options": {"primary": 5}},
        {"module": "chaining", "options": "primary"},
        {"module": None},
        ["chaining"],
    ],
)
def test_issue16_stored_descriptions_never_build_code_or_files(spec: object) -> None:
    assert stored_key_generator(spec, domain="d", topic="d") is None


def test_issue16_stored_chaining_description_rebuilds_from_plain_data() -> None:
    g = ChainingKeyGenerator("/Doc", ["/Parent"], domain="d", topic="d", validation=True)
    spec = describe_generator(g)
    assert spec is not None
    rebuilt = stored_key_generator(spec, domain="d", topic="d")
    assert isinstance(rebuilt, ChainingKeyGenerator)
    assert rebuilt.validation
    assert rebuilt.file_name is None
    assert rebuilt({"Doc": 4}) == g({"Doc": 4})


def test_issue16_generator_name_conflict() -> None:
    named = describe_generator(validate_user_key)
    assert named is not None
    assert generator_name_conflict(named, validate_user_key) is None
    assert generator_name_conflict(named, describe_generator) is not None
    assert generator_name_conflict(named, lambda doc: "k") is None  # unnamed: not checked
    chaining = {"module": "chaining", "options": {"primary": "/Doc", "secondary": []}}
    same = ChainingKeyGenerator("/Doc", domain="d", topic="d")
    assert generator_name_conflict(chaining, same) is None
    other = ChainingKeyGenerator("/X", domain="d", topic="d")
    assert generator_name_conflict(chaining, other) is not None
