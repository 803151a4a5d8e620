"""What an expression means once Nunjucks has compiled it to JavaScript source.

Nunjucks parses ``a + b - c`` as ``a + (b - c)`` but compiles each operator by writing its
operands on either side, without parentheses: ``a + b - c``, which JavaScript then reads as
``(a + b) - c``. So the tree the parser builds is not what runs. :func:`js_expression` writes
an expression out as Nunjucks' compiler does (a list of operands and operators) and reads it
back with JavaScript's precedence: ``'x' + 1 - 1`` is ``NaN``, ``10 / 5 % 3`` is ``2``,
``1 ~ 2 + 3`` is ``"123"`` and ``not 1 == 2`` is ``(!1) == 2``, as promptfoo renders them.

Operands that Nunjucks writes inside their own parentheses or call (a group, a literal, a name,
a lookup, a call, a filter, ``in``, ``//`` as ``Math.floor(a / b)``, ``**`` as
``Math.pow(a, b)``, an inline ``if``) stay whole; an ``is`` test is ``test(…) === true``.
``- -x`` is JavaScript's ``--``: an error when the template compiles (``- -1``) or when it runs.
"""

from __future__ import annotations

from typing import Any

from jinja2 import TemplateSyntaxError, nodes

__all__ = ["js_expression", "js_tree"]

_INFIX: dict[type[nodes.Node], str] = {
    nodes.Or: "||",
    nodes.And: "&&",
    nodes.Add: "+",
    nodes.Sub: "-",
    nodes.Mul: "*",
    nodes.Div: "/",
    nodes.Mod: "%",
}
_COMPARE_OPS = {
    "eq": "==",
    "ne": "!=",
    "seq": "===",
    "sne": "!==",
    "lt": "<",
    "gt": ">",
    "lteq": "<=",
    "gteq": ">=",
}
_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "===": 3,
    "!==": 3,
    "<": 4,
    ">": 4,
    "<=": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}
_BUILD: dict[str, type[nodes.BinExpr]] = {
    "||": nodes.Or,
    "&&": nodes.And,
    "+": nodes.Add,
    "-": nodes.Sub,
    "*": nodes.Mul,
    "/": nodes.Div,
    "%": nodes.Mod,
}
_NAMES = {js: name for name, js in _COMPARE_OPS.items()}
_PREFIX: dict[type[nodes.Node], str] = {nodes.Not: "!", nodes.Neg: "-", nodes.Pos: "+"}
_UNARY: dict[str, type[nodes.UnaryExpr]] = {"!": nodes.Not, "-": nodes.Neg, "+": nodes.Pos}

Item = tuple[str, Any]
"""``("op", "+")``, ``("prefix", "!")`` or ``("atom", node)``."""


def _call(name: str, *args: nodes.Expr, lineno: int | None) -> nodes.Filter:
    return nodes.Filter(args[0], name, list(args[1:]), [], None, None, lineno=lineno)


def _emit(node: nodes.Expr) -> list[Item]:
    """``node`` as Nunjucks' compiler writes it: operands and operators, no parentheses."""
    kind = type(node)
    if kind in _INFIX:
        assert isinstance(node, nodes.BinExpr)
        return [*_emit(node.left), ("op", _INFIX[kind]), *_emit(node.right)]
    if isinstance(node, nodes.Concat):  # ``a + "" + b``
        empty = ("atom", nodes.Const("", lineno=node.lineno))
        out = _emit(node.nodes[0])
        for part in node.nodes[1:]:
            out += [("op", "+"), empty, ("op", "+"), *_emit(part)]
        return out
    if isinstance(node, nodes.Compare) and all(op.op in _COMPARE_OPS for op in node.ops):
        out = _emit(node.expr)
        for operand in node.ops:
            out += [("op", _COMPARE_OPS[operand.op]), *_emit(operand.expr)]
        return out
    if kind in _PREFIX:
        assert isinstance(node, nodes.UnaryExpr)
        inner = _emit(node.node)
        sign = _PREFIX[kind]
        if sign in "-+" and inner[0] == ("prefix", sign):  # ``--x``: JavaScript's decrement
            message = "Invalid left-hand side expression in prefix operation"
            operand = inner[-1][1]
            if isinstance(operand, nodes.Const | nodes.List | nodes.Dict):
                raise TemplateSyntaxError(message, node.lineno)  # V8 refuses it when compiling
            return [("atom", _call("__js_reference_error", nodes.Const(message), lineno=None))]
        return [("prefix", sign), *inner]
    if isinstance(node, nodes.FloorDiv):  # ``Math.floor(a / b)``
        quotient = js_expression(nodes.Div(node.left, node.right, lineno=node.lineno))
        return [("atom", _call("__js_floor", quotient, lineno=node.lineno))]
    if isinstance(node, nodes.Pow):  # ``Math.pow(a, b)``
        return [("atom", nodes.Pow(js_expression(node.left), js_expression(node.right)))]
    return [("atom", _inner(node))]


def _inner(node: nodes.Node) -> Any:
    """``node`` with each expression inside it read on its own (they sit in parentheses)."""
    for field, value in node.iter_fields():
        if isinstance(value, nodes.Expr):
            setattr(node, field, js_expression(value))
        elif isinstance(value, nodes.Node):
            _inner(value)
        elif isinstance(value, list):
            setattr(node, field, [_part(item) for item in value])
    return node


def _part(item: Any) -> Any:
    if isinstance(item, nodes.Expr):
        return js_expression(item)
    if isinstance(item, nodes.Node):
        return _inner(item)
    return item


class _Reader:
    """Read a written-out expression back with JavaScript's precedence (all left-associative)."""

    def __init__(self, items: list[Item]) -> None:
        self.items, self.at = items, 0

    def unary(self) -> nodes.Expr:
        kind, value = self.items[self.at]
        self.at += 1
        if kind == "prefix":
            operand = self.unary()
            return _UNARY[value](operand, lineno=operand.lineno)
        assert kind == "atom"
        return value  # type: ignore[no-any-return]

    def binary(self, lowest: int) -> nodes.Expr:
        node = self.unary()
        while self.at < len(self.items):
            kind, op = self.items[self.at]
            if kind != "op" or _PRECEDENCE[op] < lowest:
                break
            self.at += 1
            right = self.binary(_PRECEDENCE[op] + 1)
            if op in _BUILD:
                node = _BUILD[op](node, right, lineno=node.lineno)
            else:
                node = nodes.Compare(node, [nodes.Operand(_NAMES[op], right)], lineno=node.lineno)
        return node


def js_expression(node: nodes.Expr) -> nodes.Expr:
    """The expression JavaScript evaluates for ``node`` (a tree as Nunjucks parsed it)."""
    items = _emit(node)
    if len(items) == 1:
        return items[0][1]  # type: ignore[no-any-return]
    return _Reader(items).binary(0)


def js_tree(template: nodes.Template) -> nodes.Template:
    """Every expression of ``template`` as JavaScript evaluates it."""

    def walk(node: nodes.Node) -> None:
        for field, value in node.iter_fields():
            if isinstance(value, nodes.Expr):
                setattr(node, field, js_expression(value))
            elif isinstance(value, nodes.Node):
                walk(value)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, nodes.Expr):
                        value[i] = js_expression(item)
                    elif isinstance(item, nodes.Node):
                        walk(item)

    walk(template)
    return template
