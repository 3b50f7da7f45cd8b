"""AMPS XML configuration: read ``<SOW><Topic>`` blocks into :class:`TopicConfig`.

Parsing is hardened (no DTD, no entities, no network; a DOCTYPE is rejected).
Imports only ``errors``, ``paths``, ``units``, ``codecs.xml_codec`` (the hardened
parser), ``config.model`` and ``config.pattern``; never ``topic`` or ``keys``. Writing
a topic's XML is :meth:`~sowlib.config.TopicConfig.to_xml`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lxml import etree

from sowlib.codecs.xml_codec import hardened_parser
from sowlib.config.derived import DERIVED_TAGS, derived_config
from sowlib.config.model import CHAINING_OPTIONS, DURABILITIES, TopicConfig
from sowlib.config.pattern import TopicPattern
from sowlib.config.queues import QUEUE_TAGS
from sowlib.errors import ConfigError, FieldPathError
from sowlib.paths import parse_path
from sowlib.units import parse_count, parse_duration, parse_size

__all__ = ["AMPS_VERSION", "IGNORED_SOW_ELEMENTS", "load_config", "load_xml_config"]

#: The value ``${AMPS_VERSION}`` expands to (the server generation these semantics follow).
AMPS_VERSION = "5.3"
_SOW_TAGS = ("SOW", "TopicMetaData")
_TOPIC_TAGS = ("Topic", "TopicDefinition")
#: SOW-backed objects of an AMPS server that sowlib does not implement: a ConfigError names them.
IGNORED_SOW_ELEMENTS = frozenset({"DistributedQueue"})
_UNSUPPORTED = {
    "Preprocessing": "field construction before key generation is not implemented",
    "Enrichment": "enrichment is not implemented",
}
_SINGLE = {
    "Name",
    "MessageType",
    "FileName",
    "Durability",
    "RecoveryPoint",
    "KeyDomain",
    "KeyGenerator",
    "Expiration",
    "SlabSize",
    "History",
    "Pattern",
    "RecordSize",
    "IncrementSize",
}
_REPEATED = {"Key", "HashIndex", "Index"}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CHAINING = re.compile(r"(?i)(lib)?(amps[_-])?chaining([_-]key[_-]generator)?(\.so)?\Z")
_TRUE = {"true", "yes", "1", "on", "enabled"}
_FALSE = {"false", "no", "0", "off", "disabled"}


def _read(source: str | os.PathLike[str] | bytes) -> tuple[bytes, Path | None]:
    if isinstance(source, bytes):
        return source, None
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source.encode("utf-8"), None
    path = Path(source)
    try:
        return path.read_bytes(), path
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read the configuration: {exc.strerror}") from None


def _parse(data: bytes) -> Any:
    if re.search(rb"<!DOCTYPE", data, re.IGNORECASE) or re.search(rb"<!ENTITY", data):
        raise ConfigError("<document>", "DOCTYPE and entity declarations are not allowed")
    try:
        root = etree.fromstring(data, hardened_parser())
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno is not None else 0
        raise ConfigError(f"line {line}", f"not well-formed XML: {exc.msg}") from None
    if getattr(root.getroottree().docinfo, "doctype", ""):
        raise ConfigError("<document>", "DOCTYPE declarations are not allowed")
    return root


class _Env:
    """``${NAME}`` expansion with the AMPS predefined variables."""

    def __init__(self, env: Mapping[str, str] | None, path: Path | None, base: Path) -> None:
        self.values = dict(os.environ if env is None else env)
        config_path = str(path.resolve()) if path is not None else ""
        self.values.setdefault("AMPS_CONFIG_DIRECTORY", str(base))
        self.values.setdefault("AMPS_CONFIG_PATH", config_path)
        self.values.setdefault("AMPS_VERSION", AMPS_VERSION)

    def expand(self, text: str, where: str) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.values:
                raise ConfigError(where, f"environment variable ${{{name}}} is not set")
            return self.values[name]

        return _VAR.sub(one, text)


def _tag(element: Any) -> str:
    tag = element.tag
    return etree.QName(tag).localname if isinstance(tag, str) else str(tag)


def _children(element: Any) -> list[Any]:
    return [c for c in element if isinstance(c.tag, str)]


def _indexed(parent: Any, where: str) -> list[tuple[str, Any]]:
    """Children with their element paths; repeated names get ``[n]`` (1-based)."""
    kids = _children(parent)
    counts: dict[str, int] = {}
    for kid in kids:
        counts[_tag(kid)] = counts.get(_tag(kid), 0) + 1
    seen: dict[str, int] = {}
    out = []
    for kid in kids:
        name = _tag(kid)
        seen[name] = seen.get(name, 0) + 1
        suffix = f"[{seen[name]}]" if counts[name] > 1 or name in _REPEATED else ""
        out.append((f"{where}/{name}{suffix}", kid))
    return out


def _text(element: Any, where: str, env: _Env) -> str:
    if _children(element):
        raise ConfigError(where, "expected text, found child elements")
    text = (element.text or "").strip()
    if not text:
        raise ConfigError(where, "is empty")
    return env.expand(text, where)


def _field(text: str, where: str) -> str:
    try:
        return parse_path(text).to_text()
    except FieldPathError as exc:
        raise ConfigError(where, str(exc)) from None


def _bool(text: str, where: str) -> bool:
    low = text.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ConfigError(where, f"{text!r} is not a boolean (true/false)")


def _file_name(template: str, base: Path | None) -> str:
    """A relative ``FileName`` joined to ``base``; tokens stay for the store to expand
    once, when it creates the file (a ``%`` in ``base`` is escaped as ``%%``)."""
    if base is not None and not os.path.isabs(template):
        return os.path.join(str(base).replace("%", "%%"), template)
    return template


def _key_generator(element: Any, where: str, env: _Env) -> dict[str, Any]:
    module: str | None = None
    options: dict[str, Any] = {}
    for path, kid in _indexed(element, where):
        tag = _tag(kid)
        if tag == "Module":
            module = _text(kid, path, env)
        elif tag == "Options":
            options = _generator_options(kid, path, env)
        else:
            raise ConfigError(path, "unknown element (expected Module, Options)")
    if module is None:
        raise ConfigError(f"{where}/Module", "is required")
    if _CHAINING.match(module):
        module = "chaining"
        if not options.get("keys") and not options.get("primary"):
            raise ConfigError(f"{where}/Options", "the chaining generator needs a Key or Primary")
    elif not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", module):
        raise ConfigError(
            f"{where}/Module", f"{module!r} is not 'chaining' or 'package.module:callable'"
        )
    return {"module": module, "options": options}


def _generator_options(element: Any, where: str, env: _Env) -> dict[str, Any]:
    known = set(CHAINING_OPTIONS)
    tags = {_tag(k) for k in _children(element)}
    chaining_style = tags <= known
    out: dict[str, Any] = {}
    for path, kid in _indexed(element, where):
        tag = _tag(kid)
        text = _text(kid, path, env)
        if chaining_style:
            name = CHAINING_OPTIONS[tag]
            if name in ("keys", "secondary"):
                out.setdefault(name, []).append(_field(text, path))
            elif name == "primary":
                out[name] = _field(text, path)
            elif name == "validation":
                out[name] = _bool(text, path)
            else:
                out[name] = text
            continue
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", tag).lower()
        if name in out:
            previous = out[name]
            out[name] = [*previous, text] if isinstance(previous, list) else [previous, text]
        else:
            out[name] = text
    return out


def _history(element: Any, where: str, env: _Env) -> dict[str, float]:
    out: dict[str, float] = {}
    for path, kid in _indexed(element, where):
        tag = _tag(kid)
        if tag not in ("Window", "Granularity") or tag.lower() in out:
            raise ConfigError(path, "unknown or repeated element (expected Window, Granularity)")
        out[tag.lower()] = parse_duration(_text(kid, path, env), path)
    if "window" not in out:
        raise ConfigError(f"{where}/Window", "is required")
    return out


def _topic(element: Any, where: str, env: _Env, base: Path | None) -> TopicConfig:
    values: dict[str, tuple[str, Any]] = {}
    keys: list[str] = []
    hash_indexes: list[list[str]] = []
    indexes: list[str] = []
    for path, kid in _indexed(element, where):
        tag = "Name" if _tag(kid) == "Topic" else _tag(kid)
        if tag in _UNSUPPORTED:
            raise ConfigError(path, _UNSUPPORTED[tag])
        if tag not in _SINGLE and tag not in _REPEATED:
            raise ConfigError(path, "unknown element")
        if tag in _SINGLE:
            if tag in values:
                raise ConfigError(path, "appears more than once")
            values[tag] = (path, kid)
        elif tag == "Key":
            keys.append(_field(_text(kid, path, env), path))
        elif tag == "Index":
            indexes.append(_field(_text(kid, path, env), path))
        else:
            fields = []
            for kpath, key in _indexed(kid, path):
                if _tag(key) != "Key":
                    raise ConfigError(kpath, "unknown element (expected Key)")
                fields.append(_field(_text(key, kpath, env), kpath))
            if not fields:
                raise ConfigError(path, "a HashIndex needs at least one Key")
            hash_indexes.append(fields)

    def text(tag: str) -> str | None:
        got = values.get(tag)
        return None if got is None else _text(got[1], got[0], env)

    def at(tag: str) -> str:
        got = values.get(tag)
        return got[0] if got else f"{where}/{tag}"

    name, message_type = text("Name"), text("MessageType")
    if name is None:
        raise ConfigError(f"{where}/Name", "is required")
    if message_type is None:
        raise ConfigError(f"{where}/MessageType", "is required")
    message_type = message_type.lower()
    durability = (text("Durability") or "persistent").lower()
    if durability not in DURABILITIES:
        raise ConfigError(at("Durability"), f"{durability!r} is not one of {DURABILITIES}")
    file_template = text("FileName")
    if file_template is None and durability != "transient":
        raise ConfigError(at("FileName"), "is required unless Durability is transient")
    file_name = None
    if file_template is not None:
        file_name = _file_name(file_template, base)
    options: dict[str, Any] = {}
    if "KeyGenerator" in values:
        path, kid = values["KeyGenerator"]
        options["key_generator"] = _key_generator(kid, path, env)
    pattern = text("Pattern")
    if pattern is not None:
        TopicPattern(pattern, at("Pattern"))  # a bad or over-long expression: ConfigError
        options["pattern"] = pattern
    recovery = text("RecoveryPoint")
    if recovery is not None:
        options["recovery_point"] = recovery
    expiration = text("Expiration")
    low = (expiration or "").lower()
    if expiration is not None and low not in ("enabled", "disabled", "true", "false"):
        parse_duration(expiration, at("Expiration"))
    slab: str | int = 1024 * 1024
    if "SlabSize" in values:
        slab = parse_size(text("SlabSize") or "", at("SlabSize"))
        if slab < 4096:
            raise ConfigError(at("SlabSize"), f"{slab} bytes is below the 4KB minimum")
    elif "RecordSize" in values or "IncrementSize" in values:
        # Legacy sizing (pre-5.0): one allocation of RecordSize x IncrementSize bytes.
        record = parse_size(text("RecordSize") or "512", at("RecordSize"))
        count = parse_count(text("IncrementSize") or "1000", at("IncrementSize"))
        slab = max(4096, record * count)
    history = None
    if "History" in values:
        path, kid = values["History"]
        history = _history(kid, path, env)
    try:
        return TopicConfig.make(
            name,
            message_type=message_type,
            keys=keys,
            key_domain=text("KeyDomain"),
            durability=durability,
            expiration=expiration,
            slab_size=slab,
            hash_indexes=hash_indexes,
            indexes=indexes,
            history=history,
            file_name=file_name,
            options=options,
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}/{exc.where}", exc.reason) from None


def load_xml_config(
    source: str | os.PathLike[str] | bytes,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[TopicConfig]:
    """Implementation of :func:`sowlib.config.load_config` (see its docstring)."""
    data, path = _read(source)
    root = _parse(data)
    config_dir = path.resolve().parent if path is not None else Path.cwd()
    base = Path(base_dir) if base_dir is not None else (config_dir if path is not None else None)
    expander = _Env(env, path, config_dir)
    if _tag(root) in _SOW_TAGS:
        sections = [root]
    else:
        sections = [e for e in root.iter() if isinstance(e.tag, str) and _tag(e) in _SOW_TAGS]
    out: list[TopicConfig] = []
    seen: dict[tuple[str, str], str] = {}
    for number, section in enumerate(sections, 1):
        where = _tag(section) + (f"[{number}]" if len(sections) > 1 else "")
        for topics, child in enumerate(_children(section), 1):
            tag = _tag(child)
            if tag in QUEUE_TAGS:
                continue  # read by sowlib.config.queues
            if tag in IGNORED_SOW_ELEMENTS:
                raise ConfigError(
                    f"{where}/{tag}",
                    f"{tag} is not implemented by sowlib; keep it in the server's configuration"
                    " only (the topics it reads from load without it)",
                )
            if tag not in _TOPIC_TAGS and tag not in DERIVED_TAGS:
                raise ConfigError(f"{where}/{tag}", "unknown element (expected Topic)")
            topic_where = f"{where}/{tag}[{topics}]"
            if tag in DERIVED_TAGS:  # View, ConflatedTopic: transient topics the store maintains
                config = derived_config(child, topic_where, expander.expand)
            else:
                config = _topic(child, topic_where, expander, base)
            ident = (config.name, config.message_type)
            if ident in seen:
                raise ConfigError(topic_where, f"duplicates the topic defined at {seen[ident]}")
            seen[ident] = topic_where
            out.append(config)
    return out


def load_config(
    source: str | os.PathLike[str] | bytes,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[TopicConfig]:
    """Read the SOW topics of an AMPS XML configuration (spec §14).

    ``source`` is a file path, XML text (a ``str`` starting with ``<``) or bytes.
    The root may be ``<SOW>``/``<TopicMetaData>`` or a whole AMPS configuration,
    in which case every SOW section below the root is read (none: no topics).
    ``<Topic>``/``<TopicDefinition>`` children become configs, and so do ``<View>``
    and ``<ConflatedTopic>`` (transient, their definition in ``options``; see
    :mod:`sowlib.config.derived`); queues are left to
    :func:`sowlib.config.queues.queue_definitions`. ``${NAME}`` expands
    from ``env`` (default ``os.environ``) plus ``AMPS_CONFIG_DIRECTORY``,
    ``AMPS_CONFIG_PATH`` and ``AMPS_VERSION``. ``FileName`` keeps its tokens
    (see :func:`expand_file_name`; the store expands them once, when it creates
    the file) and is joined to ``base_dir`` (default: the configuration file's
    directory) when relative. A ``KeyGenerator`` is recorded as
    ``options["key_generator"] = {"module": ..., "options": {...}}`` (built by
    ``SowStore.from_config``, never by parsing); ``Pattern`` and ``RecoveryPoint``
    land in ``options`` too.

    Example:
        >>> load_config("<SOW><Topic><Name>t</Name><MessageType>json</MessageType>"
        ...             "<Durability>transient</Durability></Topic></SOW>")[0].name
        't'

    Raises:
        ConfigError: ``where`` is the element path (``SOW/Topic[2]/Expiration``):
            unknown or repeated elements, bad values or units, missing Name,
            MessageType or FileName, unset variables, malformed XML, a DOCTYPE.
    """
    return load_xml_config(source, base_dir=base_dir, env=env)
