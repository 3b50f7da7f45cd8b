"""SOW keys: content keys (xxhash64 over domain + key values), publisher keys, chaining.

A key generator is anything callable as ``generator(doc) -> str``. Imports
``errors``, ``paths``, ``document`` only.
"""

from __future__ import annotations

import errno
import importlib
import os
import re
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter, methodcaller
from typing import Any, Literal, Protocol, TextIO, runtime_checkable

import xxhash

from sowlib.document import canonical_text
from sowlib.errors import (
    ArgumentError,
    ConfigError,
    FieldPathError,
    InvalidSowKeyError,
    MissingKeyFieldError,
)
from sowlib.paths import FieldPath, parse_path

__all__ = [
    "AttachedKeyGenerator",
    "ChainingKeyGenerator",
    "ContentKeyGenerator",
    "KeyGenerator",
    "describe_generator",
    "generator_name_conflict",
    "key_generator_map",
    "load_key_generator",
    "stored_key_generator",
    "validate_user_key",
]

# Reserved separator between the domain and each key value (spec §6.3): a
# control character no sane key value contains, so ("a", "bc") != ("ab", "c").
_SEP = "\x1e"
_SEP_BYTES = _SEP.encode()
_BASE64 = re.compile(r"[A-Za-z0-9+/=]+\Z")
_ENCODE = methodcaller("encode", "utf-8", "surrogateescape")


def _unencodable_key(exc: UnicodeEncodeError) -> ArgumentError:
    """The error for key text UTF-8 cannot encode (a lone surrogate such as ``"\\ud800"``).

    No stored key can hold one (publish rejects such text), so a lookup by it is a bad
    argument, not a miss; the message quotes at most 64 characters around the bad one.
    """
    text = exc.object if isinstance(exc.object, str) else repr(exc.object)
    start = max(0, exc.start - 32)
    reason = f"character {exc.start} is a lone surrogate, which no key can hold"
    return ArgumentError("key value", text[start : start + 64], reason)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise _unencodable_key(exc) from None


