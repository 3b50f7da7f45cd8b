"""``<View>`` and ``<ConflatedTopic>`` of an AMPS ``<SOW>`` section, read as topic configs.

A derived topic is a transient topic whose ``options`` carry its definition
(``"view"`` or ``"conflated"``); ``SowStore`` starts maintaining it. The view's
projection and grouping are checked when the store compiles them. Imports the
model, ``errors``, ``paths`` and ``units``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lxml import etree

from sowlib.config.model import TopicConfig
from sowlib.errors import ConfigError, FieldPathError
from sowlib.paths import parse_path
from sowlib.units import parse_duration

__all__ = ["DERIVED_TAGS", "derived_config"]

#: The elements of a SOW section this module reads.
DERIVED_TAGS = frozenset({"View", "ConflatedTopic"})

_VIEW_SINGLE = {"Name", "UnderlyingTopic", "MessageType", "Projection", "Grouping", "Filter"}
_CONFLATED_SINGLE = {"Name", "UnderlyingTopic", "MessageType", "Interval", "Filter", "Expiration"}
Expand = Callable[[str, str], str]
_LEFT = re.compile(r"\s*(?:\[[^\]]+\]\.)?\[([^\]]+)\]\.\[")


def _tag(element: Any) -> str:
    tag = element.tag
    return etree.QName(tag).localname if isinstance(tag, str) else str(tag)


def _children(element: Any) -> list[Any]:
    return [c for c in element if isinstance(c.tag, str)]


def _text(element: Any, where: str, expand: Expand) -> str:
    if _children(element):
        raise ConfigError(where, "expected text, found child elements")
    text = (element.text or "").strip()
    if not text:
        raise ConfigError(where, "is empty")
    return expand(text, where)


def _fields(element: Any, where: str, expand: Expand) -> list[str]:
    out = []
    for number, kid in enumerate(_children(element), 1):
        path = f"{where}/Field[{number}]"
        if _tag(kid) != "Field":
            raise ConfigError(f"{where}/{_tag(kid)}", "unknown element (expected Field)")
        out.append(_text(kid, path, expand))
    if not out:
        raise ConfigError(where, "needs at least one Field")
    return out


def _singles(element: Any, where: str, allowed: set[str]) -> dict[str, tuple[str, Any]]:
    values: dict[str, tuple[str, Any]] = {}
    for kid in _children(element):
        tag = _tag(kid)
        path = f"{where}/{tag}"
        if tag not in allowed:
            raise ConfigError(path, f"unknown element (expected {', '.join(sorted(allowed))})")
        if tag in values:
            raise ConfigError(path, "appears more than once")
        values[tag] = (path, kid)
    for tag in ("Name", "UnderlyingTopic", "MessageType"):
        if tag not in values:
            raise ConfigError(f"{where}/{tag}", "is required")
    return values


def _underlying(values: dict[str, tuple[str, Any]], expand: Expand) -> tuple[str, str | None]:
    """The underlying topic, and the join text when it is a ``<Join>`` (its left topic)."""
    path, kid = values["UnderlyingTopic"]
    joins = _children(kid)
    if not joins:
        return _text(kid, path, expand), None
    if len(joins) > 1 or _tag(joins[0]) != "Join":
        raise ConfigError(path, "expected one Join element (a join of two topics)")
    text = _text(joins[0], f"{path}/Join", expand)
    left = _LEFT.match(text)
    if left is None:
        raise ConfigError(f"{path}/Join", f"{text!r} is not '[topic].[/field] = [topic].[/field]'")
    return left.group(1), text


def derived_config(element: Any, where: str, expand: Expand) -> TopicConfig:
    """The topic config of a ``<View>`` or ``<ConflatedTopic>`` element.

    Args:
        element: the element (lxml).
        where: its element path, for errors (``SOW/View[2]``).
        expand: ``expand(text, where)`` substitutes ``${NAME}`` variables.
    Raises:
        ConfigError: naming the element: unknown or repeated children, a missing
            Name, UnderlyingTopic or MessageType, a bad Interval or Expiration, a
            grouping that is not a field path.
    """
    kind = _tag(element)
    if kind == "View":
        values = _singles(element, where, _VIEW_SINGLE)
    else:
        values = _singles(element, where, _CONFLATED_SINGLE)

    def text(tag: str) -> str | None:
        got = values.get(tag)
        return None if got is None else _text(got[1], got[0], expand)

    name, message_type = text("Name") or "", (text("MessageType") or "").lower()
    underlying, join = _underlying(values, expand)
    expiration = None
    if kind == "View":
        if "Projection" not in values:
            raise ConfigError(f"{where}/Projection", "is required")
        projection = _fields(values["Projection"][1], values["Projection"][0], expand)
        grouping: list[str] = []
        if "Grouping" in values:
            gpath, gkid = values["Grouping"]
            for number, field in enumerate(_fields(gkid, gpath, expand), 1):
                if join is not None:  # [topic].[/path]: checked when the store compiles it
                    grouping.append(field)
                    continue
                try:
                    grouping.append(parse_path(field).to_text())
                except FieldPathError as exc:
                    raise ConfigError(f"{gpath}/Field[{number}]", str(exc)) from None
        options: dict[str, Any] = {
            "view": {
                "name": name,
                "underlying": underlying,
                "projection": projection,
                "grouping": grouping,
                "filter": text("Filter"),
                "message_type": message_type,
                "join": join,
            }
        }
    else:
        if join is not None:
            raise ConfigError(f"{where}/UnderlyingTopic/Join", "a conflated topic has one topic")
        if "Interval" not in values:
            raise ConfigError(f"{where}/Interval", "is required")
        interval = parse_duration(text("Interval") or "", values["Interval"][0])
        if not interval > 0:
            raise ConfigError(values["Interval"][0], "the interval must be positive")
        expiration = text("Expiration")
        if expiration is not None:
            parse_duration(expiration, values["Expiration"][0])
        options = {
            "conflated": {
                "name": name,
                "underlying": underlying,
                "interval": interval,
                "filter": text("Filter"),
            }
        }
    try:
        return TopicConfig.make(
            name,
            message_type=message_type,
            durability="transient",
            expiration=expiration,
            options=options,
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}/{exc.where}", exc.reason) from None
