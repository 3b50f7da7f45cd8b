"""Topic configuration: :class:`TopicConfig`, validated once, stored in each log header.

Imports only ``errors``, ``paths`` and ``units``; it writes the AMPS XML of a topic
(:meth:`TopicConfig.to_xml`), and :mod:`sowlib.config.amps_xml` reads it back.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from xml.sax.saxutils import escape

import attrs

from sowlib.errors import ConfigError, FieldPathError
from sowlib.paths import parse_path
from sowlib.units import parse_duration, parse_size

__all__ = [
    "DURABILITIES",
    "MAX_COMPONENT_BYTES",
    "MAX_PATH_BYTES",
    "TopicConfig",
    "check_file_name",
    "expand_file_name",
    "CHAINING_OPTIONS",
    "topic_to_xml",
]

DURABILITIES = ("persistent", "transient", "sync")
_DEFAULT_SLAB = 1024 * 1024
#: Longest store path or ``FileName`` accepted, in bytes of its file-system encoding.
MAX_PATH_BYTES = 4096
#: Longest single path component (a directory or file name), in bytes.
MAX_COMPONENT_BYTES = 255
_TOKEN = re.compile(r"%(.?)", re.DOTALL)
#: strftime codes a ``FileName`` may use (the portable C set); ``%n`` and ``%%`` are AMPS's.
_STRFTIME = frozenset("aAbBcdDeFgGHIjmMpSTuUVwWxXyYzZ")


def check_file_name(text: object, where: str) -> str:
    """Check that ``text`` can name a file: no NUL, encodable, within the length limits.

    Limits: :data:`MAX_PATH_BYTES` in all, :data:`MAX_COMPONENT_BYTES` per component.

    Raises:
        ConfigError: naming ``where`` and what is wrong.
    """
    if not isinstance(text, str):
        raise ConfigError(where, f"{text!r} is not a path string")
    if "\x00" in text:
        raise ConfigError(where, f"{_short(text)} contains a NUL character")
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError as exc:
        raise ConfigError(
            where, f"{_short(text)} has a character no file name can hold at {exc.start}"
        ) from None
    if len(raw) > MAX_PATH_BYTES:
        raise ConfigError(where, f"is {len(raw)} bytes long; the limit is {MAX_PATH_BYTES}")
    longest = max(len(part) for part in raw.split(os.fsencode(os.sep)))
    if longest > MAX_COMPONENT_BYTES:
        raise ConfigError(
            where, f"has a {longest}-byte path component; the limit is {MAX_COMPONENT_BYTES}"
        )
    return text


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def expand_file_name(
    template: str, name: str, message_type: str, when: time.struct_time | None = None
) -> str:
    """Expand an AMPS ``FileName`` template (spec §14.2), left to right, in one pass.

    ``%n`` becomes ``name.message_type``, ``%%`` a literal ``%`` (so ``%%n`` is the
    text ``%n``) and the portable strftime codes (``%Y``, ``%m``, ``%d``, ...) the
    time ``when`` (default: now, UTC). O(len(template)).

    Example:
        >>> expand_file_name("sow/%n-%%n.sow", "ORDERS", "json")
        'sow/ORDERS.json-%n.sow'

    Raises:
        ConfigError: an unknown token or a lone ``%`` at the end.
    """
    stamp = time.gmtime() if when is None else when

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code == "n":
            return f"{name}.{message_type}"
        if code == "%":
            return "%"
        if code in _STRFTIME and code:
            return time.strftime("%" + code, stamp)
        found = f"%{code}" if code else "a lone '%' at the end"
        raise ConfigError(
            "FileName",
            f"{_short(template)}: unknown token {found} at {match.start()}"
            " (use %n, %% or a strftime code such as %Y)",
        )

    return _TOKEN.sub(one, template)


def _check_path(text: object, where: str) -> str:
    if not isinstance(text, str):
        raise ConfigError(where, f"{text!r} is not a field path string")
    try:
        return parse_path(text).to_text()
    except FieldPathError as exc:
        raise ConfigError(where, str(exc)) from None


def _paths(values: Iterable[object] | str | None, where: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    return tuple(_check_path(v, f"{where}[{i}]") for i, v in enumerate(values))


def _hash_indexes(values: object) -> tuple[tuple[str, ...], ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        raise ConfigError("hash_indexes", "expected a list of field lists, e.g. [['/a']]")
    if not isinstance(values, Iterable):
        raise ConfigError("hash_indexes", f"{values!r} is not a list of field lists")
    out = []
    for i, fields in enumerate(values):
        got = _paths(fields, f"hash_indexes[{i}]")
        if not got:
            raise ConfigError(f"hash_indexes[{i}]", "a hash index needs at least one field")
        out.append(got)
    return tuple(out)


@attrs.frozen
class TopicConfig:
    """Everything that defines a SOW topic (spec §14.2), validated.

    Build one with :meth:`make`, which accepts the same keyword arguments as
    ``SowStore.create_topic`` (AMPS unit strings included).
    """

    name: str
    message_type: str = "json"
    keys: tuple[str, ...] = ()
    key_domain: str | None = None
    key_generator: object = attrs.field(default=None, eq=False)
    durability: str = "persistent"
    #: None (disabled), or True with an optional default lifetime in seconds.
    expiration_enabled: bool = False
    default_ttl: float | None = None
    slab_size: int = _DEFAULT_SLAB
    hash_indexes: tuple[tuple[str, ...], ...] = ()
    indexes: tuple[str, ...] = ()
    history_window: float | None = None
    history_granularity: float = 0.0
    file_name: str | None = None
    #: Compact automatically when garbage exceeds this fraction of the file (None: never).
    auto_compact: float | None = 0.3
    options: Mapping[str, Any] = attrs.field(factory=dict, eq=False)

    @property
    def domain(self) -> str:
        """The key domain: ``key_domain`` or the topic name."""
        return self.key_domain if self.key_domain is not None else self.name

    @property
    def history(self) -> bool:
        """Whether earlier versions are kept for historical queries."""
        return self.history_window is not None

    @classmethod
    def make(
        cls,
        name: str,
        *,
        message_type: str = "json",
        keys: Iterable[str] | str | None = None,
        key_domain: str | None = None,
        key_generator: object = None,
        durability: str = "persistent",
        expiration: str | float | None = None,
        slab_size: str | int = _DEFAULT_SLAB,
        hash_indexes: Iterable[Iterable[str]] | None = None,
        indexes: Iterable[str] | str | None = None,
        history: str | float | Mapping[str, Any] | None = None,
        file_name: str | None = None,
        auto_compact: float | None = 0.3,
        options: Mapping[str, Any] | None = None,
    ) -> TopicConfig:
        """Validate keyword arguments (AMPS units allowed) into a config.

        Raises:
            ConfigError: naming the bad argument.
        """
        _check_name(name)
        if file_name is not None:
            check_file_name(file_name, "file_name")
            expand_file_name(file_name, name, str(message_type))
        if not isinstance(message_type, str) or not message_type:
            raise ConfigError("message_type", f"{message_type!r} is not a message type")
        if durability not in DURABILITIES:
            raise ConfigError(
                "durability", f"{durability!r} is not one of {', '.join(DURABILITIES)}"
            )
        if key_domain is not None and not isinstance(key_domain, str):
            raise ConfigError("key_domain", f"{key_domain!r} is not text")
        enabled, ttl = _expiration(expiration)
        window, granularity = _history(history)
        if auto_compact is not None and not (
            isinstance(auto_compact, int | float) and 0 < auto_compact < 1
        ):
            raise ConfigError("auto_compact", "expected a garbage ratio between 0 and 1, or None")
        return cls(
            name=name,
            message_type=message_type.lower(),
            keys=_paths(keys, "keys"),
            key_domain=key_domain,
            key_generator=key_generator,
            durability=durability,
            expiration_enabled=enabled,
            default_ttl=ttl,
            slab_size=_slab(slab_size),
            hash_indexes=_hash_indexes(hash_indexes),
            indexes=_paths(indexes, "indexes"),
            history_window=window,
            history_granularity=granularity,
            file_name=file_name,
            auto_compact=None if window is not None else auto_compact,
            options=dict(options or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the key generator is recorded by name only)."""
        gen = self.key_generator
        gen_name = None
        if gen is not None:
            qualname = getattr(gen, "__qualname__", type(gen).__qualname__)
            gen_name = getattr(gen, "spec", None) or (
                f"{getattr(gen, '__module__', '?')}:{qualname}"
            )
        return {
            "name": self.name,
            "message_type": self.message_type,
            "keys": list(self.keys),
            "key_domain": self.key_domain,
            "key_generator": gen_name,
            "durability": self.durability,
            "expiration_enabled": self.expiration_enabled,
            "default_ttl": self.default_ttl,
            "slab_size": self.slab_size,
            "hash_indexes": [list(h) for h in self.hash_indexes],
            "indexes": list(self.indexes),
            "history_window": self.history_window,
            "history_granularity": self.history_granularity,
            "file_name": self.file_name,
            "auto_compact": self.auto_compact,
            "options": dict(self.options),
        }

    def to_xml(self) -> str:
        """An AMPS ``<SOW><Topic>`` block that ``load_config`` reads back to an equal config.

        The key generator is written from ``options["key_generator"]``;
        ``auto_compact`` has no AMPS element and is not written.

        Example:
            >>> from sowlib.config import load_config
            >>> cfg = TopicConfig.make("t", keys=["/id"], durability="transient")
            >>> load_config(cfg.to_xml()) == [cfg]
            True
        """
        return topic_to_xml(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], key_generator: object = None) -> TopicConfig:
        """Inverse of :meth:`to_dict`; the caller supplies the generator object.

        ``data`` comes from a file, so every field's type is checked: a damaged or
        planted header is a ``ConfigError``, never a config that fails later.

        Raises:
            ConfigError: a missing field or a value of the wrong kind.
        """
        try:
            if not isinstance(data, Mapping):
                raise TypeError(f"expected a mapping, got {type(data).__name__}")
            name, message_type = data["name"], data["message_type"]
            if not isinstance(name, str) or not name:
                raise TypeError(f"name {name!r} is not text")
            if not isinstance(message_type, str) or not message_type:
                raise TypeError(f"message_type {message_type!r} is not text")
            options = data.get("options") or {}
            if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
                raise TypeError("options is not a mapping of names")
            codec = options.get("codec", {})
            if not isinstance(codec, Mapping) or not all(isinstance(k, str) for k in codec):
                raise TypeError("options.codec is not a mapping of option names")
            if data["durability"] not in DURABILITIES:
                raise ValueError(f"durability {data['durability']!r}")
            auto_compact = data.get("auto_compact")
            if auto_compact is not None and not 0 < _number(auto_compact) < 1:
                raise ValueError(f"auto_compact {auto_compact!r}")
            slab_size = data["slab_size"]
            if type(slab_size) is not int or slab_size < 4096:
                raise ValueError(f"slab_size {slab_size!r}")
            return cls(
                name=name,
                message_type=message_type,
                keys=_paths(_list(data["keys"]), "keys"),
                key_domain=_text_or_none(data["key_domain"], "key_domain"),
                key_generator=key_generator,
                durability=data["durability"],
                expiration_enabled=bool(data["expiration_enabled"]),
                default_ttl=_number_or_none(data["default_ttl"]),
                slab_size=slab_size,
                hash_indexes=_hash_indexes(_list(data["hash_indexes"])),
                indexes=_paths(_list(data["indexes"]), "indexes"),
                history_window=_number_or_none(data["history_window"]),
                history_granularity=_number(data["history_granularity"]),
                file_name=_text_or_none(data.get("file_name"), "file_name"),
                auto_compact=auto_compact,
                options=dict(options),
            )
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ConfigError("stored topic config", f"unreadable: {exc!r}") from None


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{value!r} is not a list")
    return value