def _key_text(value: Any) -> str | None:
    """A key value's canonical text; ints and non-empty text without the general rules."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is str and value:
        return str(value)
    return canonical_text(value)


@runtime_checkable
class KeyGenerator(Protocol):
    """Computes the SOW key of a decoded message; any matching callable works."""

    def __call__(self, doc: Any) -> str:
        """Return the key, or raise ``MissingKeyFieldError``."""
        ...


class ContentKeyGenerator:
    """Keys from one or more fields: ``xxh64(domain SEP v1 SEP v2 ...)`` as decimal text.

    Values are rendered with :func:`sowlib.document.canonical_text`, so ``5``,
    ``5.0`` and ``"5"`` give the same key ([R] spec §6.3). O(fields).

    Example:
        >>> gen = ContentKeyGenerator(["/id"], domain="orders", topic="orders")
        >>> gen({"id": 5}) == gen({"id": "5"})
        True
    """

    def __init__(self, fields: Sequence[str], *, domain: str, topic: str) -> None:
        if not fields:
            raise ConfigError("keys", "a content key needs at least one field")
        self.fields: tuple[FieldPath, ...] = tuple(parse_path(f) for f in fields)
        self.domain = domain
        self.topic = topic
        #: What a key hashes before the text of its (first) value: the domain, the separator.
        self.head = domain.encode("utf-8", "surrogateescape") + _SEP_BYTES
        #: ``int_format % n``: ``head`` + the decimal text of the int ``n``, in one C-level
        #: step (``b"%d" % n == str(n).encode()``).
        self.int_format = self.head.replace(b"%", b"%%") + b"%d"
        self._single = self.fields[0] if len(self.fields) == 1 else None
        steps = self._single.steps if self._single is not None else ()
        self._top = steps[0].name if len(steps) == 1 and steps[0].index is None else None

    def __call__(self, doc: Any) -> str:
        if self._single is not None:
            # Hot path (one key field, int or text value): skip the generic loop.
            text = _key_text(self._single.resolve(doc) if type(doc) is dict else None)
            if text is None:
                raise MissingKeyFieldError(self.topic, self._single.to_text())
            return str(xxhash.xxh64_intdigest(self.head + _utf8(text)))
        values = []
        for path in self.fields:
            text = canonical_text(path.resolve(doc)) if isinstance(doc, dict) else None
            if text is None:
                raise MissingKeyFieldError(self.topic, path.to_text())
            values.append(text)
        return self._hash(values)

    def keys_of(self, docs: Sequence[Any]) -> list[str]:
        """The keys of many documents, as calling the generator on each gives; O(total fields).

        Raises:
            MissingKeyFieldError: a document lacks a key field.
        """
        return list(map(str, self.hashes_of(docs)))

    def hashes_of(self, docs: Sequence[Any]) -> list[int]:
        """The 64-bit hashes whose decimal text is each document's key; O(total fields).

        The batch publish path: one loop with its lookups hoisted; the storage layer
        packs these integers instead of parsing the key text back.

        Raises:
            MissingKeyFieldError: a document lacks a key field.
        """
        single = self._single
        if single is None:
            return [int(self(doc)) for doc in docs]
        head, digest = self.head, xxhash.xxh64_intdigest
        if self._top is not None:
            try:
                values = list(map(itemgetter(self._top), docs))
            except (KeyError, TypeError, IndexError):
                values = None
            hashes = None if values is None else self.hashes_of_values(values)
            if hashes is not None:
                return hashes
        getter = single.getter
        out: list[int] = []
        add = out.append
        for doc in docs:
            text = _key_text(getter(doc) if type(doc) is dict else None)
            if text is None:
                raise MissingKeyFieldError(self.topic, single.to_text())
            add(digest(head + _utf8(text)))
        return out

    @property
    def top_field(self) -> str | None:
        """The field name when the key is one top-level field (``/orderId``), else None."""
        return self._top

    def hashes_of_values(self, values: Sequence[Any]) -> list[int] | None:
        """:meth:`hashes_of` from the key field's values when every one is an int or
        non-empty text (the whole batch in C-level maps); None for anything else."""
        if self._single is None:
            return None
        kinds = set(map(type, values))
        digest = xxhash.xxh64_intdigest
        if kinds <= {int}:
            return list(map(digest, map(self.int_format.__mod__, values)))
        if kinds <= {str} and all(values):
            try:
                return list(map(digest, map(self.head.__add__, map(_ENCODE, values))))
            except UnicodeEncodeError as exc:
                raise _unencodable_key(exc) from None
        return None

    def key_for_values(self, values: Sequence[Any]) -> str | None:
        """The key of a message whose key fields hold ``values``; None if one is NULL."""
        texts = []
        for value in values:
            text = canonical_text(value)
            if text is None:
                return None
            texts.append(text)
        return self._hash(texts)

    def _hash(self, texts: Sequence[str]) -> str:
        body = _utf8(_SEP.join(texts))
        return str(xxhash.xxh64_intdigest(self.head + body))


def validate_user_key(key: object) -> str:
    """Check a publisher-supplied key: non-empty text in the Base64 alphabet (spec §6.4).

    Raises:
        InvalidSowKeyError: anything else.
    """
    if not isinstance(key, str):
        raise InvalidSowKeyError(key, "a SOW key is a string")
    if not key:
        raise InvalidSowKeyError(key, "a SOW key cannot be empty")
    if not _BASE64.match(key):
        bad = next(c for c in key if not _BASE64.match(c))
        raise InvalidSowKeyError(key, f"character {bad!r} is outside the Base64 alphabet")
    return key


class ChainingKeyGenerator:
    """The chaining generator of spec §6.5: amending messages join their parent's chain.

    ``primary`` is the message's own identifier, ``secondary`` the fields
    naming the message it amends. Every identifier of a chain maps to the key
    of the chain head. With ``file_name`` the chains persist across restarts
    (an append-only text file, one ``member<TAB>head`` line per new member).

    Example:
        >>> gen = ChainingKeyGenerator("/Doc", ["/Parent"], domain="docs", topic="docs")
        >>> gen({"Doc": 10}) == gen({"Doc": 11, "Parent": 10})
        True
    """

    spec = "chaining"

    def __init__(
        self,
        primary: str,
        secondary: Sequence[str] = (),
        *,
        domain: str,
        topic: str,
        file_name: str | None = None,
        validation: bool = False,
    ) -> None:
        self.primary = parse_path(primary)
        self.secondary = tuple(parse_path(s) for s in secondary)
        self.domain = domain
        self.topic = topic
        self.file_name = file_name
        self.validation = validation
        self._head: dict[str, str] = {}
        self._lock = threading.Lock()
        self._content = ContentKeyGenerator([primary], domain=domain, topic=topic)
        if file_name and os.path.lexists(file_name):
            try:
                with _chain_file(file_name, os.O_RDONLY, "r") as fh:
                    for line in fh:
                        member, _, head = line.rstrip("\n").partition("\t")
                        if member and head:
                            self._head[member] = head
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(
                    "KeyGenerator/FileName", f"cannot read the chain file {file_name!r}: {exc}"
                ) from None

    def options(self) -> dict[str, Any]:
        """The options that recreate this generator (stored with the topic)."""
        return {
            "primary": self.primary.to_text(),
            "secondary": [s.to_text() for s in self.secondary],
            "file_name": self.file_name,
            "validation": self.validation,
        }

    def __call__(self, doc: Any) -> str:
        own = canonical_text(self.primary.resolve(doc)) if isinstance(doc, dict) else None
        if own is None:
            raise MissingKeyFieldError(self.topic, self.primary.to_text())
        parents = []
        for path in self.secondary:
            value = canonical_text(path.resolve(doc))
            if value is not None:
                parents.append(value)
        with self._lock:
            heads = {self._head.get(p, p) for p in parents}
            if own in self._head:
                heads.add(self._head[own])
            if len(heads) > 1:
                raise InvalidSowKeyError(
                    own, f"message joins two different chains ({', '.join(sorted(heads))})"
                )
            head = heads.pop() if heads else own
            new = [m for m in (own, *parents) if m not in self._head]
            for member in new:
                self._head[member] = head
            if new and self.file_name:
                try:
                    with _chain_file(
                        self.file_name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "a"
                    ) as fh:
                        fh.writelines(f"{m}\t{head}\n" for m in new)
                except OSError as exc:
                    for member in new:
                        del self._head[member]
                    raise ConfigError(
                        "KeyGenerator/FileName",
                        f"cannot write the chain file {self.file_name!r}: {exc}",
                    ) from None
        key = self._content.key_for_values([head])
        assert key is not None  # head is non-empty text
        return key


def _chain_file(path: str, flags: int, mode: Literal["r", "a"]) -> TextIO:
    """The chain file opened as a store file is: never through a symlink, never a FIFO
    or device (``O_NONBLOCK`` keeps a FIFO from blocking, ``fstat`` refuses it)."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    os.set_blocking(fd, True)
    return open(fd, mode, encoding="utf-8")


