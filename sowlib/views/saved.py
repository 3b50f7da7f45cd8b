"""Derived topics made in Python, kept in the store directory: one definition file each.

A view or conflated topic made with ``create_view`` / ``create_conflated_topic`` on a
store with a directory is recorded as ``<topic file name>.derived.json`` beside the
topic files: its topic configuration, the same dict a topic file's header holds
(``TopicConfig.to_dict``), with the definition in its ``options``. Any opener of the
directory (a writer, or a read-only process) builds the derived topic again from its
underlying topics. Files are written whole (a temporary file, flushed, then renamed),
so a crash leaves the old definition or the new one. Imports ``config``, ``errors`` and
``store_files``.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from sowlib.config import TopicConfig
from sowlib.errors import ConfigError, FormatVersionError
from sowlib.store_files import SUFFIX, os_errors, topic_file_name

__all__ = [
    "DEFINITION_SUFFIX",
    "definition_file",
    "definition_path",
    "load_definitions",
    "remove_definition",
    "save_definition",
]

#: The ending of a derived topic's definition file.
DEFINITION_SUFFIX = ".derived.json"
_FORMAT = "sowlib-derived-topic"
_VERSION = 1


def definition_path(store_dir: str, config: TopicConfig) -> str:
    """Where the definition of the derived topic ``config`` is kept."""
    return definition_file(store_dir, config.name, config.message_type)


def definition_file(store_dir: str, name: str, message_type: str) -> str:
    """Where the definition of the derived topic ``name`` (``message_type``) is kept."""
    stem = topic_file_name(name, message_type)[: -len(SUFFIX)]
    return os.path.join(store_dir, stem + DEFINITION_SUFFIX)


def save_definition(store_dir: str, config: TopicConfig) -> None:
    """Write the definition of ``config`` (replacing one of the same name and type).

    Raises:
        StorePathError: the directory refused the file.
    """
    path = definition_path(store_dir, config)
    data = {"format": _FORMAT, "version": _VERSION, "config": config.to_dict()}
    text = json.dumps(data, indent=1, sort_keys=True).encode("utf-8")
    temporary = path + ".tmp"
    with os_errors(path, "save the derived topic's definition"):
        with open(temporary, "wb") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)


def remove_definition(store_dir: str, config: TopicConfig) -> None:
    """Remove the definition of ``config``; none is fine.

    Raises:
        StorePathError: the directory refused the removal.
    """
    path = definition_path(store_dir, config)
    with (
        os_errors(path, "remove the derived topic's definition"),
        contextlib.suppress(FileNotFoundError),  # none kept: nothing to remove
    ):
        os.remove(path)


def load_definitions(store_dir: str) -> list[TopicConfig]:
    """The definitions kept in ``store_dir``, in file-name order.

    Raises:
        FormatVersionError: a definition file that is not one, or of an unknown version.
        ConfigError: a definition file whose configuration is damaged.
        StorePathError: the directory or a file could not be read.
    """
    with os_errors(store_dir, "read the derived topics' definitions"):
        names = sorted(n for n in os.listdir(store_dir) if n.endswith(DEFINITION_SUFFIX))
    configs = []
    for name in names:
        path = os.path.join(store_dir, name)
        with os_errors(path, "read the derived topic's definition"), open(path, "rb") as source:
            raw = source.read()
        configs.append(_parse(path, raw))
    return configs


def _parse(path: str, raw: bytes) -> TopicConfig:
    try:
        data: Any = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise FormatVersionError(path, "not a derived topic definition", _FORMAT)
    if data.get("version") != _VERSION:
        raise FormatVersionError(path, data.get("version"), _VERSION)
    config = data.get("config")
    if not isinstance(config, dict):
        raise ConfigError(path, "the definition holds no topic configuration")
    try:
        parsed = TopicConfig.from_dict(config)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.where}", exc.reason) from None
    options = parsed.options
    if parsed.durability != "transient" or not ("view" in options or "conflated" in options):
        raise ConfigError(path, "the definition is not a view's nor a conflated topic's")
    return parsed
