"""Every exception sowlib raises, in one tree rooted at :class:`SowError`.

Imports nothing from sowlib. Each class also inherits the builtin a caller
would expect (``ValueError`` for bad input, ``KeyError`` for a missing topic),
so ``except ValueError`` keeps working for code that does not know sowlib.
"""

from __future__ import annotations

import attrs

__all__ = [
    "ArgumentError",
    "CloseError",
    "CodecError",
    "ConfigError",
    "CorruptRecordError",
    "DecodeError",
    "EncodeError",
    "FieldPathError",
    "FilterArityError",
    "FilterError",
    "FilterSyntaxError",
    "FilterTooDeepError",
    "FormatVersionError",
    "InvalidPatternError",
    "InvalidSowKeyError",
    "MissingKeyFieldError",
    "NotJournaledError",
    "QueryOptionError",
    "ReadOnlyError",
    "RecordTooLargeError",
    "RegexBudgetError",
    "RegexTimeoutError",
    "SowError",
    "SparkSetupError",
    "StorageError",
    "StoreClosedError",
    "StoreFullError",
    "StoreLockedError",
    "StoreNotFoundError",
    "StorePathError",
    "TopicExistsError",
    "UnknownFunctionError",
    "UnknownTopicError",
    "UnsupportedFilterError",
    "UnsupportedOperationError",
]


def _shorten(data: object) -> object:
    """Cut long message bodies in error messages to 80 characters."""
    if isinstance(data, str) and len(data) > 80:
        return data[:77] + "..."
    if isinstance(data, bytes) and len(data) > 80:
        return data[:77] + b"..."
    return data


_WINDOW = 60


def _caret(expression: str, offset: int) -> str:
    """Render ``expression`` with a caret under ``offset`` (clamped to the text).

    At most ``_WINDOW`` characters each side of the offset are shown, so a huge input
    (a 500 KB pattern) gives a message of a few lines, not a copy of the input.
    """
    offset = max(0, min(offset, len(expression)))
    start, stop = max(0, offset - _WINDOW), offset + _WINDOW
    head = "..." if start else ""
    shown = head + expression[start:stop] + ("..." if stop < len(expression) else "")
    return f"\n  {shown}\n  {' ' * (offset - start + len(head))}^"


class SowError(Exception):
    """Base class of every error sowlib raises."""

    def __str__(self) -> str:  # attrs exceptions otherwise print a tuple
        return self.message()

    def message(self) -> str:
        """Return the human-readable message (subclasses override)."""
        return self.__class__.__name__


# --------------------------------------------------------------------------
# filter language


class FilterError(SowError, ValueError):
    """A filter expression cannot be parsed or compiled."""


@attrs.define(auto_exc=True, eq=False)
class FilterSyntaxError(FilterError):
    """The filter text is not valid; ``offset`` is the 0-based column of the problem."""

    expression: str
    offset: int
    expected: str
    found: str

    def message(self) -> str:
        found = _shorten(self.found)
        head = f"expected {self.expected}, found {found} at column {self.offset + 1}"
        return head + _caret(self.expression, self.offset)


class FilterTooDeepError(FilterSyntaxError):
    """The filter nests deeper than the documented limit (``expr.parser.MAX_NESTING``).

    A :class:`FilterSyntaxError` whose ``offset`` is the token that opens one
    level too many (a parenthesis, a function call, ``NOT`` or a unary minus).
    """


class InvalidPatternError(FilterSyntaxError):
    """A LIKE / REGEXP_REPLACE pattern is not a valid regular expression.

    A :class:`FilterSyntaxError` whose ``offset`` is the pattern literal's position.
    """


@attrs.define(auto_exc=True, eq=False)
class UnknownFunctionError(FilterError):
    """The filter calls a function that is not in the registry."""

    expression: str
    offset: int
    name: str

    def message(self) -> str:
        return f"unknown function {self.name!r} at column {self.offset + 1}" + _caret(
            self.expression, self.offset
        )


@attrs.define(auto_exc=True, eq=False)
class FilterArityError(FilterError):
    """A function is called with the wrong number of arguments."""

    expression: str
    offset: int
    name: str
    expected: str
    got: int

    def message(self) -> str:
        head = (
            f"{self.name}() takes {self.expected} argument(s), got {self.got}"
            f" at column {self.offset + 1}"
        )
        return head + _caret(self.expression, self.offset)