def _chaining(
    options: dict[str, Any], *, domain: str, topic: str, file_name: str | None
) -> ChainingKeyGenerator:
    keys = options.pop("keys", None) or []
    primary = options.pop("primary", None) or (keys[0] if keys else None)
    secondary = list(options.pop("secondary", None) or keys[1:])
    if not primary:
        raise ConfigError("KeyGenerator/Options", "the chaining generator needs a primary Key")
    return ChainingKeyGenerator(
        primary,
        secondary,
        domain=domain,
        topic=topic,
        file_name=file_name,
        validation=bool(options.pop("validation", False)),
    )


def load_key_generator(spec: object, *, domain: str, topic: str) -> Callable[[Any], str] | None:
    """Build a generator from a *trusted* configuration (the application's AMPS XML).

    ``{"module": "chaining", "options": {...}}`` builds a :class:`ChainingKeyGenerator`
    (its ``file_name`` option is honoured); ``{"module": "pkg.mod:factory", "options":
    {...}}`` imports ``factory`` and calls it with the options (or uses it directly
    when it takes none). This imports and runs code: never call it on what a store
    file records (:func:`stored_key_generator` is the safe reading of that).

    Raises:
        ConfigError: the description is malformed or the module cannot be imported.
    """
    if spec is None:
        return None
    if not isinstance(spec, dict) or "module" not in spec:
        raise ConfigError(
            "KeyGenerator", f"expected {{'module': ..., 'options': ...}}, got {spec!r}"
        )
    module = spec["module"]
    options = dict(spec.get("options") or {})
    if module == "chaining":
        file_name = options.pop("file_name", None)
        return _chaining(options, domain=domain, topic=topic, file_name=file_name)
    if not isinstance(module, str) or ":" not in module:
        raise ConfigError("KeyGenerator/Module", f"{module!r} is not 'package.module:callable'")
    mod_name, _, attr = module.partition(":")
    try:
        target = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError("KeyGenerator/Module", f"cannot import {module!r}: {exc}") from None
    generator = target(**options) if options else target
    if not callable(generator):
        raise ConfigError("KeyGenerator/Module", f"{module!r} is not callable")
    return generator  # type: ignore[no-any-return]


