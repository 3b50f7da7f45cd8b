"""Read the AMPS ``<TransactionLog>`` section into a :class:`~sowlib.journal.Journal`.

Imports ``errors``, ``units``, ``codecs.xml_codec`` (its hardened parser) and ``journal``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from lxml import etree

from sowlib.codecs.xml_codec import hardened_parser
from sowlib.config.queues import queue_definitions
from sowlib.errors import ConfigError
from sowlib.journal.followed import FollowedJournal
from sowlib.journal.journal import Journal, RestorableTopic
from sowlib.units import parse_size

__all__ = ["journal_from_config", "store_journal"]

# Elements of an AMPS TransactionLog that have no meaning in process; accepted and ignored.
IGNORED = frozenset(
    {
        "JournalArchiveDirectory",
        "PreallocatedJournalFiles",
        "MinJournalSize",
        "FlushInterval",
        "BatchSize",
        "Compression",
        "ClientDurability",
        "InitialLogSize",
    }
)
_SIZES = ("FileSize", "JournalSize")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PATTERN = re.compile(r"[*+?\[\](){}^$|\\]|\.[*+?]")  # what makes a topic a regex


def _tag(element: Any) -> str:
    return str(etree.QName(element).localname)


def _text(element: Any, where: str, env: Mapping[str, str] | None = None) -> str:
    raw = (element.text or "").strip()

    def expand(m: re.Match[str]) -> str:
        value = (env or {}).get(m.group(1), os.environ.get(m.group(1)))
        if value is None:
            raise ConfigError(where, f"environment variable {m.group(1)} is not set")
        return value

    text = _VAR.sub(expand, raw)
    if not text:
        raise ConfigError(where, "empty value")
    return text


def _retention(root: Any) -> str | None:
    """The ``Age`` of an ``amps-action-do-remove-journal`` action, if one is configured."""
    for do in root.iter("{*}Do", "Do"):
        module = next((c for c in do if _tag(c) == "Module"), None)
        if module is None or (module.text or "").strip() != "amps-action-do-remove-journal":
            continue
        for options in (c for c in do if _tag(c) == "Options"):
            for opt in options:
                if _tag(opt) == "Age":
                    return _text(opt, "Actions/Action/Do/Options/Age")
    return None


def _source(source: str | os.PathLike[str] | bytes) -> tuple[bytes, Path | None]:
    """The configuration's bytes and its directory (None for XML text)."""
    if isinstance(source, bytes):
        return source, None
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source.encode("utf-8"), None
    path = Path(os.fspath(source))
    try:
        return path.read_bytes(), path.resolve().parent
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror}") from None