@attrs.define(auto_exc=True, eq=False)
class UnsupportedFilterError(FilterError):
    """A back-end cannot express a construct exactly (it never approximates)."""

    construct: str
    backend: str
    expression: str = ""
    offset: int = 0
    hint: str = ""

    def message(self) -> str:
        text = f"{self.construct} is not supported by the {self.backend} back-end"
        if self.hint:
            text += f" ({self.hint})"
        if self.expression:
            text += _caret(self.expression, self.offset)
        return text


@attrs.define(auto_exc=True, eq=False)
class RegexTimeoutError(FilterError):
    """A LIKE pattern took longer than the configured limit on one value."""

    pattern: str
    seconds: float

    def message(self) -> str:
        return (
            f"LIKE pattern {self.pattern!r} exceeded {self.seconds}s on one value;"
            " simplify the pattern (nested quantifiers backtrack exponentially)"
        )


@attrs.define(auto_exc=True, eq=False)
class RegexBudgetError(RegexTimeoutError):
    """The LIKE patterns of one query spent its whole regex time budget.

    ``seconds`` is the budget (``expr.like.QUERY_REGEX_BUDGET`` unless given to
    ``like.regex_budget``); ``pattern`` is the pattern running when it ran out.
    """

    def message(self) -> str:
        return (
            f"LIKE patterns spent the query's regex budget of {self.seconds}s"
            f" (last pattern {self.pattern!r}); narrow the query or simplify the pattern"
        )


# --------------------------------------------------------------------------
# field paths and query options


@attrs.define(auto_exc=True, eq=False)
class FieldPathError(SowError, ValueError):
    """A field path such as ``/order/price`` is malformed."""

    path: str
    offset: int
    reason: str

    def message(self) -> str:
        return f"bad field path {self.path!r}: {self.reason}" + _caret(self.path, self.offset)


@attrs.define(auto_exc=True, eq=False)
class ArgumentError(SowError, ValueError):
    """An argument of a call is invalid: a publish option (``expiration``,
    ``correlation_id``), a budget (``cache_bytes``), key values, rows."""

    argument: str
    value: object
    reason: str

    def message(self) -> str:
        return f"invalid {self.argument}={self.value!r}: {self.reason}"


@attrs.define(auto_exc=True, eq=False)
class QueryOptionError(ArgumentError):
    """A query option (order_by, top_n, skip_n, select, project, bookmark) is invalid."""

    @property
    def option(self) -> str:
        """The option's name (the :attr:`argument`)."""
        return self.argument


# --------------------------------------------------------------------------
# codecs and keys


class CodecError(SowError, ValueError):
    """A message could not be decoded or encoded."""


@attrs.define(auto_exc=True, eq=False)
class DecodeError(CodecError):
    """A message is malformed for its message type."""

    message_type: str
    data: object
    reason: str
    offset: int | None = None

    def message(self) -> str:
        shown = _shorten(self.data)
        where = f" at byte {self.offset}" if self.offset is not None else ""
        return f"malformed {self.message_type} message{where}: {self.reason}: {shown!r}"


@attrs.define(auto_exc=True, eq=False)
class EncodeError(CodecError):
    """A value cannot be rendered in the message type."""

    message_type: str
    value: object
    reason: str

    def message(self) -> str:
        return f"cannot encode {self.value!r} as {self.message_type}: {self.reason}"


@attrs.define(auto_exc=True, eq=False)
class MissingKeyFieldError(SowError, ValueError):
    """A message lacks (or has NULL in) a field the topic's key is built from."""

    topic: str
    field: str
    data: object = None

    def message(self) -> str:
        shown = _shorten(self.data)
        return (
            f"message for topic {self.topic!r} has no value for key field"
            f" {self.field!r}; nothing was stored: {shown!r}"
        )


@attrs.define(auto_exc=True, eq=False)
class InvalidSowKeyError(SowError, ValueError):
    """A SOW key is malformed or missing where the topic needs one."""

    key: object
    reason: str

    def message(self) -> str:
        return f"invalid SOW key {self.key!r}: {self.reason}"


