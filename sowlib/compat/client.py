"""The AMPS Python client's ``Client`` over an in-process store (no network).

Method names, argument order and defaults follow the real client (spec §17);
every query and subscription takes an optional leading message handler, else
returns a :class:`MessageStream`. Subscriptions live in ``compat.subscribe``.
"""

from __future__ import annotations

import itertools
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from sowlib.compat.command import Command
from sowlib.compat.exceptions import (
    AlreadyConnectedException,
    DisconnectedException,
    MissingFieldsException,
    TimedOutException,
    UsageException,
    translating,
)
from sowlib.compat.hub import Hub
from sowlib.compat.message import Handler, Message, add_camel_case
from sowlib.compat.options import (
    BY_DATA,
    BY_KEYS,
    SOW,
    SOW_DELETE,
    bind_arguments,
    parse_options,
)
from sowlib.compat.registry import hub_for, parse_uri
from sowlib.compat.sending import Sender
from sowlib.compat.settings import Settings
from sowlib.compat.stream import MessageStream
from sowlib.compat.subscribe import Subscriber
from sowlib.errors import QueryOptionError
from sowlib.journal import EPOCH, MOST_RECENT, NOW
from sowlib.results import split_keys
from sowlib.store import SowStore
from sowlib.views.query import aggregated

__all__ = ["Client"]

_ids = itertools.count(1)


def _data(data: str | bytes) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise MissingFieldsException(f"message data must be str or bytes, got {type(data).__name__}")


