"""Recursive-descent parser: tokens -> :data:`~sowlib.expr.nodes.Node` (spec §1.5, §1.6).

Checks function names and arities against the registry and validates LIKE
patterns, so every error a filter can have is reported here with the full
expression and an offset. Imports only ``errors``, ``paths`` and ``expr``.
"""

from __future__ import annotations

from collections.abc import Container

from sowlib.errors import (
    FilterArityError,
    FilterSyntaxError,
    FilterTooDeepError,
    UnknownFunctionError,
)
from sowlib.expr import like
from sowlib.expr.functions import FUNCTIONS
from sowlib.expr.lexer import pattern_body, tokenize, unescape
from sowlib.expr.nodes import (
    And,
    Arith,
    BeginsWith,
    Between,
    Call,
    Compare,
    EndsWith,
    Field,
    InList,
    IsNaN,
    IsNull,
    Like,
    Literal,
    Neg,
    Node,
    Not,
    Or,
)
from sowlib.expr.operators import ADDITIVE, COMPARISONS, I64_MIN, MULTIPLICATIVE
from sowlib.expr.tokens import Kind, Token
from sowlib.paths import FieldPath

__all__ = ["MAX_NESTING", "parse"]

#: Most levels of parentheses, function calls, ``NOT`` and unary minus, nested in one
#: another, that a filter may have (FilterTooDeepError past it). Chains of AND, OR and
#: arithmetic at one level (``a AND b AND c ...``) are not nesting: any length works.
#: Parsing, compiling and evaluating recurse once per level, so this bounds the stack.
MAX_NESTING = 32

_NEGATABLE = frozenset({"BETWEEN", "IN", "LIKE", "BEGINS", "ENDS"})
_VALUE_WORDS = frozenset({"NULL", "TRUE", "FALSE"})


