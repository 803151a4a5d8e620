"""Nunjucks 3.2.4's expressions (``nunjucks/src/parser.js``), parsed into Jinja2 nodes.

The grammar is Nunjucks': ``~`` binds looser than ``+``, ``%`` tighter than ``/``, ``is`` and
``in`` sit below the comparisons, ``===`` and ``!==`` compare strictly, ``(a, b)`` is
JavaScript's comma operator, and ``x is divisibleby 3`` (a test argument without parentheses),
``x[1:2]``, ``x.0`` and ``"a" "b"`` are errors. The tree is the one Nunjucks parses;
:mod:`coalmine.promptfoo.nunjucks._emission` then gives it the meaning of the JavaScript
Nunjucks compiles it to. What Jinja2 has no node for is a call of a ``__js_*`` helper filter
(see :mod:`coalmine.promptfoo.nunjucks._env`); filters and tests are looked up when they run, as
in Nunjucks (an unknown filter in a branch never taken is no error).
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

from jinja2 import TemplateSyntaxError, nodes

from coalmine.promptfoo.nunjucks._js import js_string
from coalmine.promptfoo.nunjucks._lexer import LexError, Tok, Tokenizer

__all__ = ["ExpressionParser", "Signature", "helper_call"]

_COMPARE = {
    "==": "eq",
    "===": "seq",
    "!=": "ne",
    "!==": "sne",
    "<": "lt",
    ">": "gt",
    "<=": "lteq",
    ">=": "gteq",
}
_BINARY = [  # loosest first: each level's operands are the next level's expressions
    ("operator", "+", nodes.Add),
    ("operator", "-", nodes.Sub),
    ("operator", "*", nodes.Mul),
    ("operator", "/", nodes.Div),
    ("operator", "//", nodes.FloorDiv),
    ("operator", "%", nodes.Mod),
    ("operator", "**", nodes.Pow),
]
_CLOSING = ("right-paren", "right-bracket", "right-curly")

Signature = tuple[list[nodes.Expr], list[tuple[nodes.Expr, nodes.Expr]]]


def helper_call(name: str, *args: nodes.Expr, lineno: int) -> nodes.Filter:
    """A call of one of the environment's ``__js_*`` helper filters."""
    return nodes.Filter(args[0], name, list(args[1:]), [], None, None, lineno=lineno)


def _number(value: float, lineno: int) -> nodes.Expr:
    if math.isinf(value):  # ``parseInt`` of 400 digits; Jinja2 cannot print inf as a constant
        return nodes.Div(nodes.Const(1), nodes.Const(0), lineno=lineno)
    return nodes.Const(value, lineno=lineno)


def _parse_int(text: str) -> float:
    value = int(text)
    if abs(value) <= 2**53:
        return value
    try:
        return float(value)
    except OverflowError:
        return math.inf


