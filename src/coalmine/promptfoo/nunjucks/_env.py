"""The Jinja2 environment that renders promptfoo's Nunjucks templates (see ``nunjucks``).

Templates are parsed by the port of Nunjucks' own parser
(:mod:`coalmine.promptfoo.nunjucks._parser`) into a Jinja2 tree, which is rewritten before it
is compiled (:class:`_JavaScriptSemantics`): ``+ - * / % **``, ``~``, comparisons, ``not``,
``if`` tests and loops call the JavaScript semantics of :mod:`coalmine.promptfoo.nunjucks._js`,
and list and dict literals become JavaScript arrays and objects; variables live in Nunjucks'
frames (:mod:`coalmine.promptfoo.nunjucks._frames`).
Printed values are stringified as JavaScript does, member lookups follow ``memberLookup``, and
the filters, tests and globals are exactly Nunjucks' own plus promptfoo's ``load``, looked up
when they run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

from jinja2 import (
    Environment,
    Template,
    TemplateSyntaxError,
    Undefined,
    nodes,
    pass_environment,
)
from jinja2.visitor import NodeTransformer

from coalmine.errors import ConfigError
from coalmine.promptfoo.nunjucks._filters import FILTERS
from coalmine.promptfoo.nunjucks._frames import FRAME_FILTERS
from coalmine.promptfoo.nunjucks._js import (
    js_add,
    js_arith,
    js_string,
    js_to_number,
    js_truthy,
    normalize_number,
    to_js,
)
from coalmine.promptfoo.nunjucks._parser import parse
from coalmine.promptfoo.nunjucks._regexp import RegExpValue
from coalmine.promptfoo.nunjucks._runtime import (
    TESTS,
    is_js_value,
    js_compare,
    js_member,
)

__all__ = ["TemplateError", "compile_template"]


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
    """Rewrite operators, conditions and literals to their JavaScript meaning."""

    def _children(self, node: _N) -> _N:
        """Transform the children of ``node`` in place."""
        self.generic_visit(node)
        return node

    def _logical(self, node: nodes.BinExpr) -> nodes.Node:
        """``and`` / ``or``: Python's truthiness is JavaScript's once a ``NaN`` is made falsy."""
        node = self._children(node)
        node.left = _call("__js_logical", node.left)
        return node

    visit_And = visit_Or = _logical

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
        sign = -1 if isinstance(node, nodes.Neg) else 1  # ``-x`` is ``-1 * x``: -0 for 0
        return _call("__js_arith", nodes.Const(sign), nodes.Const("*"), node.node)

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


def _output(value: object) -> str:
    """Nunjucks' ``suppressValue`` then JavaScript string concatenation."""
    return "" if value is None or isinstance(value, Undefined) else js_string(value)


class _NunjucksEnvironment(Environment):
    """Jinja2 configured like promptfoo's Nunjucks environment."""

    nunjucks_filters: dict[str, Callable[..., Any]]
    """The filters templates name (``upper``, ``load`` …); ``filters`` holds the helpers."""

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


@pass_environment
def _filter(environment: _NunjucksEnvironment, value: object, name: str, *args: object) -> Any:
    """``env.getFilter(name)`` then the call: an unknown filter fails only when it runs."""
    function = environment.nunjucks_filters.get(name)
    if function is None:
        raise LookupError(f"filter not found: {name}")
    return function(value, *args)


def _test(value: object, name: str, *args: object) -> Any:
    """``env.getTest(name).call(context, value, …)`` (the parser adds the ``=== true``)."""
    function = TESTS.get(name)
    if function is None:
        raise LookupError(f"test not found: {name}")
    return function(value, *args)


class _FalsyNaN(float):
    """``NaN``, falsy as in JavaScript (Python's ``nan`` is truthy)."""

    def __bool__(self) -> bool:
        return False


def _logical(value: object) -> object:
    return _FalsyNaN("nan") if isinstance(value, float) and math.isnan(value) else value


def _floor(value: object) -> float:
    """``Math.floor``."""
    number = float(js_to_number(value))
    return normalize_number(math.floor(number)) if math.isfinite(number) else number


def _unsupported(message: str) -> NoReturn:
    raise NotImplementedError(message)


def _callable(value: object, name: str) -> Any:
    """``runtime.callWrap``'s checks, with its messages."""
    if not js_truthy(value):
        raise TypeError(f"Unable to call `{name}`, which is undefined or falsey")
    if not callable(value) or isinstance(value, Mapping | list):
        raise TypeError(f"Unable to call `{name}`, which is not a function")
    return value


def _reference_error(message: str) -> NoReturn:
    raise ReferenceError(message)


def _build_environment(extra_filters: Mapping[str, Callable[..., Any]]) -> _NunjucksEnvironment:
    environment = _NunjucksEnvironment(
        autoescape=False,
        keep_trailing_newline=True,
        optimized=False,  # folding constants would turn our JavaScript arrays into Python lists
        finalize=_output,
        undefined=Undefined,
    )
    environment.nunjucks_filters = {**FILTERS, **extra_filters}
    environment.filters = {
        "__js_filter": _filter,
        "__js_test": _test,
        "__js_regexp": RegExpValue,
        "__js_comma": lambda *values: values[-1],
        "__js_floor": _floor,
        "__js_logical": _logical,
        "__js_unsupported": _unsupported,
        "__js_reference_error": _reference_error,
        "__js_callable": _callable,
        "__js_add": js_add,
        "__js_arith": lambda a, op, b: js_arith(op, a, b),
        "__js_not": lambda v: not js_truthy(v),
        "__js_truthy": js_truthy,
        "__js_concat": lambda *parts: "".join(js_string(p) for p in parts),
        "__js_compare": js_compare,
        "__js_value": to_js,
        **FRAME_FILTERS,
    }
    environment.tests = {}
    environment.globals = {}  # names are looked up in Nunjucks' frames and globals
    return environment


@functools.cache
def _default_environment() -> _NunjucksEnvironment:
    return _build_environment({})


def _compile(environment: _NunjucksEnvironment, source: str) -> Template:
    try:
        tree = _JavaScriptSemantics().visit(parse(source))
        tree.set_environment(environment)
        return environment.from_string(tree)
    except TemplateSyntaxError as exc:
        raise TemplateError(
            f"Template render error (line {exc.lineno}): {exc.message}",
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
        TemplateError: It does not parse (an unknown filter or test fails when it runs).
    """
    return _compile(_build_environment(filters), source) if filters else _compiled(source)