def _text_or_none(value: object, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{where} {value!r} is not text")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    if not 0 <= value < float("inf"):
        raise ValueError(f"{value!r} is not a finite non-negative number")
    return float(value)


def _number_or_none(value: object) -> float | None:
    return None if value is None else _number(value)


def _check_name(name: object) -> None:
    """Topic names are Unicode text; every one maps to a safe file name (the store
    encodes it), but a NUL or a lone surrogate cannot travel as UTF-8 and is refused."""
    if not isinstance(name, str) or not name:
        raise ConfigError("name", f"{name!r} is not a topic name")
    if "\x00" in name:
        raise ConfigError("name", f"{_short(name)} contains a NUL character")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            "name", f"{_short(name)} is not valid Unicode text (a lone surrogate at {exc.start})"
        ) from None


def _expiration(value: str | float | None) -> tuple[bool, float | None]:
    if value is None or value is False:
        return False, None
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("disabled", "false", "off", ""):
            return False, None
        if low in ("enabled", "true", "on"):
            return True, None
    ttl = parse_duration(value, "expiration")
    return True, (ttl if ttl > 0 else None)


def _history(value: str | float | Mapping[str, Any] | None) -> tuple[float | None, float]:
    if value is None:
        return None, 0.0
    if isinstance(value, Mapping):
        unknown = set(value) - {"window", "granularity"}
        if unknown:
            raise ConfigError("history", f"unknown keys {sorted(unknown)}")
        if "window" not in value:
            raise ConfigError("history", "needs a window, e.g. {'window': '1d'}")
        window = parse_duration(value["window"], "history.window")
        granularity = parse_duration(value.get("granularity", 0), "history.granularity")
        return window, granularity
    return parse_duration(value, "history"), 0.0