def _is_paths(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def stored_key_generator(spec: object, *, domain: str, topic: str) -> ChainingKeyGenerator | None:
    """The generator a store file's description rebuilds without running any code.

    Only the built-in chaining generator is rebuilt, and only from plain data
    (field paths and a boolean) with no ``file_name``: a store file cannot make
    the process import a module, call a callable or read or append to a path. Anything
    else (a custom generator, a chaining generator with a chain file, a
    malformed description) gives None: the application attaches the generator
    before it publishes. O(number of key fields).

    Example:
        >>> stored_key_generator({"module": "os:system", "options": {}}, domain="d", topic="d")
        >>> gen = stored_key_generator(
        ...     {"module": "chaining", "options": {"primary": "/Doc"}}, domain="d", topic="d")
        >>> type(gen).__name__
        'ChainingKeyGenerator'
    """
    if not isinstance(spec, dict) or spec.get("module") != "chaining":
        return None
    options = spec.get("options") or {}
    if not isinstance(options, dict) or set(options) - {
        "keys",
        "primary",
        "secondary",
        "file_name",
        "validation",
    }:
        return None
    if options.get("file_name") is not None:
        return None
    primary, keys = options.get("primary"), options.get("keys") or []
    secondary = options.get("secondary") or []
    if not (primary is None or isinstance(primary, str)) or not _is_paths(keys):
        return None
    if not _is_paths(secondary) or not isinstance(options.get("validation", False), bool):
        return None
    plain = {k: v for k, v in options.items() if k != "file_name"}
    try:
        return _chaining(plain, domain=domain, topic=topic, file_name=None)
    except (ConfigError, FieldPathError):
        return None


def key_generator_map(generators: object) -> dict[str, Callable[[Any], str]]:
    """Check an application's ``{topic name: generator}`` mapping (``SowStore(key_generators=)``).

    Raises:
        ConfigError: not a mapping, a name that is not text, or a value that is not callable.
    """
    if generators is None:
        return {}
    if not isinstance(generators, Mapping):
        raise ConfigError("key_generators", "expected a mapping of topic name to generator")
    for name, generator in generators.items():
        if not isinstance(name, str) or not callable(generator):
            raise ConfigError(f"key_generators[{name!r}]", f"{generator!r} is not callable")
    return dict(generators)


def generator_name_conflict(stored: object, generator: object) -> str | None:
    """Why ``generator`` cannot be the one a store file names, or None when it may be.

    A file records a generator by name only so that this check can run: when the
    file names a plain callable (``"pkg.mod:func"`` with no options) and the
    application's generator is itself a named module-level callable, the names
    must agree; a chaining generator must use the recorded key fields. Anything
    the name cannot identify (a lambda, a closure, an instance, a factory's
    product) passes.
    """
    if not isinstance(stored, dict):
        return None
    module, options = stored.get("module"), stored.get("options") or {}
    if module == "chaining":
        if not isinstance(generator, ChainingKeyGenerator) or not isinstance(options, dict):
            return None
        mine = generator.options()
        for field in ("primary", "secondary"):
            if field in options and options[field] != mine[field]:
                return f"the store records chaining {field} {options[field]!r}, got {mine[field]!r}"
        return None
    described = describe_generator(generator)
    if not isinstance(module, str) or options or described is None:
        return None
    if described["module"] != module:
        return f"the store records key generator {module!r}, got {described['module']!r}"
    return None


def describe_generator(generator: object) -> dict[str, Any] | None:
    """The stored description of a generator, or None when it cannot be recreated by name."""
    if isinstance(generator, ChainingKeyGenerator):
        return {"module": "chaining", "options": generator.options()}
    module = getattr(generator, "__module__", None)
    qualname = getattr(generator, "__qualname__", None)
    if module and qualname and "<" not in qualname and module != "__main__":
        return {"module": f"{module}:{qualname}", "options": {}}
    return None


class AttachedKeyGenerator:
    """A topic's custom key generator: the application's callable, attached by the store.

    Public so that the store can hold one per topic; applications attach
    through ``SowStore`` and ``create_topic``, not through this class.

    A store file records a generator by name only; the callable comes from
    ``create_topic(key_generator=)``, ``SowStore(key_generators=)`` or the XML
    config. Until one is attached, deriving a key raises a ``ConfigError`` that
    says how to attach it; reading the topic never needs one.
    """

    __slots__ = ("spec", "target", "topic")

    def __init__(self, topic: str, spec: Mapping[str, Any]) -> None:
        self.topic = topic
        self.spec = spec
        self.target: Callable[[Any], str] | None = None

    def attach(self, generator: Callable[[Any], str]) -> None:
        """Use ``generator`` from now on.

        Raises:
            ConfigError: the name the store file records contradicts it.
        """
        conflict = generator_name_conflict(self.spec, generator)
        if conflict is not None:
            raise ConfigError(f"key_generator of topic {self.topic!r}", conflict)
        self.target = generator

    def __call__(self, doc: Any) -> str:
        target = self.target
        if target is None:
            raise ConfigError("key_generator", self._missing())
        return target(doc)

    def _missing(self) -> str:
        module = self.spec.get("module")
        options = self.spec.get("options")
        if module == "chaining" and isinstance(options, dict) and options.get("file_name"):
            what = f"the chaining key generator with chain file {options['file_name']!r}"
        elif isinstance(module, str):
            what = f"the key generator {module!r}"
        else:
            what = "a custom key generator"
        return (
            f"topic {self.topic!r} was created with {what}; a store file never names code"
            " to run (or a file to write), so the application attaches the generator before"
            f" publishing: SowStore(path, key_generators={{{self.topic!r}: generator}}) or"
            f" store.create_topic({self.topic!r}, key_generator=generator)"
        )
