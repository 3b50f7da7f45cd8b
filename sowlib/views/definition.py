"""View definitions: ``ViewSpec`` (plain data) and its compiled form (projection and grouping).

A projection field is ``expression [AS /target]``; the expression may call the
aggregate functions of :mod:`sowlib.views.aggregates` around any filter-language
expression. Imports ``expr``, ``paths``, ``document`` and ``errors`` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
from xxhash import xxh64_intdigest

from sowlib.document import MISSING
from sowlib.errors import ConfigError, FieldPathError, FilterError
from sowlib.expr import compile_filter, parse_filter
from sowlib.expr.nodes import Field, Node, walk
from sowlib.expr.to_python import compile_node
from sowlib.paths import FieldPath, parse_path
from sowlib.views.aggregates import AGGREGATES, Aggregate, distinct_value

__all__ = ["AggregateCall", "CompiledView", "ProjectedField", "ViewSpec", "compile_view"]

_AS = re.compile(r"\s+AS\s+", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SLOT = "__agg_"
_PATH = re.compile(r"\[[^\]]*\]|/[^\s()*+\-%,<>=!]*")


@attrs.frozen
class ViewSpec:
    """What defines a view (or an aggregated query): plain, JSON-able data.

    Attributes:
        name: the view's topic name.
        underlying: the topic it aggregates (a join's left topic).
        projection: ``"/customer"``, ``"SUM(/quantity * /price) AS /total"``...
        grouping: field paths; one view record per distinct combination.
        filter: only underlying records matching it count (None: all).
        message_type: the view's message type (None: the underlying topic's).
        join: ``"[a].[/x] = [b].[/y]"``: the view aggregates the join of two topics.
    """

    name: str
    underlying: str
    projection: tuple[str, ...]
    grouping: tuple[str, ...] = ()
    filter: str | None = None
    message_type: str | None = None
    join: str | None = None

    @classmethod
    def make(
        cls,
        name: str,
        underlying: str,
        projection: Iterable[str] | str,
        grouping: Iterable[str] | str = (),
        filter: str | None = None,
        message_type: str | None = None,
        join: str | None = None,
    ) -> ViewSpec:
        """Check the types of the arguments and build the spec.

        Raises:
            ConfigError: an argument of the wrong type, or no projection.
        """
        fields = (projection,) if isinstance(projection, str) else tuple(projection)
        groups = (grouping,) if isinstance(grouping, str) else tuple(grouping)
        for what, value in (("name", name), ("underlying", underlying)):
            if not isinstance(value, str) or not value:
                raise ConfigError(what, f"{value!r} is not a topic name")
        if not fields:
            raise ConfigError("projection", "a view needs at least one projected field")
        for what, items in (("projection", fields), ("grouping", groups)):
            for item in items:
                if not isinstance(item, str) or not item.strip():
                    raise ConfigError(what, f"{item!r} is not a field expression")
        if filter is not None and not isinstance(filter, str):
            raise ConfigError("filter", f"{filter!r} is not a filter expression")
        if join is not None and not isinstance(join, str):
            raise ConfigError("join", f"{join!r} is not a join expression")
        return cls(name, underlying, fields, groups, filter, message_type, join)

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-able data (stored in the view topic's options)."""
        return {
            "name": self.name,
            "underlying": self.underlying,
            "projection": list(self.projection),
            "grouping": list(self.grouping),
            "filter": self.filter,
            "message_type": self.message_type,
            "join": self.join,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ViewSpec:
        """Inverse of :meth:`to_dict`."""
        return cls.make(
            data["name"],
            data["underlying"],
            data["projection"],
            data.get("grouping", ()),
            data.get("filter"),
            data.get("message_type"),
            data.get("join"),
        )


@attrs.frozen
class AggregateCall:
    """One aggregate in a projection: its state class and how to read its argument."""

    function: str
    state: type[Aggregate]
    argument: Callable[[Any], Any]  # doc -> raw value (COUNT(*): always 1)
    node: Node | None = None  # the argument's expression (None: COUNT(*))


@attrs.frozen
class ProjectedField:
    """One projected field: its target path and how to compute its value.

    ``slot`` is set when the field is one aggregate (the common case) or one plain
    field; otherwise ``compute`` evaluates the expression over a document of slots.
    """

    target: FieldPath
    text: str
    direct: tuple[str, int] | None  # ("agg", i) or ("plain", i)
    compute: Callable[[Any], Any] | None
    names: tuple[str, ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "names", self.target.names)


@attrs.frozen
class CompiledView:
    """A :class:`ViewSpec` compiled: what each record contributes, what each group shows."""

    spec: ViewSpec
    aggregates: tuple[AggregateCall, ...]
    plains: tuple[FieldPath, ...]  # non-aggregated fields, read from the latest record
    fields: tuple[ProjectedField, ...]
    groups: tuple[FieldPath, ...]

    # the hot path of every change: resolvers and converters looked up once
    _group_getters: tuple[Callable[[Any], Any], ...] = attrs.field(init=False, repr=False)
    _readers: tuple[tuple[Callable[[Any], Any], Callable[[Any], Any]], ...] = attrs.field(
        init=False, repr=False
    )
    _plain_getters: tuple[Callable[[Any], Any], ...] = attrs.field(init=False, repr=False)
    # (target name, from an aggregate, position) of each field when all are direct
    # and top-level (the common view), else None
    _flat: tuple[tuple[str, bool, int], ...] | None = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_group_getters", tuple(p.getter for p in self.groups))
        readers = tuple((a.state.convert, a.argument) for a in self.aggregates)
        object.__setattr__(self, "_readers", readers)
        object.__setattr__(self, "_plain_getters", tuple(p.getter for p in self.plains))
        flat: tuple[tuple[str, bool, int], ...] | None = tuple(
            (f.names[0], f.direct[0] == "agg", f.direct[1])
            for f in self.fields
            if f.direct is not None and len(f.names) == 1
        )
        object.__setattr__(self, "_flat", flat if len(flat or ()) == len(self.fields) else None)

    def group_of(self, doc: Any) -> tuple[Any, ...]:
        """The group key of a record (missing and NULL grouping values are None)."""
        return tuple([distinct_value(get(doc)) for get in self._group_getters])

    def values_of(self, doc: Any) -> tuple[Any, ...]:
        """Each aggregate's converted argument for the record (None: not counted)."""
        return tuple([convert(read(doc)) for convert, read in self._readers])

    def plains_of(self, doc: Any) -> tuple[Any, ...]:
        """The non-aggregated fields' values in the record."""
        return tuple([get(doc) for get in self._plain_getters])

    def render(self, results: Sequence[Any], plains: Sequence[Any]) -> dict[str, Any]:
        """The view's message for a group: NULL results are left out."""
        flat = self._flat
        if flat is not None:  # every field one aggregate or one plain field, at the top
            out = {}
            for name, agg, i in flat:
                value = results[i] if agg else plains[i]
                if value is not None and value is not MISSING:
                    out[name] = value
            return out
        return self.render_fields(results, plains)

    def render_fields(self, results: Sequence[Any], plains: Sequence[Any]) -> dict[str, Any]:
        """:meth:`render` field by field (its reference, and the path of computed and
        nested fields)."""
        out: dict[str, Any] = {}
        slots: dict[str, Any] | None = None
        for f in self.fields:
            if f.direct is not None:
                kind, i = f.direct
                value = results[i] if kind == "agg" else plains[i]
            else:
                assert f.compute is not None
                if slots is None:
                    slots = self._slots(results, plains)
                value = f.compute(slots)
            if value is None or value is MISSING:
                continue
            names = f.names
            if len(names) == 1:
                out[names[0]] = value
            else:
                _put(out, names, value)
        return out

    def _slots(self, results: Sequence[Any], plains: Sequence[Any]) -> dict[str, Any]:
        doc: dict[str, Any] = {f"{_SLOT}{i}": v for i, v in enumerate(results)}
        for path, value in zip(self.plains, plains, strict=True):
            if value is not MISSING:
                _put(doc, path.names, value)
        return doc


#: What ``json.dumps(values, default=repr, separators=(",", ":"))`` makes, made once.
_GROUP_TEXT = json.JSONEncoder(default=repr, separators=(",", ":"))


def group_sow_key(group: tuple[Any, ...]) -> str:
    """The SOW key of a group's view record: a hash of its grouping values."""
    text = _GROUP_TEXT.encode(list(group))
    return str(xxh64_intdigest(text.encode("utf-8", "surrogatepass")))


def _put(target: dict[str, Any], names: tuple[str, ...], value: Any) -> None:
    for name in names[:-1]:
        inner = target.get(name)
        if not isinstance(inner, dict):
            inner = target[name] = {}
        target = inner
    target[names[-1]] = value


def _path(text: str, where: str) -> FieldPath:
    try:
        path = parse_path(text.strip())
    except FieldPathError as exc:
        raise ConfigError(where, f"{text!r} is not a field path: {exc}") from None
    if any(step.index is not None for step in path.steps):
        raise ConfigError(where, f"{text!r}: a target or grouping path cannot index an array")
    return path


def _split_calls(text: str, where: str, base: int = 0) -> tuple[str, list[tuple[str, str]]]:
    """Replace each aggregate call in ``text`` by a slot field numbered from ``base``;
    return the text and the calls found, in order."""
    out: list[str] = []
    calls: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":  # a string literal: copied as it is
            end = text.find(ch, i + 1)
            end = n - 1 if end < 0 else end
            out.append(text[i : end + 1])
            i = end + 1
            continue
        if ch == "[" or ch == "/":  # a path: its words are field names, not functions
            m = _PATH.match(text, i)
            assert m is not None
            out.append(m.group())
            i = m.end()
            continue
        m = _WORD.match(text, i)
        if m is None:
            out.append(ch)
            i += 1
            continue
        word, j = m.group(), m.end()
        while j < n and text[j].isspace():
            j += 1
        if word.upper() not in AGGREGATES or j >= n or text[j] != "(":
            out.append(word)
            i = m.end()
            continue
        depth, k = 0, j
        while k < n:
            if text[k] in "'\"":
                close = text.find(text[k], k + 1)
                k = n if close < 0 else close
            elif text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        if k >= n:
            raise ConfigError(where, f"{text!r}: unbalanced parentheses after {word}")
        out.append(f"/{_SLOT}{base + len(calls)}")
        calls.append((word.upper(), text[j + 1 : k].strip()))
        i = k + 1
    return "".join(out), calls


def _argument(function: str, text: str, where: str) -> tuple[Callable[[Any], Any], Node | None]:
    if text == "*":
        if function != "COUNT":
            raise ConfigError(where, f"{function}(*) is not allowed; only COUNT(*) is")
        return (lambda doc: 1), None
    if not text:
        raise ConfigError(where, f"{function}() needs an argument")
    if _split_calls(text, where)[1]:
        raise ConfigError(where, f"{text!r}: an aggregate cannot contain another aggregate")
    try:
        node = parse_filter(text)
    except FilterError as exc:
        raise ConfigError(where, f"{function}({text}): {exc}") from None
    if isinstance(node, Field):
        return node.path.getter, node
    fn = compile_node(node)
    return (lambda doc: fn(doc, None)), node


def compile_view(spec: ViewSpec) -> CompiledView:
    """Compile the projection, grouping and filter of ``spec``.

    Raises:
        ConfigError: ``where`` names the projection or grouping entry at fault.
    """
    aggregates: list[AggregateCall] = []
    plains: list[FieldPath] = []
    fields: list[ProjectedField] = []
    targets: set[FieldPath] = set()
    for number, entry in enumerate(spec.projection, 1):
        where = f"Projection/Field[{number}]"
        parts = _AS.split(entry.strip())
        if len(parts) > 2:
            raise ConfigError(where, f"{entry!r} has more than one AS")
        expression = parts[0].strip()
        text, calls = _split_calls(expression, where, len(aggregates))
        for function, arg in calls:
            argument, arg_node = _argument(function, arg, where)
            call = AggregateCall(function, AGGREGATES[function], argument, arg_node)
            aggregates.append(call)
        try:
            node = parse_filter(text)
        except FilterError as exc:
            raise ConfigError(where, f"{entry!r}: {exc}") from None
        if len(parts) == 2:
            target = _path(parts[1], where)
        elif isinstance(node, Field) and not calls:
            target = node.path
        else:
            raise ConfigError(where, f"{entry!r}: an expression needs AS /target")
        if target in targets:
            raise ConfigError(where, f"{entry!r}: the target {target} is projected twice")
        targets.add(target)
        for sub in walk(node):
            plain = isinstance(sub, Field) and not sub.path.names[0].startswith(_SLOT)
            if plain and isinstance(sub, Field) and sub.path not in plains:
                plains.append(sub.path)
        direct: tuple[str, int] | None = None
        compute: Callable[[Any], Any] | None = None
        if isinstance(node, Field):
            head = node.path.names[0]
            if head.startswith(_SLOT) and len(node.path.steps) == 1:
                direct = ("agg", int(head[len(_SLOT) :]))
            else:
                direct = ("plain", plains.index(node.path))
        else:
            fn = compile_node(node)
            compute = lambda doc, fn=fn: fn(doc, None)  # noqa: E731  # bound per field
        fields.append(ProjectedField(target, entry, direct, compute))
    groups = tuple(_path(g, f"Grouping/Field[{i}]") for i, g in enumerate(spec.grouping, 1))
    if spec.filter is not None:
        try:
            compile_filter(spec.filter)
        except FilterError as exc:
            raise ConfigError("Filter", str(exc)) from None
    return CompiledView(spec, tuple(aggregates), tuple(plains), tuple(fields), groups)
