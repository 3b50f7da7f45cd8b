"""The AMPS client's exception classes, each also a :class:`~sowlib.errors.SowError`.

sowlib errors raised through the facade are re-typed (:func:`translate`) to a
class that is both the AMPS exception and the original sowlib exception, so
``except BadFilterException`` and ``except FilterSyntaxError`` both catch it.
Imports only ``errors``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, cast

from sowlib import errors

__all__ = [
    "AMPSException",
    "AlreadyConnected",
    "AlreadyConnectedException",
    "AuthenticationError",
    "AuthenticationException",
    "BadFilter",
    "BadFilterException",
    "BadRegexTopic",
    "BadRegexTopicException",
    "BadSowKeyException",
    "CommandException",
    "ConnectionException",
    "ConnectionRefusedException",
    "CorruptedException",
    "DisconnectedException",
    "DuplicateLogonException",
    "InvalidBookmarkException",
    "InvalidMessageTypeException",
    "InvalidOptionsException",
    "InvalidOrderByException",
    "InvalidSubIdException",
    "InvalidTopicException",
    "InvalidTransportOptionsException",
    "InvalidURIException",
    "LocalStorageError",
    "LogonRequiredException",
    "MessageTypeException",
    "MessageTypeNotFoundException",
    "MissingFieldsException",
    "NameInUseException",
    "NotEntitledException",
    "PublishException",
    "RetryOperationException",
    "StoreException",
    "StreamException",
    "SubidInUseException",
    "SubscriptionAlreadyExistsException",
    "TimedOutException",
    "TransportTypeException",
    "UnknownException",
    "UsageException",
    "translate",
    "translating",
]


class AMPSException(errors.SowError):
    """Root of the AMPS client's exceptions; ``AMPSException("text")`` carries a message.

    Raised directly by the facade with a text, or as a re-typed sowlib error
    (:func:`translate`) that keeps the sowlib error's fields and message.
    """

    __slots__ = ()
    _retyped: ClassVar[bool] = False

    def __init__(self, *args: object) -> None:
        BaseException.__init__(self, *args)

    def _inherited(self, name: str) -> Any:
        """The sowlib class's ``name`` (it follows the AMPS classes in the MRO)."""
        for klass in type(self).__mro__:
            if issubclass(klass, AMPSException) or klass in (errors.SowError, Exception):
                continue
            own = vars(klass).get(name)
            if callable(own):
                return own
        return None

    def message(self) -> str:
        own = self._inherited("message") if self._retyped else None
        if own is not None:
            return str(own(self))
        return str(self.args[0]) if self.args else type(self).__name__

    def __repr__(self) -> str:
        own = self._inherited("__repr__") if self._retyped else None
        if own is not None:
            return str(own(self))
        return f"{type(self).__name__}({', '.join(map(repr, self.args))})"


class ConnectionException(AMPSException):
    """Problems with the (here: simulated) connection."""

    __slots__ = ()


class CommandException(AMPSException):
    """A command was refused."""

    __slots__ = ()


def _define(name: str, doc: str, *bases: type[BaseException]) -> type[AMPSException]:
    cls = type(name, bases, {"__slots__": (), "__doc__": doc, "__module__": __name__})
    return cast(type[AMPSException], cls)


# Connection-level errors. In process only a few can happen (use before connect,
# a malformed URI, a second connect); the rest exist so `except` clauses resolve.
AlreadyConnectedException = _define(
    "AlreadyConnectedException", "connect() on a connected client.", ConnectionException
)
AuthenticationException = _define(
    "AuthenticationException", "Never raised in process (no authentication).", ConnectionException
)
ConnectionRefusedException = _define(
    "ConnectionRefusedException",
    "Never raised in process (nothing to refuse).",
    ConnectionException,
)
DisconnectedException = _define(
    "DisconnectedException",
    "The client is not connected, or its store was closed.",
    ConnectionException,
)
InvalidURIException = _define(
    "InvalidURIException", "connect() got a malformed URI.", ConnectionException, ValueError
)
InvalidTransportOptionsException = _define(
    "InvalidTransportOptionsException",
    "Never raised in process (URI options are ignored).",
    ConnectionException,
)
MessageTypeException = _define(
    "MessageTypeException", "A message type in the URI is unknown.", ConnectionException, ValueError
)
MessageTypeNotFoundException = _define(
    "MessageTypeNotFoundException", "A message type in the URI is unknown.", MessageTypeException
)
NameInUseException = _define(
    "NameInUseException", "Never raised in process (client names may repeat).", ConnectionException
)
RetryOperationException = _define(
    "RetryOperationException", "Never raised in process.", ConnectionException
)
StreamException = _define("StreamException", "Never raised in process.", ConnectionException)
TimedOutException = _define(
    "TimedOutException", "A wait (publish_flush, execute) ran out of time.", ConnectionException
)
TransportTypeException = _define(
    "TransportTypeException", "The URI names an unknown transport.", ConnectionException
)