def _slab(value: str | int) -> int:
    size = parse_size(value, "slab_size")
    if size < 4096:
        raise ConfigError("slab_size", f"{value!r} is below the 4KB minimum")
    return size


#: AMPS ``<KeyGenerator>`` option elements of the chaining generator, by tag.
CHAINING_OPTIONS = {
    "Key": "keys",
    "Primary": "primary",
    "Secondary": "secondary",
    "FileName": "file_name",
    "Validation": "validation",
}


def _duration_text(seconds: float) -> str:
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{seconds!r}s"


def topic_to_xml(config: TopicConfig) -> str:
    """Render ``config`` as an AMPS ``<SOW><Topic>`` block that ``load_config`` reads back.

    ``auto_compact`` has no AMPS element and is not written.
    """
    lines: list[str] = []
    add: Callable[[str, object], None] = lambda tag, value: lines.append(  # noqa: E731
        f"    <{tag}>{escape(str(value))}</{tag}>"
    )
    add("Name", config.name)
    add("MessageType", config.message_type)
    if config.file_name is not None:
        add("FileName", config.file_name)
    add("Durability", config.durability)
    for key in config.keys:
        add("Key", key)
    if config.key_domain is not None:
        add("KeyDomain", config.key_domain)
    generator = config.options.get("key_generator")
    if generator:
        lines.append("    <KeyGenerator>")
        lines.append(f"      <Module>{escape(str(generator['module']))}</Module>")
        lines.append("      <Options>")
        lines.extend(_options_xml(generator.get("options") or {}, generator["module"]))
        lines.append("      </Options>")
        lines.append("    </KeyGenerator>")
    if config.expiration_enabled:
        ttl = config.default_ttl
        add("Expiration", "enabled" if ttl is None else _duration_text(ttl))
    add("SlabSize", config.slab_size)
    for fields in config.hash_indexes:
        keys = "".join(f"<Key>{escape(f)}</Key>" for f in fields)
        lines.append(f"    <HashIndex>{keys}</HashIndex>")
    for index in config.indexes:
        add("Index", index)
    if config.history_window is not None:
        window = _duration_text(config.history_window)
        granularity = _duration_text(config.history_granularity)
        lines.append(
            f"    <History><Window>{window}</Window>"
            f"<Granularity>{granularity}</Granularity></History>"
        )
    for option, tag in (("pattern", "Pattern"), ("recovery_point", "RecoveryPoint")):
        if config.options.get(option) is not None:
            add(tag, config.options[option])
    return "<SOW>\n  <Topic>\n" + "\n".join(lines) + "\n  </Topic>\n</SOW>\n"


def _options_xml(options: Mapping[str, Any], module: str) -> list[str]:
    tags = {v: k for k, v in CHAINING_OPTIONS.items()}
    out = []
    for name, value in options.items():
        if value is None:
            continue
        if module == "chaining" and name in tags:
            tag = tags[name]
        else:
            tag = "".join(part.capitalize() for part in name.split("_"))
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            shown = ("true" if item else "false") if isinstance(item, bool) else str(item)
            out.append(f"        <{tag}>{escape(shown)}</{tag}>")
    return out
