"""The AMPS ``<MessageTypes>`` section: named message types built from a module.

A ``<MessageType>`` names a type (``<Name>``) built by a ``<Module>``: a built-in
one (``json``, ``xml``, ``fix``, ``nvfix``, ``msgpack``, ``binary``; ``fix`` and
``nvfix`` take a ``<FieldSeparator>`` byte code) or ``composite-local`` /
``composite-global`` with one ``<MessageType>`` per part. Any other module
(``protobuf``, ``struct``, a custom one) is declared but refused where it is
used: a topic or client of that type gets a ConfigError saying so. :func:`register_message_types`
makes each a message type of this process (:func:`sowlib.codecs.register_codec`),
so topics, filters and client URIs (``/amps/composite-json-binary``) can use it.
Imports ``errors``, ``codecs`` (the registry and the composite codec) and lxml.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from lxml import etree

from sowlib.codecs import available_codecs, get_codec, register_codec
from sowlib.codecs.composite import CompositeCodec
from sowlib.codecs.xml_codec import hardened_parser
from sowlib.errors import ConfigError

__all__ = ["MessageTypeDef", "message_types", "register_message_types"]

BUILT_IN = ("json", "xml", "fix", "nvfix", "msgpack", "binary")
COMPOSITE = {"composite-local": "local", "composite-global": "global"}
#: Elements of a ``<MessageType>`` with no meaning in process: accepted, ignored.
IGNORED = frozenset(
    {"AMPSVersionCompliance", "EarlyTerminationOptimization", "HeaderSeparator", "MessageSeparator"}
)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_lock = threading.Lock()
_registered: dict[str, MessageTypeDef] = {}


@attrs.frozen
class MessageTypeDef:
    """One ``<MessageType>``: its name, module, part types (composite) and separator."""

    name: str
    module: str
    parts: tuple[str, ...] = ()
    separator: int | None = None

    def factory(self) -> Any:
        """The codec factory :func:`register_codec` takes."""
        if self.module in COMPOSITE:
            scope = COMPOSITE[self.module]
            return lambda **options: CompositeCodec(self.name, self.parts, get_codec, scope)
        if self.module not in BUILT_IN:
            return self._refuse
        if self.separator is not None:
            return lambda **options: get_codec(self.module, separator=self.separator, **options)
        return lambda **options: get_codec(self.module, **options)

    def _refuse(self, **options: Any) -> Any:
        raise ConfigError(
            f"MessageType {self.name}",
            f"message type module {self.module!r} is not implemented by sowlib",
        )


def _tag(element: Any) -> str:
    return str(etree.QName(element).localname)


def _source(source: str | os.PathLike[str] | bytes) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source.encode("utf-8")
    path = Path(os.fspath(source))
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read the configuration: {exc.strerror}") from None


def _one(element: Any, where: str, env: Mapping[str, str] | None) -> MessageTypeDef:
    values: dict[str, str] = {}
    parts: list[str] = []
    for child in element:
        if not isinstance(child.tag, str):
            continue
        tag = _tag(child)
        text = _expand((child.text or "").strip(), f"{where}/{tag}", env)
        if tag in ("Name", "Module", "FieldSeparator"):
            values[tag] = text
        elif tag == "MessageType":
            parts.append(text.lower())
        elif tag not in IGNORED:
            raise ConfigError(f"{where}/{tag}", "unknown element")
    name, module = values.get("Name", "").lower(), values.get("Module", "").lower()
    if not name:
        raise ConfigError(f"{where}/Name", "required")
    module = module or name
    if module in COMPOSITE:
        if not parts:
            raise ConfigError(f"{where}/MessageType", f"{module} needs one per part")
    elif parts:
        raise ConfigError(f"{where}/MessageType", f"only composite types have parts, not {module}")
    separator = None
    if "FieldSeparator" in values:
        if module not in ("fix", "nvfix"):
            raise ConfigError(f"{where}/FieldSeparator", f"not an option of {module}")
        text = values["FieldSeparator"]
        if not text.isdigit() or not 0 < int(text) < 256 or int(text) == ord("="):
            raise ConfigError(f"{where}/FieldSeparator", f"{text!r} is not an ASCII code")
        separator = int(text)
    return MessageTypeDef(name, module, tuple(parts), separator)


def _expand(text: str, where: str, env: Mapping[str, str] | None) -> str:
    def one(match: re.Match[str]) -> str:
        value = (env or {}).get(match.group(1), os.environ.get(match.group(1)))
        if value is None:
            raise ConfigError(where, f"environment variable ${{{match.group(1)}}} is not set")
        return value

    return _VAR.sub(one, text)


def message_types(
    source: str | os.PathLike[str] | bytes, env: Mapping[str, str] | None = None
) -> list[MessageTypeDef]:
    """The ``<MessageType>`` definitions of a configuration (a path or its XML).

    Raises:
        ConfigError: malformed XML, an unknown element, a composite type without
            parts, parts given to a non-composite module, a bad ``FieldSeparator``.
    """
    try:
        root = etree.fromstring(_source(source), hardened_parser())
    except etree.XMLSyntaxError as exc:
        raise ConfigError("configuration", f"not well-formed XML: {exc}") from None
    found = []
    for section in (e for e in root.iter() if isinstance(e.tag, str)):
        if _tag(section) != "MessageTypes":
            continue
        kids = [c for c in section if isinstance(c.tag, str)]
        for number, child in enumerate(kids, 1):
            where = f"MessageTypes/MessageType[{number}]"
            if _tag(child) != "MessageType":
                raise ConfigError(f"MessageTypes/{_tag(child)}", "unknown element")
            found.append(_one(child, where, env))
    return found


def register_message_types(
    source: str | os.PathLike[str] | bytes, env: Mapping[str, str] | None = None
) -> list[str]:
    """Make every ``<MessageType>`` of a configuration a message type of this process.

    Registering the same definition again (the configuration opened twice) is a
    no-op; a built-in type named as itself with no options needs nothing.
    Returns the names registered or confirmed.

    Raises:
        ConfigError: as :func:`message_types`, a part type that is not known, or a
            name already in use with another definition (or by a built-in type).
    """
    defs = sorted(message_types(source, env), key=lambda d: d.module in COMPOSITE)
    names = []
    with _lock:
        for one in defs:
            names.append(one.name)
            if one == MessageTypeDef(one.name, one.name) and one.name in BUILT_IN:
                continue  # <Name>json</Name><Module>json</Module>: the built-in itself
            if one.name in available_codecs():
                if _registered.get(one.name) == one:
                    continue  # the same configuration again
                raise ConfigError(
                    f"MessageType {one.name}",
                    "the name is already a message type (built in, registered, or"
                    " defined differently by another configuration)",
                )
            for part in one.parts:  # an unknown part type is an error now, not at publish
                if part not in available_codecs():
                    raise ConfigError(f"MessageType {one.name}", f"unknown part type {part!r}")
            register_codec(one.name, one.factory())
            _registered[one.name] = one
    return names