class ExpressionParser:
    """The port of Nunjucks' ``Parser``: tokens and expressions, one method per ``parse*``."""

    def __init__(self, source: str) -> None:
        self.tokens = Tokenizer(source)
        self.peeked: Tok | None = None
        self.break_on_blocks: tuple[str, ...] | None = None
        self.drop_leading_whitespace = False

    # -- tokens

    def next_token(self) -> Tok | None:
        if self.peeked is not None:
            tok, self.peeked = self.peeked, None
            return tok
        try:
            found = self.tokens.next_token()
            while found is not None and found.type == "whitespace":
                found = self.tokens.next_token()
        except LexError as exc:
            raise TemplateSyntaxError(str(exc), exc.line) from None
        return found

    def peek_token(self) -> Tok | None:
        if self.peeked is None:
            self.peeked = self.next_token()
        return self.peeked

    def peek_type(self) -> str:
        tok = self.peek_token()
        return "" if tok is None else tok.type

    def push_token(self, tok: Tok | None) -> None:
        if self.peeked is not None:
            self.fail("pushToken: can only push one token on between reads")
        self.peeked = tok

    def fail(self, message: str, line: int | None = None) -> NoReturn:
        if line is None:
            line = self.peeked.line if self.peeked is not None else self.tokens.line
        raise TemplateSyntaxError(message, line)

    def skip(self, kind: str) -> bool:
        tok = self.next_token()
        if tok is None or tok.type != kind:
            self.push_token(tok)
            return False
        return True

    def expect(self, kind: str) -> Tok:
        tok = self.next_token()
        if tok is None:
            self.fail(f"expected {kind}, got end of file")
        if tok.type != kind:
            self.fail(f"expected {kind}, got {tok.type}", tok.line)
        return tok

    def skip_value(self, kind: str, value: str) -> bool:
        tok = self.next_token()
        if tok is None or tok.type != kind or tok.value != value:
            self.push_token(tok)
            return False
        return True

    def skip_symbol(self, value: str) -> bool:
        return self.skip_value("symbol", value)

    # -- expressions

    def parse_postfix(self, node: nodes.Expr) -> nodes.Expr:
        tok = self.peek_token()
        while tok is not None:
            if tok.type == "left-paren":
                args, kwargs = self.parse_signature()
                keywords = [nodes.Keyword(self._key(k), v, lineno=v.lineno) for k, v in kwargs]
                callee = helper_call(
                    "__js_callable", node, nodes.Const(_node_name(node)), lineno=tok.line
                )
                node = nodes.Call(callee, args, keywords, None, None, lineno=tok.line)
            elif tok.type == "left-bracket":
                _, children = self.parse_aggregate()
                if len(children) != 1:
                    self.fail("invalid index", tok.line)
                node = nodes.Getitem(node, children[0], "load", lineno=tok.line)
            elif tok.type == "operator" and tok.value == ".":
                self.next_token()
                val = self.next_token()
                if val is None:
                    self.fail("expected name as lookup value, got end of file")
                if val.type != "symbol":
                    self.fail(f"expected name as lookup value, got {val.value}", val.line)
                node = nodes.Getattr(node, val.value, "load", lineno=tok.line)
            else:
                break
            tok = self.peek_token()
        return node

    def parse_expression(self) -> nodes.Expr:
        node = self.parse_or()
        if self.skip_symbol("if"):
            cond = self.parse_or()
            else_ = self.parse_or() if self.skip_symbol("else") else None
            node = nodes.CondExpr(cond, node, else_, lineno=node.lineno)
        return node

    def parse_or(self) -> nodes.Expr:
        node = self.parse_and()
        while self.skip_symbol("or"):
            node = nodes.Or(node, self.parse_and(), lineno=node.lineno)
        return node

    def parse_and(self) -> nodes.Expr:
        node = self.parse_not()
        while self.skip_symbol("and"):
            node = nodes.And(node, self.parse_not(), lineno=node.lineno)
        return node

    def parse_not(self) -> nodes.Expr:
        tok = self.peek_token()
        if self.skip_symbol("not"):
            assert tok is not None
            return nodes.Not(self.parse_not(), lineno=tok.line)
        return self.parse_in()

    def parse_in(self) -> nodes.Expr:
        node = self.parse_is()
        while True:
            tok = self.next_token()
            if tok is None:
                break
            invert = tok.type == "symbol" and tok.value == "not"
            if not invert:
                self.push_token(tok)
            if self.skip_symbol("in"):
                operand = nodes.Operand("in", self.parse_is())
                node = nodes.Compare(node, [operand], lineno=node.lineno)
                if invert:
                    node = nodes.Not(node, lineno=node.lineno)
            else:
                if invert:
                    self.push_token(tok)
                break
        return node

    def parse_is(self) -> nodes.Expr:
        node = self.parse_compare()
        if self.skip_symbol("is"):
            negate = self.skip_symbol("not")
            right = self.parse_compare()
            name, args = _test_of(right)
            test = helper_call("__js_test", node, nodes.Const(name), *args, lineno=node.lineno)
            node = nodes.Compare(test, [nodes.Operand("seq", nodes.Const(True))])  # ``=== true``
            if negate:
                node = nodes.Not(node, lineno=node.lineno)
        return node

    def parse_compare(self) -> nodes.Expr:
        expr = self.parse_concat()
        ops = []
        while True:
            tok = self.next_token()
            if tok is None:
                break
            if isinstance(tok.value, str) and tok.value in _COMPARE:
                ops.append(nodes.Operand(_COMPARE[tok.value], self.parse_concat()))
            else:
                self.push_token(tok)
                break
        return nodes.Compare(expr, ops, lineno=expr.lineno) if ops else expr

    def parse_concat(self) -> nodes.Expr:
        node = self._binary(0)
        while self.skip_value("tilde", "~"):
            node = nodes.Concat([node, self._binary(0)], lineno=node.lineno)
        return node

    def _binary(self, level: int) -> nodes.Expr:
        """``parseAdd`` … ``parsePow``: one precedence level per operator."""
        if level == len(_BINARY):
            return self.parse_unary()
        kind, op, make = _BINARY[level]
        node = self._binary(level + 1)
        while self.skip_value(kind, op):
            node = make(node, self._binary(level + 1), lineno=node.lineno)
        return node

    def parse_unary(self, no_filters: bool = False) -> nodes.Expr:
        tok = self.peek_token()
        node: nodes.Expr
        if self.skip_value("operator", "-"):
            node = nodes.Neg(self.parse_unary(True), lineno=tok.line if tok else None)
        elif self.skip_value("operator", "+"):
            node = nodes.Pos(self.parse_unary(True), lineno=tok.line if tok else None)
        else:
            node = self.parse_primary()
        return node if no_filters else self.parse_filter(node)

    def parse_primary(self, no_postfix: bool = False) -> nodes.Expr:
        tok = self.next_token()
        if tok is None:
            self.fail("expected expression, got end of file")
        node: nodes.Expr
        if tok.type == "string":
            node = nodes.Const(tok.value, lineno=tok.line)
        elif tok.type == "int":
            node = _number(_parse_int(tok.value), tok.line)
        elif tok.type == "float":
            node = _number(float(tok.value.rstrip(".") or "0"), tok.line)
        elif tok.type == "boolean":
            node = nodes.Const(tok.value == "true", lineno=tok.line)
        elif tok.type == "none":
            node = nodes.Const(None, lineno=tok.line)
        elif tok.type == "regex":
            body, flags = tok.value
            node = helper_call(
                "__js_regexp", nodes.Const(body), nodes.Const(flags), lineno=tok.line
            )
        elif tok.type == "symbol":
            node = nodes.Name(tok.value, "load", lineno=tok.line)
        else:
            self.push_token(tok)
            kind, children = self.parse_aggregate()
            if kind == "":
                self.fail(f"unexpected token: {tok.value}", tok.line)
            node = self._aggregate(kind, children, tok.line)
        return node if no_postfix else self.parse_postfix(node)

    def _aggregate(self, kind: str, children: list[Any], line: int) -> nodes.Expr:
        if kind == "group":  # JavaScript's comma operator: each in turn, the last one's value
            if not children:
                self.fail("Unexpected token ')'", line)
            return helper_call("__js_comma", *children, lineno=line)  # also keeps ``(a + b)`` whole
        if kind == "array":
            return nodes.List(children, lineno=line)
        pairs = [nodes.Pair(nodes.Const(self._key(k)), v, lineno=line) for k, v in children]
        return nodes.Dict(pairs, lineno=line)

    def _key(self, key: nodes.Expr) -> str:
        """A dict or keyword-argument key: a name, or a string literal."""
        if isinstance(key, nodes.Name):
            return key.name
        if isinstance(key, nodes.Const) and isinstance(key.value, str):
            return key.value
        self.fail("compilePair: Dict keys must be strings or names", key.lineno)

    def parse_filter_name(self) -> str:
        name = str(self.expect("symbol").value)
        while self.skip_value("operator", "."):
            name += "." + str(self.expect("symbol").value)
        return name

    def parse_filter_args(self) -> list[nodes.Expr]:
        """A filter's arguments; keyword ones come last, as one object (``makeKeywordArgs``)."""
        if self.peek_type() != "left-paren":
            return []
        args, kwargs = self.parse_signature()
        if kwargs:
            pairs = [nodes.Pair(nodes.Const(self._key(k)), v) for k, v in kwargs]
            pairs.append(nodes.Pair(nodes.Const("__keywords"), nodes.Const(True)))
            args.append(nodes.Dict(pairs))
        return args

    def parse_filter(self, node: nodes.Expr) -> nodes.Expr:
        while self.skip("pipe"):
            following = self.peek_token()
            line = following.line if following is not None else node.lineno
            name, args = self.parse_filter_name(), self.parse_filter_args()
            node = helper_call("__js_filter", node, nodes.Const(name), *args, lineno=line)
        return node

    def parse_aggregate(self) -> tuple[str, list[Any]]:
        """The items of ``(…)``, ``[…]`` or ``{…}`` (pairs for a dict); kind ``""`` if none."""
        tok = self.next_token()
        kinds = {"left-paren": "group", "left-bracket": "array", "left-curly": "dict"}
        kind = kinds.get(tok.type, "") if tok is not None else ""
        children: list[Any] = []
        if not kind:
            return "", children
        assert tok is not None
        while True:
            if self.peek_type() in _CLOSING:  # any closing bracket will do, as in Nunjucks
                self.next_token()
                break
            if children and not self.skip("comma"):
                self.fail("parseAggregate: expected comma after expression", tok.line)
            if kind == "dict":
                key = self.parse_primary()
                if not self.skip("colon"):
                    self.fail("parseAggregate: expected colon after dict key", tok.line)
                children.append((key, self.parse_expression()))
            else:
                children.append(self.parse_expression())
        return kind, children

    def parse_signature(self) -> Signature:
        """``(a, b=1)``: the positional arguments and the keyword ones."""
        if self.peek_type() != "left-paren":
            self.fail("expected arguments")
        self.next_token()
        args: list[nodes.Expr] = []
        kwargs: list[tuple[nodes.Expr, nodes.Expr]] = []
        check_comma = False
        while True:
            tok = self.peek_token()
            if tok is None:
                self.fail("expected expression, got end of file")
            if tok.type == "right-paren":
                self.next_token()
                break
            if check_comma and not self.skip("comma"):
                self.fail("parseSignature: expected comma after expression", tok.line)
            arg = self.parse_expression()
            if self.skip_value("operator", "="):
                kwargs.append((arg, self.parse_expression()))
            else:
                args.append(arg)
            check_comma = True
        return args, kwargs


