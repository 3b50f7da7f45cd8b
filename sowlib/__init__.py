"""sowlib: an embeddable AMPS-style State of the World (last-value cache).

Example:
    >>> import sowlib
    >>> store = sowlib.SowStore()
    >>> orders = store.create_topic("orders", keys=["/orderId"])
    >>> orders.publish({"orderId": 1, "price": 120}).inserted
    True
    >>> sowlib.compile_filter("/price > 100").matches({"price": 120})
    True
"""

from sowlib import errors
from sowlib.buildinfo import VERSION
from sowlib.buildinfo import build_info as _build_info
from sowlib.buildinfo import warn_missing_compiled as _warn_missing_compiled
from sowlib.codecs import Codec, get_codec, register_codec
from sowlib.config import TopicConfig
from sowlib.document import MISSING, Element
from sowlib.errors import SowError
from sowlib.expr import EvalContext, Filter, compile_filter, parse_filter
from sowlib.index import HashIndex, Index, MemoIndex
from sowlib.keys import ChainingKeyGenerator, ContentKeyGenerator, KeyGenerator
from sowlib.paths import FieldPath, parse_path
from sowlib.query import QueryOptions, Record
from sowlib.results import Change, DeleteResult, PublishResult
from sowlib.state import StateStore
from sowlib.store import SowStore
from sowlib.subscriptions import Message, Subscription
from sowlib.topic import Topic
from sowlib.verifying import verify

__version__ = VERSION
_warn_missing_compiled()  # once per process, when a C module was not built


def build_info() -> dict[str, object]:
    """This build's version, Python and compiled modules (True when in use).

    Example:
        >>> sorted(build_info())
        ['compiled', 'pure_python', 'python', 'version']
    """
    return _build_info(__version__)


__all__ = [
    "verify",
    "MISSING",
    "ChainingKeyGenerator",
    "Change",
    "Codec",
    "ContentKeyGenerator",
    "DeleteResult",
    "Element",
    "EvalContext",
    "FieldPath",
    "Filter",
    "HashIndex",
    "Index",
    "KeyGenerator",
    "MemoIndex",
    "Message",
    "PublishResult",
    "QueryOptions",
    "Record",
    "SowError",
    "SowStore",
    "StateStore",
    "Subscription",
    "Topic",
    "TopicConfig",
    "__version__",
    "build_info",
    "compile_filter",
    "errors",
    "get_codec",
    "parse_filter",
    "parse_path",
    "register_codec",
]
