"""The Jinja2 environment that renders promptfoo's Nunjucks templates (see ``nunjucks``).

The parsed template is rewritten before it is compiled (:class:`_JavaScriptSemantics`): ``+ - *
/ % ** //``, ``~``, comparisons, ``not``, ``if`` tests and loops call the JavaScript semantics of
:mod:`coalmine.promptfoo.nunjucks._js`; list and dict literals become JavaScript arrays and
objects (``{a: 1}`` has the key ``"a"``, as in Nunjucks). Printed values are stringified as
JavaScript does, member lookups follow ``memberLookup``, and the filters, tests and globals are
exactly Nunjucks' own plus promptfoo's ``load``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from jinja2 import Environment, Template, TemplateSyntaxError, Undefined, nodes
from jinja2.ext import Extension
from jinja2.lexer import Token, TokenStream
from jinja2.visitor import NodeTransformer

from coalmine.errors import ConfigError
from coalmine.promptfoo.nunjucks._filters import FILTERS
from coalmine.promptfoo.nunjucks._js import js_add, js_arith, js_string, js_truthy, to_js
from coalmine.promptfoo.nunjucks._runtime import (
    GLOBALS,
    TESTS,
    is_js_value,
    js_compare,
    js_iter,
    js_member,
)

__all__ = ["SHADOWED_PREFIX", "TemplateError", "compile_template"]


class TemplateError(ConfigError):
    """A template does not parse, or fails while rendering (promptfoo makes the row an ERROR)."""

    def __init__(self, message: str, *, template: str, line: int | None = None):
        self.template = template
        super().__init__(message, line=line)


_ARITH_NODES: dict[type[nodes.BinExpr], str] = {
    nodes.Sub: "-",
    nodes.Mul: "*",
    nodes.Div: "/",
    nodes.FloorDiv: "//",
    nodes.Mod: "%",
    nodes.Pow: "**",
}


_N = TypeVar("_N", bound=nodes.Node)


def _call(name: str, node: nodes.Node, *args: nodes.Node) -> nodes.Filter:
    return nodes.Filter(node, name, list(args), [], None, None, lineno=node.lineno)


class _JavaScriptSemantics(NodeTransformer):
    """Rewrite operators, tests, loops and literals to their JavaScript meaning."""

    def _children(self, node: _N) -> _N:
        """Transform the children of ``node`` in place."""
        self.generic_visit(node)
        return node

    # ``and`` / ``or`` stay: on our values Python's truthiness is JavaScript's (but for NaN).

    def visit_Add(self, node: nodes.Add) -> nodes.Node:
        node = self._children(node)
        return _call("__js_add", node.left, node.right)

    def _arith(self, node: nodes.BinExpr) -> nodes.Node:
        node = self._children(node)
        return _call("__js_arith", node.left, nodes.Const(_ARITH_NODES[type(node)]), node.right)

    visit_Sub = visit_Mul = visit_Div = visit_FloorDiv = visit_Mod = visit_Pow = _arith

    def visit_Not(self, node: nodes.Not) -> nodes.Node:
        node = self._children(node)
        return _call("__js_not", node.node)

    def _sign(self, node: nodes.UnaryExpr) -> nodes.Node:
        node = self._children(node)
        sign = "-" if isinstance(node, nodes.Neg) else "+"
        return _call("__js_arith", nodes.Const(0), nodes.Const(sign), node.node)

    visit_Neg = visit_Pos = _sign

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        node = self._children(node)
        return _call("__js_concat", node.nodes[0], *node.nodes[1:])

    def visit_Compare(self, node: nodes.Compare) -> nodes.Node:
        node = self._children(node)
        operands: list[nodes.Expr] = []
        for operand in node.ops:
            operands += [nodes.Const(operand.op), operand.expr]
        return _call("__js_compare", node.expr, *operands)

    def visit_If(self, node: nodes.If) -> nodes.Node:
        node = self._children(node)
        node.test = _call("__js_truthy", node.test)
        return node

    def visit_CondExpr(self, node: nodes.CondExpr) -> nodes.Node:
        node = self._children(node)
        node.test = _call("__js_truthy", node.test)
        if node.expr2 is None:  # Nunjucks' inline if without else yields ""
            node.expr2 = nodes.Const("")
        return node

    def visit_For(self, node: nodes.For) -> nodes.Node:
        node = self._children(node)
        names = len(node.target.items) if isinstance(node.target, nodes.Tuple) else 1
        if node.test is not None:  # Nunjucks reads ``for x in xs if c`` as ``xs if c else ""``
            node.iter = nodes.CondExpr(_call("__js_truthy", node.test), node.iter, nodes.Const(""))
            node.test = None
        node.iter = _call("__js_iter", node.iter, nodes.Const(names))
        return node

    def visit_List(self, node: nodes.List) -> nodes.Node:
        return _call("__js_value", self._children(node))

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        node = self._children(node)
        return _call("__js_value", node) if node.ctx == "load" else node

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        node = self._children(node)
        for pair in node.items:
            if isinstance(pair.key, nodes.Name):  # ``{a: 1}`` means the key "a" in Nunjucks
                pair.key = nodes.Const(pair.key.name)
        return _call("__js_value", node)


SHADOWED_PREFIX = "__nunjucks_"
"""``True``, ``False`` and ``None`` are plain names in Nunjucks; they get this prefix."""


class _NunjucksLiterals(Extension):
    """Nunjucks' literals: ``true``/``false``/``none``/``null``; ``True`` is a variable name."""

    def filter_stream(self, stream: TokenStream) -> Any:
        previous = None
        for token in stream:
            if token.type == "name" and (previous is None or previous.type != "dot"):
                if token.value == "null":
                    token = Token(token.lineno, "name", "none")
                elif token.value in ("True", "False", "None"):
                    token = Token(token.lineno, "name", SHADOWED_PREFIX + token.value)
            previous = token
            yield token