def _node_name(node: nodes.Expr) -> str:
    """How Nunjucks names a callee in its errors (``_getNodeName``): ``loop["cycle"]``."""
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Filter) and node.name == "__js_callable":
        described = node.args[0]
        assert isinstance(described, nodes.Const)
        return f"the return value of ({described.value})"
    if isinstance(node, nodes.Call):
        return _node_name(node.node)
    if isinstance(node, nodes.Getattr):
        return f'{_node_name(node.node)}["{node.attr}"]'
    if isinstance(node, nodes.Getitem):
        return f'{_node_name(node.node)}["{_node_name(node.arg)}"]'
    if isinstance(node, nodes.Const):
        return js_string(node.value)
    return "--expression--"


def _test_of(right: nodes.Expr) -> tuple[str, list[nodes.Expr]]:
    """The test an ``is`` names: ``odd``, ``divisibleby(3)``; Nunjucks reads odd ones oddly."""
    if isinstance(right, nodes.Name):
        return right.name, []
    if isinstance(right, nodes.Call):
        callee: nodes.Expr | None = right.node
        if isinstance(callee, nodes.Filter) and callee.name == "__js_callable":
            callee = callee.node
        return (callee.name if isinstance(callee, nodes.Name) else "undefined"), list(right.args)
    if isinstance(right, nodes.Const):  # ``x is "odd"`` is the odd test; ``x is null`` null
        return js_string(right.value), []
    return "undefined", []  # what JavaScript finds on any other node: the undefined test
