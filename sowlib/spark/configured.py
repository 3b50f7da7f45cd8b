"""Reading a store through its AMPS configuration: the ``sow`` data source's ``config`` option.

A view or a conflated topic is a transient topic: its records exist only in the
process that maintains it, never in the store's files. Opening the configuration
read-only (``SowStore.from_config(..., readonly=True)``) rebuilds its ``<View>`` and
``<ConflatedTopic>`` definitions from the underlying topics' files, so a Spark
worker reads a configuration's view by opening the configuration for the read. A
view made in Python (``create_view``) keeps its definition in the store directory:
every read-only opener of the directory builds it, so it is read through the
process's cached reader (:func:`sowlib.spark.handles.reader`), built once and then
kept current by each read's refresh, with or without the ``config`` option. Imports
``sowlib.store``, ``sowlib.views``, ``sowlib.errors`` and ``.handles``; never pyspark.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager

from sowlib.errors import ConfigError, ReadOnlyError, UnknownTopicError
from sowlib.spark import handles
from sowlib.store import SowStore
from sowlib.topic import Topic
from sowlib.views.join import parse_join
from sowlib.views.saved import definition_file

__all__ = ["config_source", "configured_topic", "kept_view_dir", "read_topic", "readable_topic"]

_MADE_IN_PYTHON = (
    "nor a view made with store.create_view in the store directory (a view made in a"
    " store without a directory exists only in its process)"
)


def config_source(option: str) -> str:
    """What ``SowStore.from_config`` takes for the ``config`` option: XML text as it is,
    a file path made absolute (relative to this process's working directory)."""
    return option if option.lstrip().startswith("<") else os.path.abspath(option)


@contextmanager
def read_topic(
    path: str, config: str | None, name: str, message_type: str
) -> Iterator[Topic | None]:
    """The topic a read of ``path`` names, for the ``with`` block.

    With ``config``: :func:`configured_topic` (``path``, when not empty, is its store
    directory). Without: the topic from the directory's cached reader
    (:func:`sowlib.spark.handles.reader`), or None when there is no directory or no
    such topic (an empty shard, a topic not created yet).
    """
    if config is not None:
        kept = kept_view_dir(config, path or None, name, message_type)
        if kept is not None:  # made in Python: the cached reader keeps it current
            yield readable_topic(handles.reader(kept), name, message_type)
            return
        with configured_topic(config, path or None, name, message_type) as found:
            yield found
        return
    topic: Topic | None = None
    if os.path.isdir(path):
        with contextlib.suppress(UnknownTopicError):  # then the caller says what is missing
            topic = handles.reader(path).topic(name, message_type)
    yield topic


def kept_view_dir(config: str, base_dir: str | None, name: str, message_type: str) -> str | None:
    """The store directory of ``config`` when it keeps the definition of a view (or
    conflated topic) ``name`` made in Python, else None.

    The directory is ``base_dir``, else the configuration file's (what
    ``SowStore.from_config`` opens); XML text without ``base_dir`` has none.
    """
    if base_dir is None:
        if config.lstrip().startswith("<"):
            return None
        base_dir = os.path.dirname(config)
    folder = os.path.abspath(base_dir)
    return folder if os.path.isfile(definition_file(folder, name, message_type)) else None


@contextmanager
def configured_topic(
    config: str, base_dir: str | None, name: str, message_type: str
) -> Iterator[Topic]:
    """The topic or view ``name`` of the store ``config`` describes, opened read-only for
    the ``with`` block; the configuration's views are built from its topics' files.

    Args:
        config: the configuration file (absolute) or its XML text.
        base_dir: the store directory (None: the configuration file's directory).
        name: the topic, view or conflated topic to read.
        message_type: its message type.
    Raises:
        ConfigError: no such topic or view, a transient topic, or a topic of the
            configuration with no file yet. StoreNotFoundError: no store directory.
    """
    try:
        store = SowStore.from_config(config, base_dir=base_dir, readonly=True)
    except ReadOnlyError as exc:
        raise ConfigError(
            "config",
            f"{exc}: a topic of the configuration has no file in the store yet"
            " (open the configuration with a writer first)",
        ) from None
    try:
        yield readable_topic(store, name, message_type)
    finally:
        store.close()


def readable_topic(store: SowStore, name: str, message_type: str) -> Topic:
    """The topic ``name`` of a read-only ``store`` opened from a configuration, when its
    records are in this process: a stored topic, or a view or conflated topic of one.

    Raises:
        ConfigError: no such topic or view; a transient topic (its records live in
            the writer's process), or a view of one.
    """
    try:
        topic = store.topic(name, message_type)
    except UnknownTopicError:
        raise ConfigError(
            "topic",
            f"{name!r} ({message_type}) is no topic or view of the configuration, "
            + _MADE_IN_PYTHON,
        ) from None
    options = topic.config.options
    spec = options.get("view") or options.get("conflated")
    if spec is None:
        sources = [topic]
    else:
        sources = [store.topic(spec["underlying"])]
        if spec.get("join"):
            sources.append(store.topic(parse_join(spec["join"]).right))
    for source in sources:
        if source.config.durability == "transient":
            raise ConfigError(
                "topic",
                f"{name!r} reads the transient topic {source.name!r}, whose records live"
                " only in its writer's process",
            )
    return topic
