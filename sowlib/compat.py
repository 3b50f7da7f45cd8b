"""An AMPS-Python-client-shaped facade over a :class:`SowStore`, so AMPS code runs in process.

Method names, argument order and defaults follow the official client (spec §17);
every method also takes a leading message handler instead of returning a stream.
There is no network. Imports ``store``, ``compat_messages`` and ``errors``.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from sowlib.compat_messages import (
    BY_DATA,
    BY_KEYS,
    SOW,
    SOW_AND_SUBSCRIBE,
    SOW_DELETE,
    SUBSCRIBE,
    Handler,
    Message,
    MessageStream,
    bind_arguments,
    parse_options,
)
from sowlib.errors import QueryOptionError, UnsupportedOperationError
from sowlib.store import SowStore
from sowlib.subscriptions import Message as Event
from sowlib.subscriptions import Subscription

__all__ = ["Client", "Command", "Message", "MessageStream", "parse_options"]

_ids = itertools.count(1)


class Command:
    """A command built with setters, run by :meth:`Client.execute` (AMPS ``Command``).

    Example:
        >>> Command("sow").set_topic("orders").set_filter("/qty > 5").get_command()
        'sow'
    """

    def __init__(self, command: str) -> None:
        self._command = command.lower()
        self.fields: dict[str, Any] = {}

    def _set(self, name: str, value: Any) -> Command:
        self.fields[name] = value
        return self

    def get_command(self) -> str:
        return self._command

    def set_topic(self, topic: str) -> Command:
        return self._set("topic", topic)

    def set_filter(self, filter: str) -> Command:
        return self._set("filter", filter)

    def set_order_by(self, order_by: str) -> Command:
        return self._set("order_by", order_by)

    def set_top_n(self, top_n: int) -> Command:
        return self._set("top_n", top_n)

    def set_skip_n(self, skip_n: int) -> Command:
        return self._set("skip_n", skip_n)

    def set_batch_size(self, batch_size: int) -> Command:
        return self._set("batch_size", batch_size)

    def set_options(self, options: str) -> Command:
        return self._set("options", options)

    def set_sow_key(self, sow_key: str) -> Command:
        return self._set("sow_key", sow_key)

    def set_sow_keys(self, sow_keys: str) -> Command:
        return self._set("sow_keys", sow_keys)

    def set_bookmark(self, bookmark: str) -> Command:
        return self._set("bookmark", bookmark)

    def set_data(self, data: str | bytes) -> Command:
        return self._set("data", data)

    def set_expiration(self, expiration: float) -> Command:
        return self._set("expiration", expiration)

    def set_correlation_id(self, correlation_id: str | bytes) -> Command:
        return self._set("correlation_id", correlation_id)

    def set_sub_id(self, sub_id: str) -> Command:
        return self._set("sub_id", sub_id)

    def set_timeout(self, timeout: int) -> Command:
        return self._set("timeout", timeout)


class Client:
    """The AMPS client API over an in-process :class:`SowStore` (a new memory store by default).

    Topics are resolved by name; publishing to or querying a topic that does not
    exist raises :class:`~sowlib.errors.UnknownTopicError` (AMPS would deliver to
    an ad hoc topic and store nothing; create the topic first). Message handlers
    run synchronously inside the publish that caused them. ``timeout`` and
    ``batch_size`` arguments are accepted and ignored.

    Example:
        >>> store = SowStore()
        >>> _ = store.create_topic("orders", keys=["/id"])
        >>> client = Client("app", store)
        >>> client.connect("tcp://localhost:9007/amps/json")
        >>> _ = client.logon()
        >>> client.publish("orders", '{"id": 1, "qty": 7}')
        1
        >>> [m.get_command() for m in client.sow("orders", "/qty > 5")]
        ['group_begin', 'sow', 'group_end']
    """

    def __init__(self, name: str = "sowlib", store: SowStore | None = None) -> None:
        self.name = name
        self.store = store if store is not None else SowStore()
        self.uri: str | None = None
        self._lock = threading.Lock()
        self._subs: dict[str, Subscription] = {}
        self._streams: dict[str, MessageStream] = {}

    # ------------------------------------------------------------------ session

    def get_name(self) -> str:
        return self.name

    def connect(self, uri: str) -> None:
        """Record ``uri``; nothing is opened (sowlib has no network layer)."""
        self.uri = uri

    def logon(self, timeout: int = 0, authenticator: object = None, options: str = "") -> str:
        """Accepted for compatibility; there is nothing to log on to."""
        return ""

    def publish_flush(self, timeout: int = 0) -> None:
        """Make every publish durable (``store.flush()``)."""
        self.store.flush()

    def disconnect(self) -> None:
        """Unsubscribe everything; the store stays open (the caller owns it)."""
        self.unsubscribe()

    close = disconnect

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.disconnect()

    # ------------------------------------------------------------------ publishing

    def publish(
        self,
        topic: str,
        data: str | bytes,
        expiration: float | None = None,
        correlation_id: str | bytes | None = None,
        sow_key: str | None = None,
    ) -> int:
        """Publish ``data`` to the SOW topic ``topic``; returns the sequence number.

        Raises:
            UnknownTopicError: no such topic; the errors of ``Topic.publish``.
        """
        result = self.store.topic(topic).publish(
            data, expiration=expiration, sow_key=sow_key, correlation_id=correlation_id
        )
        return int(result.seq)

    def delta_publish(
        self,
        topic: str,
        data: str | bytes,
        expiration: float | None = None,
        sow_key: str | None = None,
        correlation_id: str | bytes | None = None,
    ) -> int:
        """Merge ``data`` into the stored record (spec §12.1); returns the sequence number."""
        result = self.store.topic(topic).delta_publish(
            data, expiration=expiration, sow_key=sow_key, correlation_id=correlation_id
        )
        return int(result.seq)

    # ------------------------------------------------------------------ queries

    def sow(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """``sow([on_message,] topic, filter=None, batch_size=10, timeout=0, top_n=None,
        order_by=None, bookmark=None, options=0)``.

        Returns a stream of ``group_begin``, one ``sow`` message per record and
        ``group_end``; with a handler, calls it for each and returns the query id.
        ``options`` may carry ``skip_n=N``, ``top_n=N`` and ``select=[...]``.
        """
        handler, a = bind_arguments(SOW, args, kwargs)
        opts = parse_options(a["options"])
        self._reject(opts, "sow", ("oof", "no_empties"))
        topic = self.store.topic(a["topic"])
        records = topic.sow(
            a["filter"],
            order_by=a["order_by"],
            top_n=opts.get("top_n", a["top_n"]),
            skip_n=opts.get("skip_n"),
            bookmark=a["bookmark"] or None,
            select=opts.get("select"),
        )
        query_id = f"q{next(_ids)}"
        messages = [Message("group_begin", topic.name, query_id=query_id)]
        messages += [Message.from_record(r, topic.name, query_id) for r in records]
        messages.append(Message("group_end", topic.name, query_id=query_id))
        if handler is not None:
            for message in messages:
                handler(message)
            return query_id
        stream = MessageStream(sub_id=query_id)
        for message in messages:
            stream._put(message)
        stream._end()
        return stream

    @staticmethod
    def _reject(opts: dict[str, Any], command: str, names: tuple[str, ...]) -> None:
        for name in names:
            if name in opts:
                raise QueryOptionError("options", name, f"not valid for {command}")

    # ------------------------------------------------------------------ subscriptions

    def subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """``subscribe([on_message,] topic, filter=None, options=None, timeout=0, sub_id=None,
        bookmark=None, oof_enabled=False)``: every later matching publish."""
        return self._subscribe(SUBSCRIBE, args, kwargs, sow=False, delta=False)

    def delta_subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """As :meth:`subscribe`; updates carry the key fields plus the changed fields."""
        return self._subscribe(SUBSCRIBE, args, kwargs, sow=False, delta=True)

    def sow_and_subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """``sow_and_subscribe([on_message,] topic, filter=None, batch_size=1,
        oof_enabled=False, timeout=0, top_n=None, order_by=None, bookmark=None, options=None)``.

        The query results (between group markers), then every later change, atomically.
        """
        return self._subscribe(SOW_AND_SUBSCRIBE, args, kwargs, sow=True, delta=False)

    def sow_and_delta_subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """As :meth:`sow_and_subscribe` with delta updates."""
        return self._subscribe(SOW_AND_SUBSCRIBE, args, kwargs, sow=True, delta=True)

    def _subscribe(
        self, sig: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, sow: bool, delta: bool
    ) -> MessageStream | str:
        handler, a = bind_arguments(sig, args, kwargs)
        opts = parse_options(a["options"])
        for name, why in (
            ("select", "select lists on subscriptions"),
            ("skip_n", "paginated subscriptions"),
        ):
            if name in opts:
                raise UnsupportedOperationError(name, f"{why} are not implemented")
        if a["bookmark"]:
            raise UnsupportedOperationError("bookmark", "bookmark subscriptions (replay)")
        topic = self.store.topic(a["topic"])
        sub_id = str(a.get("sub_id") or f"s{next(_ids)}")
        if sub_id in self._subs:
            raise QueryOptionError("sub_id", sub_id, "already in use by this client")
        stream = None if handler is not None else MessageStream(self.unsubscribe, sub_id)
        target: Handler = handler if handler is not None else stream._put  # type: ignore[union-attr]

        def deliver(event: Event) -> None:
            target(Message.from_event(event, sub_id))

        extra: dict[str, Any] = {}
        if opts.get("no_empties"):
            extra["no_empties"] = True
        oof = bool(a["oof_enabled"] or opts.get("oof"))
        if sow:
            top_n = opts.get("top_n", a["top_n"])
            sub = topic.sow_and_subscribe(
                deliver,
                a["filter"],
                oof=oof,
                delta=delta,
                order_by=a["order_by"],
                top_n=top_n,
                **extra,
            )
        else:
            sub = topic.subscribe(deliver, a["filter"], oof=oof, delta=delta, **extra)
        with self._lock:
            self._subs[sub_id] = sub
            if stream is not None:
                self._streams[sub_id] = stream
        return stream if stream is not None else sub_id

    def unsubscribe(self, sub_id: str | None = None) -> None:
        """Stop the subscription ``sub_id`` (None: every subscription of this client)."""
        with self._lock:
            ids = list(self._subs) if sub_id is None else [sub_id]
            found = [(self._subs.pop(i, None), self._streams.pop(i, None)) for i in ids]
        for sub, stream in found:
            if sub is not None:
                sub.unsubscribe()
            if stream is not None:
                stream._end()

    # ------------------------------------------------------------------ deletes

    def _ack(self, handler: Handler | None, topic: str, result: Any, keys: str = "") -> Any:
        ack = Message(
            "ack",
            topic,
            ack_type=Message.AckType.Stats,
            status="success",
            matches=result.matches,
            topic_matches=result.topic_matches,
            records_deleted=result.records_deleted,
            sow_keys=keys or None,
        )
        if handler is None:
            return ack
        handler(ack)
        return f"q{next(_ids)}"

    def sow_delete(self, *args: Any, **kwargs: Any) -> Message | str:
        """``sow_delete([on_message,] topic, filter=None, timeout=0)``: delete the matches.

        Returns a ``stats`` acknowledgement (``get_matches()``, ``get_records_deleted()``);
        a None filter deletes everything, as ``1=1`` does.
        """
        handler, a = bind_arguments(SOW_DELETE, args, kwargs)
        result = self.store.topic(a["topic"]).sow_delete(a["filter"] or "1=1")
        return self._ack(handler, a["topic"], result)  # type: ignore[no-any-return]

    def sow_delete_by_keys(self, *args: Any, **kwargs: Any) -> Message | str:
        """``sow_delete_by_keys([on_message,] topic, keys, timeout=0)``; comma-separated keys."""
        handler, a = bind_arguments(BY_KEYS, args, kwargs)
        result = self.store.topic(a["topic"]).sow_delete_by_keys(a["keys"])
        return self._ack(handler, a["topic"], result, a["keys"])  # type: ignore[no-any-return]

    def sow_delete_by_data(self, *args: Any, **kwargs: Any) -> Message | str:
        """``sow_delete_by_data([on_message,] topic, data, timeout=0)``: delete data's record."""
        handler, a = bind_arguments(BY_DATA, args, kwargs)
        result = self.store.topic(a["topic"]).sow_delete_by_data(a["data"])
        return self._ack(handler, a["topic"], result)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ commands

    def execute(self, command: Command) -> MessageStream:
        """Run ``command`` and return its messages as a stream (AMPS ``execute``).

        Raises:
            UnsupportedOperationError: a command other than publish, delta_publish, sow,
                (sow_and_)(delta_)subscribe, sow_delete or unsubscribe.
        """
        got = self._run(command, None)
        if isinstance(got, MessageStream):
            return got
        stream = MessageStream(sub_id=str(got) if isinstance(got, str) else "")
        if isinstance(got, Message):
            stream._put(got)
        stream._end()
        return stream

    def execute_async(self, command: Command, on_message: Handler) -> str:
        """Run ``command``, delivering its messages to ``on_message``; returns the command id."""
        got = self._run(command, on_message)
        return got if isinstance(got, str) else ""

    def _run(self, command: Command, handler: Handler | None) -> Any:
        f = command.fields
        name = command.get_command()
        lead = (handler,) if handler is not None else ()
        topic = f.get("topic", "")
        if name in ("publish", "delta_publish"):
            publish = self.publish if name == "publish" else self.delta_publish
            seq = publish(
                topic,
                f.get("data", b""),
                expiration=f.get("expiration"),
                sow_key=f.get("sow_key"),
                correlation_id=f.get("correlation_id"),
            )
            ack = Message(
                "ack",
                topic,
                ack_type=Message.AckType.Processed,
                status="success",
                sequence=seq,
                bookmark=str(seq),
            )
            if handler is not None:
                handler(ack)
                return str(seq)
            return ack
        options = f.get("options")
        if f.get("skip_n") is not None:
            options = ",".join(p for p in (options, f"skip_n={f['skip_n']}") if p)
        if name == "sow":
            return self.sow(
                *lead,
                topic,
                f.get("filter"),
                top_n=f.get("top_n"),
                order_by=f.get("order_by"),
                bookmark=f.get("bookmark"),
                options=options or 0,
            )
        if name in ("subscribe", "delta_subscribe"):
            live = self.subscribe if name == "subscribe" else self.delta_subscribe
            return live(
                *lead,
                topic,
                f.get("filter"),
                options=options,
                sub_id=f.get("sub_id"),
                bookmark=f.get("bookmark"),
            )
        if name in ("sow_and_subscribe", "sow_and_delta_subscribe"):
            both = self.sow_and_subscribe
            if name == "sow_and_delta_subscribe":
                both = self.sow_and_delta_subscribe
            return both(
                *lead,
                topic,
                f.get("filter"),
                top_n=f.get("top_n"),
                order_by=f.get("order_by"),
                bookmark=f.get("bookmark"),
                options=options,
            )
        if name == "sow_delete":
            if f.get("sow_keys") or f.get("sow_key"):
                return self.sow_delete_by_keys(*lead, topic, f.get("sow_keys") or f["sow_key"])
            if f.get("data"):
                return self.sow_delete_by_data(*lead, topic, f["data"])
            return self.sow_delete(*lead, topic, f.get("filter"))
        if name == "unsubscribe":
            self.unsubscribe(f.get("sub_id"))
            return ""
        raise UnsupportedOperationError(name, "this command is not available in process")
