"""Compiling a filter: the boolean flag found in the compile pass agrees with
``is_boolean``, and compiling leaves the cyclic collector as it found it."""

from __future__ import annotations

import contextlib
import gc

import pytest
from hypothesis import given, settings

from sowlib.errors import FilterError
from sowlib.expr import clear_cache, compile_filter
from sowlib.expr.nodes import (
    Node,
)
from sowlib.expr.to_python import compile_tree, is_boolean
from tests.expr.strategies import nodes


@settings(max_examples=200)
@given(nodes)
def test_compile_tree_finds_the_same_boolean_flag_as_is_boolean(node: Node) -> None:
    _, boolean = compile_tree(node)
    assert boolean is is_boolean(node)


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("text", ["/a = 1 AND /b LIKE 'x'", "/a = (1"])
def test_compile_leaves_the_cyclic_gc_as_it_found_it(enabled: bool, text: str) -> None:
    clear_cache()
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with contextlib.suppress(FilterError):
            compile_filter(text)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
