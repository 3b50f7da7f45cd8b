"""Read the AMPS ``<TransactionLog>`` section into a :class:`~sowlib.journal.Journal`.

Imports ``errors``, ``units``, ``codecs.xml_codec`` (its hardened parser) and ``journal``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from lxml import etree

from sowlib.codecs.xml_codec import hardened_parser
from sowlib.errors import ConfigError
from sowlib.journal.journal import Journal

__all__ = ["journal_from_config"]

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
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _tag(element: Any) -> str:
    return str(etree.QName(element).localname)


def _text(element: Any, where: str) -> str:
    raw = (element.text or "").strip()

    def expand(m: re.Match[str]) -> str:
        value = os.environ.get(m.group(1))
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


def journal_from_config(
    source: str | os.PathLike[str] | bytes,
    base_dir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Journal | None:
    """Open the journal an AMPS configuration's ``<TransactionLog>`` describes.

    ``JournalDirectory`` is resolved against ``base_dir``, else against the
    configuration file's directory. Each ``<Topic>`` gives a ``Name`` (a name or a
    regular expression) and an optional ``MessageType``. ``FileSize`` sets the
    size of one journal file; the ``Age`` of an ``amps-action-do-remove-journal``
    action sets the retention. ``options`` go to :class:`Journal` (``clock``, ``sync``).

    Returns:
        The journal, or None when the configuration has no ``<TransactionLog>``.
    Raises:
        ConfigError: a malformed section, an unknown element, a relative directory
            with neither a file nor ``base_dir`` to resolve it against.
    """
    if isinstance(source, bytes):
        data, here = source, None
    else:
        path = Path(os.fspath(source))
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(str(path), f"cannot read: {exc.strerror}") from None
        here = path.resolve().parent
    try:
        root = etree.fromstring(data, hardened_parser())
    except etree.XMLSyntaxError as exc:
        raise ConfigError("configuration", f"not well-formed XML: {exc}") from None
    sections = [e for e in root.iter() if isinstance(e.tag, str) and _tag(e) == "TransactionLog"]
    if not sections:
        return None
    if len(sections) > 1:
        raise ConfigError("TransactionLog", "more than one <TransactionLog> section")
    section = sections[0]
    directory: str | None = None
    file_size: str = "64MB"
    topics: list[tuple[str, str | None]] = []
    for child in section:
        if not isinstance(child.tag, str):
            continue
        tag = _tag(child)
        where = f"TransactionLog/{tag}"
        if tag == "JournalDirectory":
            directory = _text(child, where)
        elif tag == "FileSize":
            file_size = _text(child, where)
        elif tag == "Topic":
            name = mtype = None
            for part in child:
                ptag = _tag(part)
                if ptag in ("Name", "Topic"):
                    name = _text(part, f"{where}/{ptag}")
                elif ptag == "MessageType":
                    mtype = _text(part, f"{where}/MessageType")
                else:
                    raise ConfigError(f"{where}/{ptag}", "unknown element")
            if name is None:
                raise ConfigError(where, "a <Topic> needs a <Name>")
            topics.append((name, mtype))
        elif tag not in IGNORED:
            raise ConfigError(where, "unknown element")
    if directory is None:
        raise ConfigError("TransactionLog/JournalDirectory", "required")
    if not topics:
        raise ConfigError("TransactionLog/Topic", "name at least one topic to record")
    base = Path(os.fspath(base_dir)) if base_dir is not None else here
    full = Path(directory)
    if not full.is_absolute():
        if base is None:
            raise ConfigError(
                "TransactionLog/JournalDirectory",
                f"{directory!r} is relative; pass base_dir= to say where it is",
            )
        full = base / full
    return Journal(full, topics, retention=_retention(root), file_size=file_size, **options)