@attrs.define(auto_exc=True, eq=False)
class UnsupportedOperationError(SowError, ValueError):
    """The operation is not possible for this topic or message type."""

    operation: str
    reason: str

    def message(self) -> str:
        return f"{self.operation} is not supported: {self.reason}"


# --------------------------------------------------------------------------
# topics, configuration


@attrs.define(auto_exc=True, eq=False)
class UnknownTopicError(SowError, KeyError):
    """No topic with that name (and message type) exists in the store."""

    topic: str
    message_type: str | None = None

    def message(self) -> str:
        kind = f" ({self.message_type})" if self.message_type else ""
        return f"no SOW topic {self.topic!r}{kind}; create it with store.create_topic(...)"


@attrs.define(auto_exc=True, eq=False)
class TopicExistsError(SowError, ValueError):
    """``create_topic`` was called with a configuration that differs from the stored one."""

    topic: str
    reason: str

    def message(self) -> str:
        return f"topic {self.topic!r} already exists: {self.reason}"


@attrs.define(auto_exc=True, eq=False)
class ConfigError(SowError, ValueError):
    """A configuration value or document is invalid; ``where`` is the element path."""

    where: str
    reason: str

    def message(self) -> str:
        return f"bad configuration at {self.where}: {self.reason}"


# --------------------------------------------------------------------------
# storage


class StorageError(SowError):
    """Base class for on-disk problems."""


@attrs.define(auto_exc=True, eq=False)
class CorruptRecordError(StorageError):
    """A record in the middle of a log fails its checks; valid records follow it."""

    file: str
    offset: int
    reason: str = "checksum mismatch"

    def message(self) -> str:
        return (
            f"corrupt record in {self.file} at byte {self.offset}: {self.reason};"
            " run `sowlib verify --repair` to salvage every intact record"
        )


@attrs.define(auto_exc=True, eq=False)
class FormatVersionError(StorageError):
    """The file is not a sowlib log, or was written by an unknown format version."""

    file: str
    found: object
    expected: object
    hint: str = ""

    def message(self) -> str:
        text = (
            f"{self.file}: unsupported file format {self.found!r}"
            f" (this sowlib reads {self.expected!r})"
        )
        return f"{text}; {self.hint}" if self.hint else text


@attrs.define(auto_exc=True, eq=False)
class RecordTooLargeError(StorageError, ValueError):
    """A record does not fit in one slab."""

    size: int
    limit: int

    def message(self) -> str:
        return (
            f"record of {self.size} bytes exceeds the slab size limit of"
            f" {self.limit} bytes; raise slab_size"
        )


@attrs.define(auto_exc=True, eq=False)
class StoreFullError(StorageError, OSError):
    """The file system has no room for a write (``ENOSPC``/``EDQUOT``); nothing was written.

    Raised at the write that needed the space (file space is reserved before it is mapped),
    so the store stays consistent and opens again once space is freed.
    """

    path: str
    needed: int
    reason: str = "no space left on device"

    def message(self) -> str:
        return (
            f"cannot write {self.needed} bytes to {self.path}: {self.reason};"
            " free some space and retry (nothing of this write was stored)"
        )


@attrs.define(auto_exc=True, eq=False)
class StoreClosedError(StorageError):
    """The store or topic was used after ``close()``."""

    what: str

    def message(self) -> str:
        return f"{self.what} is closed"


@attrs.define(auto_exc=True, eq=False)
class CloseError(StorageError):
    """A topic failed to close cleanly (its checkpoint could not be written, say).

    The topic is closed and its lock and the store's writer lock are released anyway;
    the next open scans the log instead of loading a checkpoint. ``what`` is the file.
    """

    what: str
    reason: str

    def message(self) -> str:
        return (
            f"{self.what} closed without a checkpoint: {self.reason}"
            " (every lock is released; the next open scans the log)"
        )


@attrs.define(auto_exc=True, eq=False)
class StoreNotFoundError(StorageError, FileNotFoundError):
    """A read-only open of a store directory that does not exist."""

    path: str

    def message(self) -> str:
        return f"no sowlib store at {self.path}; a writer creates it with SowStore(path)"