def _output(value: object) -> str:
    """Nunjucks' ``suppressValue`` then JavaScript string concatenation."""
    return "" if value is None or isinstance(value, Undefined) else js_string(value)


class _NunjucksEnvironment(Environment):
    """Jinja2 configured like promptfoo's Nunjucks environment."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        return self._member(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        return self._member(obj, argument)

    def _member(self, obj: Any, key: Any) -> Any:
        if is_js_value(obj):
            return js_member(obj, key)
        if isinstance(key, str):
            return super().getattr(obj, key)
        return super().getitem(obj, key)


_SYNTAX = [
    (re.compile(r"(\{%-?\s*)elseif\b"), r"\1elif"),
    (re.compile(r"(\{%-?\s*)(end)?verbatim\b"), r"\1\2raw"),
]


def _build_environment(extra_filters: Mapping[str, Callable[..., Any]]) -> _NunjucksEnvironment:
    environment = _NunjucksEnvironment(
        autoescape=False,
        keep_trailing_newline=True,
        optimized=False,  # folding constants would turn our JavaScript arrays into Python lists
        finalize=_output,
        undefined=Undefined,
        extensions=[_NunjucksLiterals],
    )
    environment.filters = {
        **FILTERS,
        "__js_add": js_add,
        "__js_arith": lambda a, op, b: js_arith(op, a, b),
        "__js_not": lambda v: not js_truthy(v),
        "__js_truthy": js_truthy,
        "__js_concat": lambda *parts: "".join(js_string(p) for p in parts),
        "__js_compare": js_compare,
        "__js_iter": js_iter,
        "__js_value": to_js,
        **extra_filters,
    }
    environment.tests = dict(TESTS)
    environment.globals = dict(GLOBALS)
    return environment


@functools.cache
def _default_environment() -> _NunjucksEnvironment:
    return _build_environment({})


def _describe(exc: TemplateSyntaxError) -> str:
    match = re.fullmatch(r"No (filter|test) named '(.+)'\.?", exc.message or "")
    if match:
        return f"{match.group(1)} not found: {match.group(2)}"
    return exc.message or type(exc).__name__


def _compile(environment: _NunjucksEnvironment, source: str) -> Template:
    text = source
    for pattern, replacement in _SYNTAX:
        text = pattern.sub(replacement, text)
    try:
        tree = _JavaScriptSemantics().visit(environment.parse(text))
        return environment.from_string(tree)
    except TemplateSyntaxError as exc:
        raise TemplateError(
            f"Template render error (line {exc.lineno}): {_describe(exc)}",
            template=source,
            line=exc.lineno,
        ) from exc


@functools.lru_cache(maxsize=512)
def _compiled(source: str) -> Template:
    return _compile(_default_environment(), source)


def compile_template(
    source: str, *, filters: Mapping[str, Callable[..., Any]] | None = None
) -> Template:
    """Compile Nunjucks ``source`` (cached when there are no extra filters).

    Raises:
        TemplateError: It does not parse, or names an unknown filter or test.
    """
    return _compile(_build_environment(filters), source) if filters else _compiled(source)
