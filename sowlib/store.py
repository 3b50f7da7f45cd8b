"""SowStore: a directory of topics keyed by (name, message type), its writer lock and config.

Composes topics, storage logs and key generators; ``spark`` sits above it.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from sowlib.codecs import get_codec
from sowlib.config import TopicConfig, check_file_name, expand_file_name
from sowlib.config.message_types import register_message_types
from sowlib.errors import (
    CloseError,
    ConfigError,
    FormatVersionError,
    ReadOnlyError,
    SowError,
    StoreClosedError,
    StoreNotFoundError,
    StorePathError,
    TopicExistsError,
    UnknownTopicError,
    UnsupportedOperationError,
)
from sowlib.expr import Filter
from sowlib.gcpause import paused_gc
from sowlib.journal import FollowedJournal, Journal, store_journal
from sowlib.keys import (
    AttachedKeyGenerator,
    describe_generator,
    key_generator_map,
    stored_key_generator,
)
from sowlib.progress import ProgressArg
from sowlib.query import Record
from sowlib.reconfigure import (
    check_message_types,
    check_recovery_point,
    reopen_with,
    store_dir_for,
    trusted_generator,
)
from sowlib.storage import AppendLog, WriterLock
from sowlib.storage.memory import MemoryLog
from sowlib.storage.recovery import read_header
from sowlib.store_files import (
    SUFFIX,
    TopicFiles,
    TopicPattern,
    os_errors,
    store_path,
    topic_file_name,
)
from sowlib.topic import Topic
from sowlib.views import DerivedTopics, grouped_sow

__all__ = ["SowStore", "topic_file_name"]

_readers: dict[str, SowStore] = {}
_readers_lock = threading.Lock()


class SowStore(DerivedTopics):
    """A set of SOW topics in one directory (or in memory when ``path`` is None).

    One writer process per directory (an exclusive lock); any number of
    ``readonly=True`` openers that :meth:`refresh` to see new writes. A store
    pickles as "reopen this path read-only", so Spark UDF closures can carry one.

    Example:
        >>> with SowStore() as store:
        ...     t = store.create_topic("orders", keys=["/orderId"])
        ...     _ = t.publish({"orderId": 1, "price": 5})
        ...     len(t)
        1
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        readonly: bool = False,
        clock: Callable[[], float] = time.time,
        fs: Any = None,
        key_generators: Mapping[str, Callable[[Any], str]] | None = None,
        cache_bytes: int | None = None,
        progress: ProgressArg = None,
    ) -> None:
        """Open (or create) the store at ``path``; None keeps it in memory.

        Args:
            path: the store directory.
            readonly: open as a reader (any number per directory, no lock).
            clock: seconds since the epoch, for expiration and ``FileName`` tokens.
            fs: the injectable file-system object of the storage layer (tests).
            key_generators: the application's key generators by topic name, for
                topics created with a custom generator (a store file records a
                generator by name only and never names code to run). Reading
                never needs one; publishing to such a topic without one raises
                ``ConfigError``. A pattern topic's member also finds the generator
                under the pattern topic's name.
            cache_bytes: each topic's budget for cached records (None: the default,
                8 MiB; 0: no cache). ``create_topic(cache_bytes=)`` overrides it.
            progress: ``(done, total)``, True or a tqdm bar (:mod:`sowlib.progress`) while
                a topic rebuilds its indexes as it opens (after a crash, or saved ones unusable).
        Raises:
            StorePathError: the OS refused the path (permissions, a file in the way).
            StoreNotFoundError: a read-only open of a missing directory.
            StoreLockedError: another writer holds the directory.
            ConfigError: a bad argument.
        """
        self.path = None if path is None else store_path(path)
        self.readonly = readonly
        self.clock = clock
        self.cache_bytes = cache_bytes
        self._progress = progress
        self._fs = fs
        self._lock = threading.RLock()
        self._topics: dict[tuple[str, str], Topic] = {}
        self._disk: dict[int, bool] = {}  # ids of topics opened from files, not yet redefined
        self._slots: dict[tuple[str, str], AttachedKeyGenerator] = {}
        self._key_generators = key_generator_map(key_generators)
        self._files: set[str] = set()
        self._topic_files = TopicFiles()  # the directory walk of _open_existing
        self._writer_lock: WriterLock | None = None
        self._closed = False
        self.journal: Journal | FollowedJournal | None = None  # from_config opened it
        if self.path is None:
            if readonly:
                raise ConfigError("readonly", "a memory-only store cannot be opened read-only")
            return
        if readonly:
            if not os.path.exists(self.path):
                raise StoreNotFoundError(self.path)
            if not os.path.isdir(self.path):
                raise StorePathError(self.path, "open the store", "not a directory")
        else:
            with os_errors(self.path, "create the store directory"):
                os.makedirs(self.path, exist_ok=True)
            with os_errors(self.path, "lock the store"):
                self._writer_lock = WriterLock(self.path)
        try:
            with os_errors(self.path, "open the store"):
                self._open_existing()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ opening

    def _open_existing(self) -> None:
        assert self.path is not None
        files = self._topic_files.changed(self.path)
        if files is None:
            return  # no directory changed since the last walk
        for full in files:
            if full not in self._files:  # a restart: edited definitions apply
                self._disk[id(self._open_file(full))] = True
        self.open_saved_derived()  # the views and conflated topics made in Python

    def _open_log(self, full: str) -> tuple[TopicConfig, AppendLog]:
        # Config first: a writer's open consumes the checkpoint; open once, with its sync/slab.
        try:
            config = TopicConfig.from_dict(json.loads(read_header(full).meta))
        except (ValueError, TypeError, RecursionError) as exc:
            raise FormatVersionError(full, "unreadable topic metadata", "sowlib topic") from exc
        sync = config.durability == "sync" and not self.readonly
        options: dict[str, Any] = {"sync": sync, "slab_size": config.slab_size, "fs": self._fs}
        log = AppendLog(full, readonly=self.readonly, looks=self._topic_files.looks, **options)
        return config, log

    def _open_file(self, full: str) -> Topic:
        # One pause for the recovery walk and the key map built from it: the
        # walk's tuples are dropped before the collector could look at them.
        with paused_gc():
            config, log = self._open_log(full)
            topic = Topic(
                config,
                log,
                clock=self.clock,
                readonly=self.readonly,
                key_generator=self._generator_for(config),
                cache_bytes=self.cache_bytes,
                progress=self._progress,
                reopen=functools.partial(self._open_log, full) if self.readonly else None,
            )
        self._topics[(config.name, config.message_type)] = topic
        self._files.add(full)
        return topic

    def _generator_for(self, config: TopicConfig) -> Callable[[Any], str] | None:
        """The generator a topic derives custom keys with; never code a file names.

        The application's callable (``config.key_generator``, set by
        ``create_topic`` or the XML config, else the ``key_generators`` mapping)
        or, for the built-in chaining generator, one rebuilt from plain data.
        """
        spec = config.options.get("key_generator")
        supplied: Callable[[Any], str] | None = None
        if callable(config.key_generator):
            supplied = config.key_generator
        if supplied is None:
            supplied = self._key_generators.get(config.name)
            pattern = config.options.get("pattern_of")
            if supplied is None and isinstance(pattern, str):
                supplied = self._key_generators.get(pattern)
        if spec is None:
            if supplied is not None:
                has = "key fields" if config.keys else "publisher-supplied keys"
                raise ConfigError(
                    f"key_generators[{config.name!r}]",
                    f"topic {config.name!r} has {has} and takes no key generator",
                )
            return None
        slot = AttachedKeyGenerator(config.name, spec if isinstance(spec, Mapping) else {})
        if supplied is None:
            supplied = stored_key_generator(spec, domain=config.domain, topic=config.name)
        if supplied is not None:
            slot.attach(supplied)
        self._slots[(config.name, config.message_type)] = slot
        return slot

    @classmethod
    def from_config(
        cls,
        source: str | os.PathLike[str] | bytes,
        *,
        base_dir: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> SowStore:
        """Open a store holding the topics of an AMPS ``<SOW>`` configuration.

        A ``<TransactionLog>`` opens its journal, owned as :attr:`journal` (writers only).
        Args:
            source: an AMPS config file path or its XML text.
            base_dir: the store directory (None: the config file's; memory if all transient).
            env: extra variables for ``${NAME}`` expansion.
        Raises:
            ConfigError: naming the bad element, or an edit a stored topic cannot take.
        """
        from sowlib.config import load_config

        register_message_types(source, env)  # <MessageTypes>: before any topic opens
        configs = [trusted_generator(c) for c in load_config(source, base_dir=base_dir, env=env)]
        store = cls(store_dir_for(source, base_dir, configs), **kwargs)
        try:
            for config in check_message_types(store.topics(), configs):
                store._add_topic(config)
            store.journal = store_journal(source, store, base_dir, env)
            store.open_derived_topics()  # views and conflated topics follow their topics
        except BaseException:
            store.close()
            raise
        return store

    # ------------------------------------------------------------------ topics

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"store {self.path or '<memory>'}")

    def create_topic(
        self,
        name: str,
        *,
        message_type: str = "json",
        keys: Iterable[str] | str | None = None,
        key_domain: str | None = None,
        key_generator: Callable[[Any], str] | None = None,
        durability: str = "persistent",
        expiration: str | float | None = None,
        slab_size: str | int = 1 << 20,
        hash_indexes: Iterable[Iterable[str]] | None = None,
        indexes: Iterable[str] | str | None = None,
        history: str | float | Mapping[str, Any] | None = None,
        file_name: str | None = None,
        auto_compact: float | None = 0.3,
        options: Mapping[str, Any] | None = None,
        cache_bytes: int | None = None,
    ) -> Topic:
        """Create a topic, or return the existing one when its configuration is the same.

        See :class:`~sowlib.config.TopicConfig` for the arguments (AMPS units
        such as ``"30s"`` and ``"1MB"`` are accepted); ``cache_bytes`` is the
        topic's budget for cached records (default: the store's).

        Raises:
            ConfigError: a bad argument. TopicExistsError: the topic exists with a
            different configuration. ReadOnlyError: a persistent topic on a reader.
        """
        opts = dict(options or {})
        if key_generator is None and not keys and isinstance(name, str):
            key_generator = self._key_generators.get(name)
        if key_generator is not None:
            if keys:
                raise ConfigError("key_generator", "give keys or a key_generator, not both")
            if not callable(key_generator):
                raise ConfigError("key_generator", f"{key_generator!r} is not callable")
            opts["key_generator"] = describe_generator(key_generator) or {"module": None}
        config = TopicConfig.make(
            name,
            message_type=message_type,
            keys=keys,
            key_domain=key_domain,
            key_generator=key_generator,
            durability=durability,
            expiration=expiration,
            slab_size=slab_size,
            hash_indexes=hash_indexes,
            indexes=indexes,
            history=history,
            file_name=file_name,
            auto_compact=auto_compact,
            options=opts,
        )
        return self._add_topic(config, cache_bytes)

    def _add_topic(self, config: TopicConfig, cache_bytes: int | None = None) -> Topic:
        with self._lock:
            self._check_open()
            codec = get_codec(config.message_type)  # unknown type -> ConfigError, nothing written
            if not codec.supports_filter and (config.keys or config.hash_indexes or config.indexes):
                raise ConfigError(
                    "keys",
                    f"{config.message_type} messages cannot be parsed, so a {config.message_type}"
                    " topic has no key fields or indexes: publishers supply sow_key=",
                )
            check_recovery_point(config)  # a journal refills the topic from it
            existing = self._topics.get((config.name, config.message_type))
            if existing is not None:
                if self._disk.pop(id(existing), False) and not self.readonly:
                    existing = reopen_with(existing, config, self._open_file, self._fs)
                if existing.config != config:
                    raise TopicExistsError(
                        config.name,
                        "its stored configuration differs; open it with store.topic(name)",
                    )
                if callable(config.key_generator):
                    slot = self._slots.get((config.name, config.message_type))
                    if slot is None:
                        raise TopicExistsError(
                            config.name, "it was created without a custom key generator"
                        )
                    slot.attach(config.key_generator)  # re-attach the application's generator
                return existing
            if self.readonly and config.durability != "transient":  # a reader writes no file
                raise ReadOnlyError(f"store {self.path}", "create a topic")
            generator = self._generator_for(config)
            if self.path is None or config.durability == "transient":
                log: Any = MemoryLog(json.dumps(config.to_dict()).encode())
            else:
                full = self._path_for(config)
                if full in self._files:
                    raise ConfigError("file_name", f"{full} already holds another topic")
                with os_errors(full, "create the topic file"):
                    log = AppendLog(
                        full,
                        meta=json.dumps(config.to_dict()).encode(),
                        slab_size=config.slab_size,
                        sync=config.durability == "sync",
                        fs=self._fs,
                    )
                self._files.add(full)
            budget = self.cache_bytes if cache_bytes is None else cache_bytes
            topic = Topic(
                config, log, clock=self.clock, key_generator=generator, cache_bytes=budget
            )
            self._topics[(config.name, config.message_type)] = topic
            return topic

    def _path_for(self, config: TopicConfig) -> str:
        assert self.path is not None
        if config.file_name:
            rel = expand_file_name(
                config.file_name, config.name, config.message_type, time.gmtime(self.clock())
            )
            full = os.path.abspath(os.path.join(self.path, rel))
            if not full.startswith(self.path + os.sep):
                raise ConfigError("FileName", f"{config.file_name!r} leaves the store directory")
            if not full.endswith(SUFFIX):
                full += SUFFIX
            check_file_name(full, "FileName")
            with os_errors(os.path.dirname(full), "create the directory of"):
                os.makedirs(os.path.dirname(full), exist_ok=True)
            return full
        return os.path.join(self.path, topic_file_name(config.name, config.message_type))

    def topic(self, name: str, message_type: str | None = None) -> Topic:
        """The existing topic ``name``; with several message types, pass ``message_type``.

        Raises:
            UnknownTopicError: no such topic.
        """
        with self._lock:
            self._check_open()
            if message_type is not None:
                found = self._topics.get((name, message_type.lower()))
                if found is None:
                    found = self._pattern_member(name, message_type.lower())
                if found is None:
                    raise UnknownTopicError(name, message_type)
                return found
            matches = [t for (n, _), t in self._topics.items() if n == name]
            if len(matches) == 1:
                return matches[0]
            if not matches:
                member = self._pattern_member(name, None)
                if member is None:
                    raise UnknownTopicError(name)
                return member
            if (name, "json") in self._topics:
                return self._topics[(name, "json")]
            raise UnknownTopicError(name, "pass message_type= (several exist)")

    def _pattern_member(self, name: str, message_type: str | None) -> Topic | None:
        """A regular-expression topic (spec §6.6): a concrete name matching a
        ``Pattern`` topic becomes its own topic with the pattern topic's settings."""
        for (_, mtype), template in list(self._topics.items()):
            pattern = template.config.options.get("pattern")
            if pattern is None or (message_type is not None and mtype != message_type):
                continue
            if TopicPattern(pattern, f"Pattern of topic {template.name!r}").fullmatch(name):
                options = {k: v for k, v in template.config.options.items() if k != "pattern"}
                options["pattern_of"] = template.name
                config = attrs.evolve(template.config, name=name, options=options, file_name=None)
                if self.readonly:
                    return None
                return self._add_topic(config)
        return None

    def __getitem__(self, name: str) -> Topic:
        return self.topic(name)

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _ in self._topics)

    def topics(self) -> list[Topic]:
        """Every topic, in the order they were opened or created."""
        with self._lock:
            self._check_open()
            return list(self._topics.values())

    def __iter__(self) -> Iterator[Topic]:
        return iter(self.topics())

    def sow(
        self,
        topic_regex: str,
        filter: str | Filter | None = None,
        **options: Any,
    ) -> list[Record]:
        """Query every topic whose name matches the regular expression ``topic_regex``.

        Results come topic by topic in creation order; each record names its topic.
        With ``projection=[...]`` (and ``grouping=[...]``) each topic answers one
        aggregated record per group (see :meth:`sow_aggregate`).

        Raises:
            FilterError: a bad filter.
            QueryOptionError: a bad query option.
            ConfigError: a bad regular expression, one over ``MAX_TOPIC_REGEX``
                characters, or one that spent ``TOPIC_REGEX_SECONDS`` matching names.
        """
        pattern = TopicPattern(topic_regex, "topic_regex")
        out: list[Any] = []
        for topic in pattern.select((t.name, t) for t in self.topics()):
            if "projection" in options or "grouping" in options:  # aggregated: one per group
                out.extend(grouped_sow(topic, filter, options))
            else:
                out.extend(topic.sow(filter, **options))
        return out

    def process_expirations(self) -> int:
        """Expire every due record in every topic now; returns how many."""
        return sum(t.process_expirations() for t in self.topics())

    def refresh(self) -> int:
        """Read-only stores: pick up what the writer appended (new topics too).

        Returns the number of records applied. A topic the writer compacted continues
        on the new file: handles got before stay valid.
        """
        with self._lock:
            self._check_open()
            # after a compaction, a topic continues on the new file
            topics = tuple(self._topics.values())
            applied, walk = self._topic_files.refresh_all(self.path, topics)
            if walk and self.path is not None:
                before = len(self._topics)
                with os_errors(self.path, "refresh the store"):
                    self._open_existing()
                for topic in list(self._topics.values())[before:]:
                    applied += len(topic)
            return applied

    def stats(self) -> dict[str, Any]:
        """Per-topic statistics (see :meth:`Topic.stats`)."""
        return {f"{t.name} ({t.message_type})": t.stats() for t in self.topics()}

    def check(self) -> None:
        """Assert every invariant of every topic."""
        for topic in self.topics():
            topic.check()

    def flush(self) -> None:
        """msync + fsync every topic: returned publishes survive power loss."""
        for topic in self.topics():
            topic.flush()

    def close(self) -> None:
        """Close every topic (writing checkpoints) and release the lock; idempotent.

        Every topic is closed and the writer lock released even when one close fails
        (a full disk, say); the first error is raised afterwards, and a second ``close``
        is a no-op.

        Raises:
            CloseError: a checkpoint could not be built (the next open scans the log).
            StoreFullError, StorePathError: a topic's flush or checkpoint failed (its
                acknowledged records are in the page cache and survive the process).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._close_derived()  # the timer thread and the views' subscriptions
            failure: BaseException | None = None
            try:
                if self.journal is not None:
                    self.journal.close()
                for topic in self._topics.values():
                    try:
                        topic.close()
                    except SowError as exc:
                        failure = failure or exc
                    except Exception as exc:  # every topic must close, whatever one raised
                        reason = f"{type(exc).__name__}: {exc}"[:500]
                        failure = failure or CloseError(topic.path, reason)
                        failure.__cause__ = exc
            finally:
                if self._writer_lock is not None:
                    self._writer_lock.release()
            if failure is not None:
                raise failure

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> SowStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        if self.path is None:
            raise UnsupportedOperationError("pickling", "a memory-only store has no path to reopen")
        return (open_reader, (self.path,))

    def _repr_html_(self) -> str:
        """Notebooks: the topics with their record counts and file sizes."""
        from sowlib.display import store_html  # only notebooks need the HTML view

        return store_html(self)

    def __repr__(self) -> str:
        mode = "readonly" if self.readonly else "writer"
        return f"<SowStore {self.path or '<memory>'} {mode} topics={len(self._topics)}>"


def open_reader(path: str) -> SowStore:
    """A read-only store for ``path``, cached per process and refreshed on reuse.

    This is what an unpickled :class:`SowStore` is, so Spark tasks reuse one
    reader per worker process instead of reopening the files for every row.
    """
    with _readers_lock:
        store = _readers.get(path)
        if store is not None and not store.closed:
            store.refresh()
            return store
        store = SowStore(path, readonly=True)
        _readers[path] = store
        return store