class Client(Settings, Subscriber, Sender):
    """The AMPS client API over an in-process :class:`~sowlib.store.SowStore`.

    ``connect(uri)`` binds the client to the store :func:`sowlib.compat.attach`
    bound to that URI, else to one in-memory store per URI shared by every
    client of the process (so a publisher and a subscriber meet). The URI's
    message type (``.../amps/json``) picks the topics' type. A publish to a topic
    with no SOW definition is delivered to subscribers and stored nowhere.
    Handlers run synchronously inside the publish that caused them. sowlib
    errors leave the client as the AMPS exception classes (also still ``SowError``).

    Example:
        >>> import sowlib.compat as AMPS
        >>> store = SowStore()
        >>> _ = store.create_topic("orders", keys=["/id"])
        >>> AMPS.attach(store, "tcp://localhost:9007/amps/json")
        >>> client = AMPS.Client("app")
        >>> client.connect("tcp://localhost:9007/amps/json")
        >>> client.logon()
        ''
        >>> client.publish("orders", '{"id": 1, "qty": 7}')
        1
        >>> [m.get_command() for m in client.sow("orders", "/qty > 5")]
        ['group_begin', 'sow', 'group_end']
        >>> AMPS.detach("tcp://localhost:9007/amps/json")
    """

    class Bookmarks:
        """Bookmark constants for :meth:`bookmark_subscribe`."""

        EPOCH = EPOCH
        NOW = NOW
        MOST_RECENT = MOST_RECENT

    def __init__(self, name: str = "sowlib", store: SowStore | None = None) -> None:
        Subscriber.__init__(self)
        Settings.__init__(self)
        Sender.__init__(self)
        self.name = name
        self.uri: str | None = None
        self.message_type: str | None = None
        self._fixed = Hub(store) if store is not None else None
        self._hub: Hub | None = self._fixed
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ session

    def get_name(self) -> str:
        return self.name

    def set_name(self, name: str) -> None:
        self.name = name

    def get_uri(self) -> str:
        return self.uri or ""

    @property
    def store(self) -> SowStore:
        """The store this client reaches (after :meth:`connect`)."""
        return self._need_hub().store

    def _need_hub(self) -> Hub:
        if self._hub is None:
            raise DisconnectedException(f"client {self.name!r} is not connected; call connect()")
        if self._hub.store.closed:
            raise DisconnectedException(f"client {self.name!r}: the store was closed")
        return self._hub

    @translating
    def connect(self, uri: str) -> None:
        """Bind to the store for ``uri``; nothing is opened.

        Raises:
            AlreadyConnectedException: connected already (``disconnect()`` first).
            InvalidURIException: a malformed URI.
        """
        if self.uri is not None:
            raise AlreadyConnectedException(f"client {self.name!r} is connected to {self.uri}")
        _, mtype = parse_uri(uri)
        self._hub = self._fixed or hub_for(uri)
        self.uri, self.message_type = uri, mtype

    def logon(self, timeout: int = 0, authenticator: Any = None, options: str = "") -> str:
        """Accepted: there is nothing to log on to. Returns ``""``.

        An ``authenticator`` (such as :class:`~sowlib.compat.DefaultAuthenticator`)
        is asked for the password of the URI's user and told the logon completed,
        as a server would make the client do; nothing checks the password.
        """
        self._need_hub()
        if authenticator is not None:
            parts = urllib.parse.urlsplit(self.uri or "")
            user, password = parts.username or "", parts.password or ""
            password = authenticator.authenticate(user, password)
            authenticator.completed(user, password, "success")
        return ""

    def disconnect(self) -> None:
        """Unsubscribe everything and forget the URI; the store stays open."""
        self.unsubscribe("all")
        self.uri = None
        self._hub = self._fixed

    close = disconnect

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.disconnect()

    def get_server_version(self) -> int:
        """A fixed AMPS-5.3-like number, for code that branches on it."""
        return 5030000

    def get_server_version_info(self) -> str:
        return "5.3.0.0.sowlib"

    # ------------------------------------------------------------------ publishing

    @translating
    def publish(
        self,
        topic: str,
        data: str | bytes,
        expiration: float | None = None,
        correlation_id: str | bytes | None = None,
        sow_key: str | None = None,
    ) -> int:
        """Publish ``data`` to ``topic``; returns the sequence number.

        A topic with no SOW definition delivers to subscribers and stores nothing.
        """
        seq, _ = self._need_hub().publish(
            topic,
            _data(data),
            self.message_type,
            delta=False,
            expiration=expiration,
            correlation_id=correlation_id,
            sow_key=sow_key,
        )
        return self._published(topic, seq)

    @translating
    def delta_publish(
        self,
        topic: str,
        data: str | bytes,
        expiration: float | None = None,
        sow_key: str | None = None,
        correlation_id: str | bytes | None = None,
    ) -> int:
        """Merge ``data`` into the stored record (spec §12.1); returns the sequence number."""
        seq, _ = self._need_hub().publish(
            topic,
            _data(data),
            self.message_type,
            delta=True,
            expiration=expiration,
            correlation_id=correlation_id,
            sow_key=sow_key,
        )
        return self._published(topic, seq)

    def _published(self, topic: str, seq: int) -> int:
        """Count a publish in the publish store, if one is set; returns ``seq``."""
        store = self.get_publish_store()
        if store is not None:
            store.store(Message("publish", topic, sequence=seq))
        return seq

    @translating
    def publish_flush(self, timeout: int = 0, ack_type: str | None = None) -> None:
        """Make every publish durable (store and journal fsync); ``timeout`` in
        milliseconds (0: wait as long as it takes).

        Every publish has been processed when it returned, so what is waited for is the
        durability. With a timeout the flush runs on a thread of its own; when it has
        not finished in time the call raises and the flush goes on in the background.

        Raises:
            TimedOutException: the flush did not finish within ``timeout`` ms.
            UsageException: a timeout that is not a non-negative number of milliseconds.
        """
        del ack_type  # processed and persisted are one and the same in process
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
            raise UsageException(f"publish_flush: timeout {timeout!r} is not a number of ms")
        hub = self._need_hub()

        def flush() -> None:
            hub.store.flush()
            if hub.journal is not None:
                hub.journal.flush()

        if not timeout:
            flush()
            return
        done = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            try:
                flush()
            except BaseException as exc:  # handed to the caller below, if it still waits
                failed.append(exc)
            finally:
                done.set()

        threading.Thread(target=run, name="sowlib-publish-flush", daemon=True).start()
        if not done.wait(timeout / 1000):
            raise TimedOutException(
                f"publish_flush: the store did not finish flushing within {timeout} ms"
                " (the flush goes on in the background)"
            )
        if failed:
            raise failed[0]

    flush = publish_flush

    # ------------------------------------------------------------------ queries

    @translating
    def sow(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """``sow([on_message,] topic, filter=None, batch_size=10, timeout=0, top_n=None,
        order_by=None, bookmark=None, options=0)``.

        Returns a stream of ``group_begin``, one ``sow`` message per record and
        ``group_end``; with a handler, calls it for each and returns the query id.
        ``options`` may carry ``skip_n=N``, ``top_n=N``, ``select=[...]``, and
        ``projection=[...]`` with ``grouping=[...]`` (one aggregated message per group).
        """
        handler, a = bind_arguments(SOW, args, kwargs)
        return self._sow(handler, a, sow_keys=None, query_id=None, acks=())

    def _sow(
        self,
        handler: Handler | None,
        a: dict[str, Any],
        *,
        sow_keys: str | None,
        query_id: str | None,
        acks: tuple[str, ...],
    ) -> MessageStream | str:
        opts = parse_options(a["options"])
        for name in ("oof", "no_empties"):
            if name in opts:
                raise QueryOptionError("options", name, "not valid for sow")
        hub = self._need_hub()
        queue = self._queue(hub, a["topic"])
        topics = [] if queue is not None else hub.require_sow(a["topic"], self.message_type, "sow")
        query_id = query_id or f"q{next(_ids)}"
        records: list[Any] = []
        for topic in topics:
            grouped = "projection" in opts or "grouping" in opts  # an aggregated query
            sow = aggregated(topic, opts) if grouped else topic.sow
            got = sow(
                a["filter"],
                order_by=a["order_by"],
                top_n=opts.get("top_n", a["top_n"]),
                skip_n=opts.get("skip_n"),
                sow_keys=split_keys(sow_keys),
                bookmark=a["bookmark"] or None,
                select=opts.get("select"),
            )
            records += [(topic.name, r) for r in got]
        ids = {"query_id": query_id, "command_id": query_id}
        messages = [Message("ack", a["topic"], ack_type="processed", status="success", **ids)]
        messages = [m for m in messages if "processed" in acks]
        messages.append(Message("group_begin", a["topic"], **ids))
        messages += [Message.from_record(r, name, query_id) for name, r in records]
        found = [] if queue is None else self._queue_browse(queue, a["filter"], query_id)
        messages += found
        messages.append(Message("group_end", a["topic"], **ids))
        counts = {
            "matches": len(records) + len(found),
            "records_returned": len(records) + len(found),
        }
        for ack in ("stats", "completed"):
            if ack in acks:
                messages.append(
                    Message("ack", a["topic"], ack_type=ack, status="success", **counts, **ids)
                )
        if handler is not None:
            for message in messages:
                self._call(handler, message)
            return query_id
        stream = MessageStream(sub_id=query_id, live=False)
        for message in messages:
            stream.put(message)
        stream.finish()
        return stream

    # ------------------------------------------------------------------ deletes

    def _ack(
        self, handler: Handler | None, topic: str, counts: tuple[int, int, int], keys: str = ""
    ) -> Message | str:
        deleted, matches, examined = counts
        query_id = f"q{next(_ids)}"
        ack = Message(
            "ack",
            topic,
            ack_type=Message.AckType.Stats,
            status="success",
            matches=matches,
            topic_matches=examined,
            records_deleted=deleted,
            sow_keys=keys or None,
            query_id=query_id,
            command_id=query_id,
        )
        if handler is None:
            return ack
        self._call(handler, ack)
        return query_id

    def _delete(self, name: str, how: Callable[[Any], Any]) -> tuple[int, int, int]:
        topics = self._need_hub().require_sow(name, self.message_type, "sow_delete")
        deleted = matches = examined = 0
        for topic in topics:
            result = how(topic)
            deleted += int(result.records_deleted)
            matches += int(result.matches)
            examined += int(result.topic_matches)
        return deleted, matches, examined

    @translating
    def sow_delete(self, *args: Any, **kwargs: Any) -> Message | str:
        """``sow_delete([on_message,] topic, filter=None, timeout=0)``: delete the matches.

        Returns a ``stats`` acknowledgement (``get_matches()``, ``get_records_deleted()``);
        a None filter deletes everything, as ``1=1`` does. ``topic`` may be a regex.
        """
        handler, a = bind_arguments(SOW_DELETE, args, kwargs)
        flt = a["filter"] or "1=1"
        return self._ack(handler, a["topic"], self._delete(a["topic"], lambda t: t.sow_delete(flt)))

    @translating
    def sow_delete_by_keys(self, *args: Any, **kwargs: Any) -> Message | str:
        """``sow_delete_by_keys([on_message,] topic, keys, timeout=0)``; comma-separated keys."""
        handler, a = bind_arguments(BY_KEYS, args, kwargs)
        keys = a["keys"]
        counts = self._delete(a["topic"], lambda t: t.sow_delete_by_keys(keys))
        return self._ack(handler, a["topic"], counts, keys)

    @translating
    def sow_delete_by_data(self, *args: Any, **kwargs: Any) -> Message | str:
        """``sow_delete_by_data([on_message,] topic, data, timeout=0)``: delete data's record."""
        handler, a = bind_arguments(BY_DATA, args, kwargs)
        data = _data(a["data"])
        counts = self._delete(a["topic"], lambda t: t.sow_delete_by_data(data))
        return self._ack(handler, a["topic"], counts)

    def _delete_keys_matching(
        self, handler: Handler | None, topic: str, flt: str | None, keys: str
    ) -> Message | str:
        """A sow_delete with SowKeys (and maybe a filter): only those keys that match."""

        def how(t: Any) -> Any:
            if not flt:
                return t.sow_delete_by_keys(keys)
            chosen = [r.sow_key for r in t.sow(flt, sow_keys=split_keys(keys))]
            return t.sow_delete_by_keys(chosen)

        return self._ack(handler, topic, self._delete(topic, how), keys)

    # ------------------------------------------------------------------ commands

    @translating
    def execute(self, command: Command) -> MessageStream:
        """Run ``command`` and return its messages as a stream (AMPS ``execute``)."""
        got = self._run(command, None)
        if isinstance(got, MessageStream):
            return got
        stream = MessageStream(sub_id=command.get_command_id(), live=False)
        for message in got if isinstance(got, list) else [got] if isinstance(got, Message) else []:
            stream.put(message)
        stream.finish()
        return stream

    @translating
    def execute_async(self, command: Command, on_message: Handler | None = None) -> str:
        """Run ``command``, delivering its messages to ``on_message``; returns the command id."""
        if on_message is None:
            self._run(command, None)
            return command.get_command_id()
        got = self._run(command, on_message)
        if isinstance(got, str):
            return got
        for message in got if isinstance(got, list) else [got]:
            self._call(on_message, message)
        return command.get_command_id()

    def _call(self, handler: Handler, message: Message) -> None:
        """Run a query's handler: its exception goes to the exception listener when
        one is set (as for subscriptions), else to the caller."""
        listener = self.get_exception_listener()
        if listener is None:
            handler(message)
            return
        try:
            handler(message)
        except Exception as exc:
            listener(exc)

    def _run(self, command: Command, handler: Handler | None) -> Any:
        f = dict(command.fields)
        name = command.get_command()
        lead = (handler,) if handler is not None else ()
        topic = f.get("topic", "")
        cid = command.get_command_id()
        if name in ("publish", "delta_publish"):
            if not topic or "data" not in f:
                raise MissingFieldsException(f"{name} needs set_topic and set_data")
            seq, mark = self._need_hub().publish(
                topic,
                _data(f["data"]),
                self.message_type,
                delta=name == "delta_publish",
                expiration=f.get("expiration"),
                correlation_id=f.get("correlation_id"),
                sow_key=f.get("sow_key"),
            )
            self._published(topic, seq)
            return Message(
                "ack",
                topic,
                ack_type=Message.AckType.Processed,
                status="success",
                sequence=seq,
                bookmark=mark or str(seq),
                command_id=cid,
            )
        if name == "flush":
            self.publish_flush()
            return Message("ack", "", ack_type="completed", status="success", command_id=cid)
        if name == "unsubscribe":
            self.unsubscribe(f.get("sub_id") or "all")
            return []
        options = f.get("options")
        if f.get("skip_n") is not None:
            options = ",".join(p for p in (options, f"skip_n={f['skip_n']}") if p)
        if name == "sow":
            a = dict(
                topic=topic,
                filter=f.get("filter"),
                top_n=f.get("top_n"),
                order_by=f.get("order_by"),
                bookmark=f.get("bookmark"),
                options=options or 0,
            )
            qid = f.get("query_id") or cid or None
            return self._sow(
                handler, a, sow_keys=f.get("sow_keys"), query_id=qid, acks=command.acks()
            )
        queue = self._queue(self._need_hub(), topic) if name == "sow_delete" else None
        if queue is not None and f.get("bookmark"):  # a queue acknowledgement
            n = queue.ack(f["bookmark"], f.get("options"))
            return self._ack(handler, topic, (n, n, n))
        if name == "sow_delete":
            keys = f.get("sow_keys") or f.get("sow_key")
            if keys:
                return self._delete_keys_matching(handler, topic, f.get("filter"), keys)
            if f.get("data"):
                return self.sow_delete_by_data(*lead, topic, f["data"])
            return self.sow_delete(*lead, topic, f.get("filter"))
        if name in ("subscribe", "delta_subscribe", "sow_and_subscribe", "sow_and_delta_subscribe"):
            return self._subscribe_command(name, handler, f, options)
        raise UsageException(f"command {name!r} is not available in process")


add_camel_case(Client)