def parse(text: str) -> Node:
    """Parse filter ``text`` into an AST.

    Complexity: O(len(text)).

    Raises:
        FilterSyntaxError: the text is not a filter (``offset`` = the problem).
        UnknownFunctionError: a function name is not in the registry.
        FilterArityError: a function is called with the wrong number of arguments.
    """
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.tok = self.tokens[0]  # the current token
        self.depth = 0  # nesting levels open now (see MAX_NESTING)

    # -- token helpers -------------------------------------------------------
    def peek(self) -> Token:
        """The token after the current one (EOF at the end)."""
        return self.tokens[min(self.i + 1, len(self.tokens) - 1)]

    def advance(self) -> Token:
        """Step past the current token (never past EOF) and return it."""
        tok = self.tok
        if tok.kind is not Kind.EOF:
            self.i += 1
            self.tok = self.tokens[self.i]
        return tok

    def is_word(self, word: str) -> bool:
        """Whether the current token is the keyword ``word`` (upper case)."""
        return self.tok.kind is Kind.WORD and self.tok.value == word

    def is_op(self, ops: Container[str]) -> bool:
        """Whether the current token is an operator in ``ops`` (canonical spelling)."""
        return self.tok.kind is Kind.OP and self.tok.value in ops

    def fail(self, expected: str, tok: Token | None = None) -> FilterSyntaxError:
        tok = tok or self.tok
        return FilterSyntaxError(self.text, tok.start, expected, tok.describe())

    def enter(self, tok: Token) -> None:
        """Open one nesting level at ``tok``; past :data:`MAX_NESTING`, FilterTooDeepError."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise FilterTooDeepError(
                self.text,
                tok.start,
                f"at most {MAX_NESTING} nested parentheses, calls, NOT or unary minus",
                tok.describe(),
            )

    def expect(self, kind: Kind, expected: str) -> Token:
        if self.tok.kind is not kind:
            raise self.fail(expected)
        return self.advance()

    def expect_word(self, word: str) -> Token:
        if not self.is_word(word):
            raise self.fail(word)
        return self.advance()

    # -- grammar -------------------------------------------------------------
    def parse(self) -> Node:
        node = self.or_expr()
        if self.tok.kind is not Kind.EOF:
            raise self.fail("an operator or end of input")
        return node

    def or_expr(self) -> Node:
        left = self.and_expr()
        while self.is_word("OR"):
            self.advance()
            right = self.and_expr()
            left = Or(left, right, start=left.start, end=right.end)
        return left

    def and_expr(self) -> Node:
        left = self.not_expr()
        while self.is_word("AND"):
            self.advance()
            right = self.not_expr()
            left = And(left, right, start=left.start, end=right.end)
        return left

    def not_expr(self) -> Node:
        if self.is_word("NOT"):
            self.enter(self.tok)
            start = self.advance().start
            operand = self.not_expr()
            self.depth -= 1
            return Not(operand, start=start, end=operand.end)
        return self.predicate()

    def predicate(self) -> Node:
        left = self.additive()
        if self.is_op(COMPARISONS):
            op = str(self.advance().value)
            right = self.additive()
            return Compare(op, left, right, start=left.start, end=right.end)
        if self.tok.kind is not Kind.WORD:
            return left
        negated = False
        if self.is_word("NOT"):
            nxt = self.peek()
            if nxt.kind is not Kind.WORD or nxt.value not in _NEGATABLE:
                raise self.fail("BETWEEN, IN, LIKE, BEGINS WITH or ENDS WITH after NOT", nxt)
            self.advance()
            negated = True
        word = self.tok.value
        if word == "BETWEEN":
            self.advance()
            low = self.additive()
            self.expect_word("AND")
            high = self.additive()
            return Between(left, low, high, negated, start=left.start, end=high.end)
        if word == "IN":
            self.advance()
            items, end = self.paren_list()
            return InList(left, items, negated, start=left.start, end=end)
        if word == "LIKE":
            self.advance()
            return self.like(left, negated)
        if word in ("BEGINS", "ENDS"):
            self.advance()
            self.expect_word("WITH")
            items, end = self.paren_list()
            cls = BeginsWith if word == "BEGINS" else EndsWith
            return cls(left, items, negated, start=left.start, end=end)
        if word == "IS":
            self.advance()
            neg = False
            if self.is_word("NOT"):
                self.advance()
                neg = True
            if self.is_word("NULL"):
                end = self.advance().end
                return IsNull(left, neg, start=left.start, end=end)
            if self.is_word("NAN"):
                end = self.advance().end
                return IsNaN(left, neg, start=left.start, end=end)
            raise self.fail("NULL or NAN after IS")
        return left

    def like(self, value: Node, negated: bool) -> Node:
        tok = self.tok
        if tok.kind not in (Kind.STRING, Kind.RAW_STRING):
            raise self.fail("a string literal pattern after LIKE")
        self.advance()
        raw = tok.kind is Kind.RAW_STRING
        body = str(tok.value)
        pattern = body if raw else pattern_body(body, tok.text[-1])
        if not raw:
            like.check_pattern(pattern, self.text, tok.start)
        return Like(value, pattern, raw, negated, start=value.start, end=tok.end)

    def paren_list(self) -> tuple[tuple[Node, ...], int]:
        self.expect(Kind.LPAREN, "'('")
        items = [self.additive()]
        while self.tok.kind is Kind.COMMA:
            self.advance()
            items.append(self.additive())
        end = self.expect(Kind.RPAREN, "',' or ')'").end
        return tuple(items), end

    def additive(self) -> Node:
        left = self.multiplicative()
        while self.is_op(ADDITIVE):
            op = str(self.advance().value)
            right = self.multiplicative()
            left = Arith(op, left, right, start=left.start, end=right.end)
        return left

    def multiplicative(self) -> Node:
        left = self.unary()
        while self.is_op(MULTIPLICATIVE) or self.is_word("MOD"):
            tok = self.advance()
            op = "%" if tok.kind is Kind.WORD else str(tok.value)
            right = self.unary()
            left = Arith(op, left, right, start=left.start, end=right.end)
        return left

    def unary(self) -> Node:
        if self.is_op({"-"}):
            minus = self.advance()
            start = minus.start
            num = self.tok
            if num.kind is Kind.NUMBER:
                self.advance()
                value = num.value
                assert isinstance(value, int | float)
                folded: int | float = -value
                if isinstance(folded, int) and folded < I64_MIN:
                    folded = float(folded)
                return Literal(folded, start=start, end=num.end)
            self.enter(minus)
            operand = self.unary()
            self.depth -= 1
            return Neg(operand, start=start, end=operand.end)
        return self.primary()

    def primary(self) -> Node:
        tok = self.tok
        if tok.kind is Kind.PATH:
            self.advance()
            assert isinstance(tok.value, FieldPath)
            return Field(tok.value, start=tok.start, end=tok.end)
        if tok.kind is Kind.NUMBER:
            self.advance()
            assert isinstance(tok.value, int | float)
            return Literal(tok.value, start=tok.start, end=tok.end)
        if tok.kind in (Kind.STRING, Kind.RAW_STRING):
            self.advance()
            body = str(tok.value)
            if tok.kind is Kind.STRING:
                body = unescape(body, self.text, tok.start + 1)
            return Literal(body or None, start=tok.start, end=tok.end)
        if tok.kind is Kind.LPAREN:
            self.enter(tok)
            self.advance()
            node = self.or_expr()
            self.expect(Kind.RPAREN, "')'")
            self.depth -= 1
            return node
        if tok.kind is Kind.WORD:
            return self.word()
        raise self.fail("a value")

    def word(self) -> Node:
        tok = self.tok
        name = str(tok.value)
        if name in _VALUE_WORDS:
            self.advance()
            if name == "NULL":
                return Literal(None, start=tok.start, end=tok.end)
            fn = "TRUE_VALUE" if name == "TRUE" else "FALSE_VALUE"
            return Call(fn, (), start=tok.start, end=tok.end)
        nxt = self.peek()
        if nxt.kind is not Kind.LPAREN or name in ("AND", "OR", "NOT", "IS", "MOD", "WITH"):
            raise self.fail("a value")
        spec = FUNCTIONS.get(name)
        if spec is None:
            raise UnknownFunctionError(self.text, tok.start, tok.text)
        self.enter(tok)
        self.advance()
        self.advance()
        args: list[Node] = []
        if self.tok.kind is not Kind.RPAREN:
            args.append(self.argument(name, 0))
            while self.tok.kind is Kind.COMMA:
                self.advance()
                args.append(self.argument(name, len(args)))
        end = self.expect(Kind.RPAREN, "',' or ')'").end
        self.depth -= 1
        if not spec.min_args <= len(args) <= (spec.max_args if spec.max_args >= 0 else 1 << 30):
            raise FilterArityError(self.text, tok.start, name, spec.arity_text(), len(args))
        return Call(name, tuple(args), start=tok.start, end=end)

    def argument(self, name: str, index: int) -> Node:
        tok = self.tok
        nxt = self.peek()
        if (
            name == "REGEXP_REPLACE"
            and index == 1
            and tok.kind in (Kind.STRING, Kind.RAW_STRING)
            and nxt.kind in (Kind.COMMA, Kind.RPAREN)
        ):
            # the pattern argument reaches the regex engine like a LIKE pattern (§1.2 [R])
            self.advance()
            body = str(tok.value)
            pattern = body if tok.kind is Kind.RAW_STRING else pattern_body(body, tok.text[-1])
            if pattern:
                like.check_pattern(pattern, self.text, tok.start)
            return Literal(pattern or None, start=tok.start, end=tok.end)
        return self.or_expr()