def journal_from_config(
    source: str | os.PathLike[str] | bytes,
    base_dir: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> Journal | None:
    """Open the journal an AMPS configuration's ``<TransactionLog>`` describes.

    ``source`` is a file path, or the XML as text or bytes. ``JournalDirectory``
    is resolved against ``base_dir``, else against the configuration file's
    directory. Each ``<Topic>`` gives a ``Name`` (a name or a regular expression)
    and an optional ``MessageType``. ``FileSize`` (or its older spelling
    ``JournalSize``) sets the size of one journal file; the ``Age`` of an
    ``amps-action-do-remove-journal`` action sets the retention. ``env`` adds
    variables for ``${NAME}`` (else the process environment). ``options`` go to
    :class:`Journal` (``clock``, ``sync``).

    Returns:
        The journal, or None when the configuration has no ``<TransactionLog>``.
    Raises:
        ConfigError: a malformed section, an unknown element, ``FileSize`` and
            ``JournalSize`` that disagree, a relative directory with neither a
            file nor ``base_dir`` to resolve it against.
    """
    section = _section(source, base_dir, env)
    if section is None:
        return None
    full, topics, file_size, retention = section
    return Journal(full, topics, retention=retention, file_size=file_size, **options)


def _section(
    source: str | os.PathLike[str] | bytes,
    base_dir: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
) -> tuple[Path, list[tuple[str, str | None]], int, str | None] | None:
    """The ``<TransactionLog>``'s directory, topics, file size and retention (None: no
    section)."""
    data, here = _source(source)
    try:
        root = etree.fromstring(data, hardened_parser())
    except etree.XMLSyntaxError as exc:
        raise ConfigError("configuration", f"not well-formed XML: {exc}") from None
    sections = [e for e in root.iter() if isinstance(e.tag, str) and _tag(e) == "TransactionLog"]
    if not sections:
        return None
    if len(sections) > 1:
        raise ConfigError("TransactionLog", "more than one <TransactionLog> section")
    directory: str | None = None
    sizes: dict[str, str] = {}
    topics: list[tuple[str, str | None]] = []
    for child in sections[0]:
        if not isinstance(child.tag, str):
            continue
        tag = _tag(child)
        where = f"TransactionLog/{tag}"
        if tag == "JournalDirectory":
            directory = _text(child, where, env)
        elif tag in _SIZES:
            sizes[tag] = _text(child, where, env)
        elif tag == "Topic":
            topics.append(_topic(child, where, env))
        elif tag not in IGNORED:
            raise ConfigError(where, "unknown element")
    if directory is None:
        raise ConfigError("TransactionLog/JournalDirectory", "required")
    if not topics:
        raise ConfigError("TransactionLog/Topic", "name at least one topic to record")
    file_size = _file_size(sizes)
    base = Path(os.fspath(base_dir)) if base_dir is not None else here
    full = Path(directory)
    if not full.is_absolute():
        if base is None:
            raise ConfigError(
                "TransactionLog/JournalDirectory",
                f"{directory!r} is relative; pass base_dir= to say where it is",
            )
        full = base / full
    return full, topics, file_size, _retention(root)


def _topic(element: Any, where: str, env: Mapping[str, str] | None) -> tuple[str, str | None]:
    name = mtype = None
    for part in element:
        if not isinstance(part.tag, str):
            continue
        ptag = _tag(part)
        if ptag in ("Name", "Topic"):
            name = _text(part, f"{where}/{ptag}", env)
        elif ptag == "MessageType":
            mtype = _text(part, f"{where}/MessageType", env)
        else:
            raise ConfigError(f"{where}/{ptag}", "unknown element")
    if name is None:
        raise ConfigError(where, "a <Topic> needs a <Name>")
    return name, mtype


def _file_size(sizes: Mapping[str, str]) -> int:
    """One journal file's size from ``FileSize`` and/or ``JournalSize`` (default 64MB)."""
    parsed = {tag: parse_size(text, f"TransactionLog/{tag}") for tag, text in sizes.items()}
    if len(set(parsed.values())) > 1:
        raise ConfigError(
            "TransactionLog/JournalSize",
            f"{sizes['JournalSize']!r} disagrees with FileSize {sizes['FileSize']!r}"
            " (both set the size of one journal file; give one)",
        )
    return next(iter(parsed.values()), 64 << 20)


class _Store(Protocol):
    readonly: bool
    clock: Callable[[], float]

    def topics(self) -> Sequence[RestorableTopic]: ...


def store_journal(
    source: str | os.PathLike[str] | bytes,
    store: _Store,
    base_dir: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Journal | FollowedJournal | None:
    """The journal a store opened from ``source`` owns, already recording its topics.

    ``SowStore.from_config`` calls it. A read-only store gets the writer's journal
    followed read-only (:class:`~sowlib.journal.followed.FollowedJournal`: replay and
    live bookmark subscriptions, nothing written); a configuration without
    ``<TransactionLog>`` gives none.
    The journal uses the store's clock; journalled topics are first brought in
    line with the journal (:meth:`Journal.watch`).
    """
    queues = queue_definitions(source, env)  # <Queue>: run by sowlib.queues over the journal
    if store.readonly:
        section = _section(source, base_dir, env)
        if section is None:
            return None
        return FollowedJournal(section[0], section[1], queue_definitions=queues)
    journal = journal_from_config(source, base_dir, env=env, clock=store.clock)
    if journal is None and queues:
        raise ConfigError(f"SOW/Queue {queues[0].name}", "a queue needs a <TransactionLog>")
    if journal is not None:
        try:
            for queue in queues:
                if not _PATTERN.search(queue.topic) and not journal.covers(
                    queue.topic, queue.message_type
                ):
                    raise ConfigError(
                        f"SOW/Queue {queue.name}/UnderlyingTopic",
                        f"{queue.topic!r} is not recorded by the <TransactionLog>",
                    )
            journal.queue_definitions = tuple(queues)
            journal.watch(store)
        except BaseException:
            journal.close()
            raise
    return journal
