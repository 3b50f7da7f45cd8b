"""Argument binding for the facade: the real client's signatures and its ``options`` strings.

Imports only ``errors`` and ``compat.message``.
"""

from __future__ import annotations

import inspect
from typing import Any

from sowlib.compat.message import Handler
from sowlib.errors import ArgumentError, QueryOptionError
from sowlib.views.query import split_fields

__all__ = [
    "BOOKMARK_SUBSCRIBE",
    "BY_DATA",
    "BY_KEYS",
    "SOW",
    "SOW_AND_DELTA_SUBSCRIBE",
    "SOW_AND_SUBSCRIBE",
    "SOW_DELETE",
    "SUBSCRIBE",
    "bind_arguments",
    "parse_options",
]

_PACING = ("rate", "rate_max_gap")
_FLAGS = ("oof", "no_empties", "no_sowkey", "send_keys", "replace", "live", "timestamp")


def _split_options(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return [p for p in parts if p]


def parse_options(options: str | int | None) -> dict[str, Any]:
    """Parse an AMPS ``options`` string such as ``"oof,no_empties,skip_n=5,select=[+/a]"``.

    Returns a dict with flags (``oof``, ``no_empties``, ``no_sowkey``, ``send_keys``,
    ``replace``, ``live``, ``timestamp``: True when present), ``skip_n``/``top_n``/
    ``max_backlog`` ints, ``select`` (the bracketed list text) and ``rate``/``rate_max_gap`` (text;
    replay pacing has no effect in process).

    Raises:
        QueryOptionError: an unknown option or a bad value.

    Example:
        >>> parse_options("oof,top_n=3")
        {'oof': True, 'top_n': 3}
    """
    if options is None or options == 0 or options == "":
        return {}
    if not isinstance(options, str):
        raise QueryOptionError("options", options, "expected an AMPS options string")
    out: dict[str, Any] = {}
    for part in _split_options(options):
        name, eq, value = (s.strip() for s in part.partition("="))
        if name in _FLAGS and not eq:
            out[name] = True
        elif name in ("skip_n", "top_n", "max_backlog") and eq:
            if not value.isdigit():
                raise QueryOptionError(name, value, "expected a non-negative integer")
            out[name] = int(value)
        elif name == "select" and value.startswith("[") and value.endswith("]"):
            out[name] = value
        elif name in _PACING and eq and value:
            out[name] = value  # replay pacing: accepted, a replay runs at full speed
        elif name in ("projection", "grouping") and value.startswith("[") and value.endswith("]"):
            out[name] = split_fields(value)  # an aggregated query (sowlib.views)
        else:
            raise QueryOptionError("options", part, "unknown or malformed option")
    return out


def _signature(*required: str, **defaults: Any) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(n, kind) for n in required]
    params += [inspect.Parameter(n, kind, default=v) for n, v in defaults.items()]
    return inspect.Signature(params)


SOW = _signature(
    "topic",
    filter=None,
    batch_size=10,
    timeout=0,
    top_n=None,
    order_by=None,
    bookmark=None,
    options=0,
)
SUBSCRIBE = _signature(
    "topic", filter=None, options=None, timeout=0, sub_id=None, bookmark=None, oof_enabled=False
)
SOW_AND_SUBSCRIBE = _signature(
    "topic",
    filter=None,
    batch_size=1,
    oof_enabled=False,
    timeout=0,
    top_n=None,
    order_by=None,
    bookmark=None,
    options=None,
    sub_id=None,
)
SOW_AND_DELTA_SUBSCRIBE = _signature(
    "topic",
    filter=None,
    batch_size=1,
    oof_enabled=False,
    send_empties=False,
    timeout=0,
    top_n=None,
    order_by=None,
    options=None,
    sub_id=None,
)
BOOKMARK_SUBSCRIBE = _signature(
    "topic", "bookmark", filter=None, sub_id=None, options=None, timeout=0
)
SOW_DELETE = _signature("topic", filter=None, timeout=0)
BY_KEYS = _signature("topic", keys="", timeout=0)
BY_DATA = _signature("topic", data="", timeout=0)


def bind_arguments(
    sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Handler | None, dict[str, Any]]:
    """Split the optional leading message handler off, then bind like Python would.

    Raises:
        QueryOptionError: arguments that do not fit the signature.
    """
    handler = kwargs.pop("on_message", None)
    if handler is None and args and callable(args[0]):
        handler, args = args[0], args[1:]
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise ArgumentError("arguments", f"{args!r} {kwargs!r}", str(exc)) from None
    bound.apply_defaults()
    return handler, dict(bound.arguments)