@attrs.define(auto_exc=True, eq=False)
class StorePathError(StorageError, OSError):
    """The operating system refused a store path: no permission, a file where a
    directory belongs, a directory where a file belongs; ``os_errno`` is the OS error number."""

    path: str
    operation: str
    reason: str
    os_errno: int | None = None

    def message(self) -> str:
        return f"cannot {self.operation} {self.path}: {self.reason}"


@attrs.define(auto_exc=True, eq=False)
class StoreLockedError(StorageError):
    """Another process holds the store's writer lock."""

    path: str
    pid: int | None = None

    def message(self) -> str:
        holder = f"process {self.pid}" if self.pid else "another process"
        return f"{self.path} is locked for writing by {holder}; open it with readonly=True to read"


@attrs.define(auto_exc=True, eq=False)
class ReadOnlyError(StorageError):
    """A write was attempted on a read-only store."""

    what: str
    operation: str

    def message(self) -> str:
        return f"cannot {self.operation}: {self.what} is opened read-only"


@attrs.define(auto_exc=True, eq=False)
class NotJournaledError(UnknownTopicError):
    """A bookmark subscription names a topic the transaction log does not record."""

    def message(self) -> str:
        return (
            f"topic {self.topic!r} is not recorded in the transaction log;"
            " add it to the journal's topics (<TransactionLog><Topic>)"
        )


# --------------------------------------------------------------------------
# Spark


_SHIP = (
    " Or ship sowlib with the job: spark-submit --py-files (a zip of the sowlib package"
    " and pyspark_sowlib.py; compiled modules do not load from a zip, so sowlib runs its"
    " pure-Python paths) or --archives with a packed"
    " virtualenv, or spark.sparkContext.addPyFile(zip) before the first job."
    " sowlib.spark.check_workers(spark) reports each worker's Python."
)


@attrs.define(auto_exc=True, eq=False)
class SparkSetupError(SowError, RuntimeError):
    """Spark's Python workers cannot use sowlib; the message says what to do.

    ``problem`` is ``"no_module"`` (a worker's Python cannot import sowlib: it runs
    another interpreter, or sowlib is not installed there), ``"source_not_found"``
    (Spark found no data source named ``sow``: pyspark's scan of the workers' installed
    modules did not see ``pyspark_sowlib``, as with a default editable install) or
    ``"no_python"`` (the workers' Python does not start).
    ``python`` is the workers' interpreter as reported or configured; ``detail`` the
    worker's own words. The Spark error is the ``__cause__``.
    """

    problem: str
    python: str
    detail: str = ""

    def message(self) -> str:
        said = f" ({self.detail})" if self.detail else ""
        if self.problem == "no_python":
            return (
                f"Spark cannot start its Python workers with {self.python}{said}: set"
                " PYSPARK_PYTHON (or spark.pyspark.python) to the executable of a Python"
                " that has sowlib installed (sys.executable of the driver, for one machine)."
            )
        if self.problem == "source_not_found":
            return (
                f"Spark found no data source named 'sow'{said}: its Python workers ({self.python})"
                " do not see the pyspark_sowlib module that pyspark's scan of installed modules"
                " registers (or see it without the spark extra's pyarrow and pandas, and it then"
                " defines no source). A default editable install (pip install -e) is invisible"
                " to that scan: install regularly (pip install 'sowlib[spark]', or pip install"
                " '.[spark]' in a checkout), or editable with pip install -e '.[spark]'"
                " --config-settings editable_mode=compat, or call sowlib.spark.register(spark)"
                " once in the session. If sowlib is installed in another Python, set"
                " PYSPARK_PYTHON (or spark.pyspark.python) to that Python's executable before"
                " the session starts." + _SHIP
            )
        return (
            f"Spark's Python workers cannot import sowlib{said}; they run {self.python}."
            " Install sowlib (with the spark extra) into that Python, or make the workers run"
            " the Python sowlib is installed in: set PYSPARK_PYTHON (or spark.pyspark.python)"
            " to its executable, e.g. the virtualenv's bin/python, before the session starts"
            " (unset, they run the first python3 on PATH: not a virtualenv's unless it is"
            " activated)." + _SHIP
        )