# Command errors: each also derives from the sowlib error it corresponds to.
BadFilterException = _define(
    "BadFilterException", "A filter is malformed.", CommandException, errors.FilterError
)
BadRegexTopicException = _define(
    "BadRegexTopicException",
    "A regular-expression topic does not compile.",
    CommandException,
    errors.ConfigError,
)
BadSowKeyException = _define(
    "BadSowKeyException", "A SOW key is malformed.", CommandException, errors.InvalidSowKeyError
)
DuplicateLogonException = _define("DuplicateLogonException", "Never raised.", CommandException)
InvalidBookmarkException = _define(
    "InvalidBookmarkException",
    "A bookmark is malformed or not in the transaction log.",
    CommandException,
    errors.QueryOptionError,
)
InvalidMessageTypeException = _define(
    "InvalidMessageTypeException",
    "The operation is impossible for the topic's message type.",
    CommandException,
    errors.UnsupportedOperationError,
)
InvalidOptionsException = _define(
    "InvalidOptionsException",
    "An options string or query option is invalid.",
    CommandException,
    errors.QueryOptionError,
)
InvalidOrderByException = _define(
    "InvalidOrderByException", "An order_by is invalid.", InvalidOptionsException
)
InvalidSubIdException = _define(
    "InvalidSubIdException", "A subscription id is invalid.", CommandException, ValueError
)
InvalidTopicException = _define(
    "InvalidTopicException",
    "The topic is not configured for the operation (no SOW, not in the transaction log).",
    CommandException,
    errors.UnknownTopicError,
)
LogonRequiredException = _define("LogonRequiredException", "Never raised.", CommandException)
MissingFieldsException = _define(
    "MissingFieldsException",
    "A command lacks a required header (topic, data, keys).",
    CommandException,
    ValueError,
)
NotEntitledException = _define(
    "NotEntitledException",
    "A write to a store opened read-only.",
    CommandException,
    errors.ReadOnlyError,
)
PublishException = _define(
    "PublishException",
    "A publish or delete was refused (bad message, missing key).",
    CommandException,
    ValueError,
)
SubidInUseException = _define(
    "SubidInUseException", "A subscription id is already in use.", CommandException, ValueError
)
SubscriptionAlreadyExistsException = _define(
    "SubscriptionAlreadyExistsException",
    "A subscription id is already in use by this client.",
    SubidInUseException,
)
UnknownException = _define("UnknownException", "An unexpected failure.", CommandException)
UsageException = _define(
    "UsageException",
    "The call cannot work in process (it would silently mislead if ignored).",
    AMPSException,
    errors.UnsupportedOperationError,
)

# Local storage.
LocalStorageError = _define(
    "LocalStorageError", "The store failed (I/O, corruption).", AMPSException, errors.StorageError
)
StoreException = _define("StoreException", "A store operation failed.", LocalStorageError)
CorruptedException = _define("CorruptedException", "A stored record is corrupt.", StoreException)

# The deprecated spellings older AMPS programs still catch: the same classes.
BadFilter = BadFilterException
BadRegexTopic = BadRegexTopicException
AlreadyConnected = AlreadyConnectedException
AuthenticationError = AuthenticationException

# sowlib error class -> AMPS class, most specific first (the first isinstance match wins).
_MAP: tuple[tuple[type[BaseException], type[AMPSException]], ...] = (
    (errors.FilterError, BadFilterException),
    (errors.FieldPathError, BadFilterException),
    (errors.UnknownTopicError, InvalidTopicException),
    (errors.InvalidSowKeyError, BadSowKeyException),
    (errors.MissingKeyFieldError, PublishException),
    (errors.CodecError, PublishException),
    (errors.ArgumentError, InvalidOptionsException),
    (errors.UnsupportedOperationError, InvalidMessageTypeException),
    (errors.ReadOnlyError, NotEntitledException),
    (errors.StoreClosedError, DisconnectedException),
    (errors.CorruptRecordError, CorruptedException),
    (errors.StorageError, StoreException),
    (errors.ConfigError, UsageException),
    (errors.TopicExistsError, UsageException),
)
_combined: dict[tuple[type[BaseException], type[AMPSException]], type[AMPSException]] = {}
_combined_lock = threading.Lock()


def _amps_class_for(exc: errors.SowError) -> type[AMPSException]:
    if isinstance(exc, errors.QueryOptionError):
        if exc.option == "order_by":
            return InvalidOrderByException
        if exc.option == "bookmark":
            return InvalidBookmarkException
    for sow_class, amps_class in _MAP:
        if isinstance(exc, sow_class):
            return amps_class
    return UnknownException


def translate(exc: errors.SowError) -> AMPSException:
    """Re-type ``exc`` in place as the matching AMPS exception and return it.

    The new class derives from the AMPS class and from ``type(exc)``, so the
    fields, the message and every ``except`` clause that caught it before still work.

    Example:
        >>> from sowlib.errors import UnknownTopicError
        >>> err = translate(UnknownTopicError("orders"))
        >>> isinstance(err, InvalidTopicException), isinstance(err, UnknownTopicError)
        (True, True)
    """
    if isinstance(exc, AMPSException):
        return exc
    amps = _amps_class_for(exc)
    original = type(exc)
    with _combined_lock:
        both = _combined.get((original, amps))
        if both is None:
            # No new slots, so the instance layout is unchanged and __class__ can be
            # reassigned; AMPSException.message finds the sowlib class's message.
            namespace = {
                "__slots__": (),
                "__module__": __name__,
                "__doc__": amps.__doc__,
                "_retyped": True,
            }
            both = cast(type[AMPSException], type(amps.__name__, (amps, original), namespace))
            _combined[(original, amps)] = both
    exc.__class__ = both
    return cast(AMPSException, exc)


F = TypeVar("F", bound=Callable[..., Any])


def translating(func: F) -> F:
    """Decorate a facade method so sowlib errors leave it as AMPS exceptions."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except errors.SowError as exc:
            raise translate(exc) from exc.__cause__

    return cast(F, wrapper)
