"""The compile-time fast paths agree with the general code they shortcut."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.errors import FilterError
from sowlib.expr.lexer import tokenize, tokenize_general
from sowlib.expr.tokens import Token

# fragments that sit on the edges of the fast lexer's patterns (numbers followed by
# letters or dots, escapes, raw strings, '/' as division or path, non-ASCII)
FRAGMENTS = st.sampled_from(
    ["/a", "/@x", "/a.b-c:d[3]", "/", "/@", " ", "\t", "\n", "=", "==", "<>", "!", "!=", "<=",
     ">=", "<", ">", "+", "-", "*", "%", "AND", "or", "MOD", "r'", 'R"', "'", '"', "\\", "x",
     "r", "1", "1.", ".5", "1e", "1e5", "2.5e+3", "1e999", "99999999999999999999999", "0x",
     "é", "@", "_", "[/", "]", "[/x y]", "(", ")", ",", "'a b'", "'a\\'b'", "'é'", "\u00b2"]
)  # fmt: skip


def _lex(fn: object, text: str) -> list[Token] | tuple[str, int]:
    assert callable(fn)
    try:
        tokens: list[Token] = fn(text)
    except FilterError as exc:
        return type(exc).__name__, int(getattr(exc, "offset", -1))
    return tokens


@settings(max_examples=500)
@given(st.lists(FRAGMENTS, max_size=12).map("".join))
def test_fast_lexer_equals_the_general_one_on_fragment_soup(text: str) -> None:
    assert _lex(tokenize, text) == _lex(tokenize_general, text)


@settings(max_examples=300)
@given(st.text(max_size=30))
def test_fast_lexer_equals_the_general_one_on_any_text(text: str) -> None:
    assert _lex(tokenize, text) == _lex(tokenize_general, text)
