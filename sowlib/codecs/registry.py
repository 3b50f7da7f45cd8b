"""The ``Codec`` protocol and the registry that maps message-type names to codecs.

Imports only ``errors`` and the built-in codec modules; never ``expr`` or ``storage``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from sowlib.codecs.binary_codec import BinaryCodec
from sowlib.codecs.json_codec import JsonCodec
from sowlib.codecs.msgpack_codec import MsgpackCodec
from sowlib.codecs.tagvalue import FixCodec, NvfixCodec
from sowlib.codecs.xml_codec import XmlCodec
from sowlib.errors import ConfigError

__all__ = [
    "Codec",
    "CodecFactory",
    "available_codecs",
    "get_codec",
    "register_codec",
    "registrations_undone",
]


@runtime_checkable
class Codec(Protocol):
    """What a message type provides to topics and filters.

    ``decode`` turns bytes into a document (nested dicts, lists, scalars; see
    :mod:`sowlib.document`); ``encode`` is its inverse; ``merge`` applies a delta
    publish and returns a new document.
    """

    @property
    def name(self) -> str:
        """Message-type name, e.g. ``"json"``."""
        ...

    @property
    def supports_filter(self) -> bool:
        """False when documents have no fields (``binary``)."""
        ...

    @property
    def supports_delta(self) -> bool:
        """False when ``merge`` always raises (``binary``)."""
        ...

    def decode(self, data: bytes) -> Any:
        """Parse one message; raises ``DecodeError(message_type, data, reason, offset)``."""
        ...

    def encode(self, doc: Any) -> bytes:
        """Serialise a document; raises ``EncodeError``."""
        ...

    def merge(self, stored: Any, delta: Any) -> Any:
        """Merge a delta into a stored document, returning a new one."""
        ...


#: Builds a codec from keyword options (``separator="|"``).
CodecFactory = Callable[..., Codec]

_LOCK = threading.Lock()
_FACTORIES: dict[str, CodecFactory] = {
    "json": JsonCodec,
    "xml": XmlCodec,
    "fix": FixCodec,
    "nvfix": NvfixCodec,
    "msgpack": MsgpackCodec,
    "binary": BinaryCodec,
}
_DEFAULTS: dict[str, Codec] = {}


def _normal(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("message_type", f"a message type is a non-empty string, got {name!r}")
    return name.strip().lower()


def register_codec(name: str, factory: CodecFactory, *, replace: bool = False) -> None:
    """Make ``name`` (case-insensitive) a message type built by ``factory(**options)``.

    Args:
        name: message-type name, e.g. ``"csv"``.
        factory: called with the options given to :func:`get_codec`; returns a Codec.
        replace: allow replacing an existing codec (including a built-in one).
    Raises:
        ConfigError: the name is taken and ``replace`` is false, or it is not a string.

    Example:
        >>> register_codec("json-alias", lambda **options: get_codec("json"), replace=True)
        >>> get_codec("json-alias").name
        'json'
    """
    key = _normal(name)
    if not callable(factory):
        raise ConfigError("message_type", f"codec factory for {name!r} is not callable")
    with _LOCK:
        if key in _FACTORIES and not replace:
            raise ConfigError("message_type", f"codec {key!r} is already registered")
        _FACTORIES[key] = factory
        _DEFAULTS.pop(key, None)


def get_codec(name: str, **options: Any) -> Codec:
    """Return the codec for a message type; O(1), instances without options are shared.

    Args:
        name: ``"json"``, ``"xml"``, ``"fix"``, ``"nvfix"``, ``"msgpack"``, ``"binary"``
            or a registered name (case-insensitive).
        options: codec options, e.g. ``separator="|"`` for fix/nvfix (AMPS
            ``FieldSeparator``).
    Raises:
        ConfigError: unknown message type (``where="message_type"``) or a bad option.

    Example:
        >>> get_codec("fix", separator="|").decode(b"35=D|55=IBM|")
        {'35': 'D', '55': 'IBM'}
    """
    key = _normal(name)
    if not options:
        codec = _DEFAULTS.get(key)
        if codec is not None:
            return codec
    factory = _FACTORIES.get(key)
    if factory is None:
        known = ", ".join(available_codecs())
        raise ConfigError("message_type", f"unknown message type {name!r} (known: {known})")
    try:
        codec = factory(**options)
    except (TypeError, ValueError, ImportError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError("message_type", f"bad options for {key!r}: {exc}") from None
    if not options:
        _DEFAULTS[key] = codec
    return codec


def available_codecs() -> list[str]:
    """The registered message-type names, sorted."""
    return sorted(_FACTORIES)


@contextlib.contextmanager
def registrations_undone() -> Iterator[None]:
    """A block whose :func:`register_codec` calls are undone when it ends.

    The registry is process-wide; tests (and trials of a codec) use this to leave
    it as they found it. Codecs registered by other threads meanwhile are undone too.

    Example:
        >>> with registrations_undone():
        ...     register_codec("trial", lambda **options: get_codec("json"))
        >>> "trial" in available_codecs()
        False
    """
    with _LOCK:
        factories, defaults = dict(_FACTORIES), dict(_DEFAULTS)
    try:
        yield
    finally:
        with _LOCK:
            _FACTORIES.clear()
            _FACTORIES.update(factories)
            _DEFAULTS.clear()
            _DEFAULTS.update(defaults)
