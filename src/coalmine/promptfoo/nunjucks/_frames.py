"""Nunjucks' variables: frames, as its compiled templates keep them at run time.

A Nunjucks template keeps its variables in frames, not in JavaScript scopes: a loop pushes a
frame (popped after it), ``{% set x %}`` writes to the nearest frame that already has ``x``
(else to the current one) and, at the top level, to the context too; a name is looked up
through the frames and then in the context (the render's vars, then the globals). A macro runs
in a fresh frame, seeing its arguments, its own variables and the context, not the loop it is
defined in; a ``{% call %}`` body pushes a frame on whatever frame is current when it runs. So,
as in promptfoo and unlike Jinja2, ``{% set total = total + x %}`` in a loop adds up, a variable
set in a loop body keeps its value from one iteration to the next and is gone after the loop,
and a variable set to ``undefined`` is looked up again in the context.

:func:`use_frames` rewrites the parsed tree so every ``set``, loop, macro and name goes through
one :class:`Frames` object per render (the template variable ``__nj``). Loop variables and macro
arguments are also kept as Jinja2 variables, because Nunjucks' compiler binds those to
JavaScript variables (a ``{% call %}`` body reads them from where it is written).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import nodes
from jinja2.runtime import LoopContext, Macro

from coalmine.promptfoo.nunjucks._js import UNDEFINED, JsObject, SafeStr, is_undefined, js_truthy
from coalmine.promptfoo.nunjucks._runtime import js_iter

__all__ = ["FRAME_FILTERS", "STATE", "Frames", "use_frames"]

STATE = "__nj"
"""The template variable holding the render's :class:`Frames`."""


class _Frame:
    """Nunjucks' ``Frame``."""

    def __init__(self, parent: _Frame | None = None, isolate_writes: bool = False) -> None:
        self.variables: dict[str, Any] = {}
        self.parent, self.isolate_writes, self.top_level = parent, isolate_writes, False

    def set(self, name: str, value: object, resolve_up: bool = False) -> None:
        parts = name.split(".")
        if resolve_up and (frame := self.resolve(parts[0], for_write=True)) is not None:
            frame.set(name, value)
            return
        holder = self.variables
        for part in parts[:-1]:
            if not js_truthy(holder.get(part, UNDEFINED)):
                holder[part] = JsObject()
            holder = holder[part]
        holder[parts[-1]] = value

    def resolve(self, name: str, for_write: bool) -> _Frame | None:
        if not is_undefined(self.variables.get(name, UNDEFINED)):
            return self
        parent = None if for_write and self.isolate_writes else self.parent
        return parent.resolve(name, for_write) if parent is not None else None

    def lookup(self, name: str) -> Any:
        frame: _Frame | None = self
        while frame is not None:
            value = frame.variables.get(name, UNDEFINED)
            if not is_undefined(value):
                return value
            frame = frame.parent
        return UNDEFINED


class Frames:
    """One render's frames, the current one (Nunjucks' ``frame``) and its context."""

    def __init__(self, context: dict[str, Any], globals_: Mapping[str, Any]) -> None:
        self.context, self.globals = context, globals_
        self.frame = _Frame()
        self.frame.top_level = True
        self.callers: list[_Frame] = []
        self.last: Any = UNDEFINED

    def lookup(self, name: str) -> Any:
        """``contextOrFrameLookup``: the frames, then the context, then the globals."""
        value = self.frame.lookup(name)
        if not is_undefined(value):
            return _safe_macro(value)
        if name in self.globals and name not in self.context:
            return self.globals[name]
        return _safe_macro(self.context.get(name, UNDEFINED))

    def set(self, value: object, *names: str) -> str:
        """``{% set a, b = value %}``."""
        self.last = value
        for name in names:
            self.frame.set(name, value, resolve_up=True)
            if self.frame.top_level:
                self.context[name] = value
        return ""


def _safe_macro(value: Any) -> Any:
    """A macro returns a ``SafeString`` in Nunjucks (truthy even when empty, ``is escaped``)."""
    if isinstance(value, Macro):
        return lambda *args, **kwargs: SafeStr(value(*args, **kwargs))
    return value


def _push(frames: Frames) -> str:
    frames.frame = _Frame(frames.frame)
    return ""


def _pop(frames: Frames) -> str:
    assert frames.frame.parent is not None
    frames.frame = frames.frame.parent
    return ""


def _iterate(value: object, frames: Frames, names: int) -> list[Any]:
    """The loop's items (``js_iter``), noting whether it walks an object (key and value)."""
    frames.frame.variables["\0object"] = names > 1 and isinstance(value, Mapping)
    return js_iter(value, names)


def _bind(frames: Frames, loop: LoopContext, names: tuple[str, ...], *values: object) -> str:
    """Each iteration: the loop variables and ``loop.index`` … in the loop's frame."""
    frame = frames.frame
    if len(names) == 1 or frame.variables.get("\0object"):
        for name, value in zip(names, values, strict=False):
            frame.set(name, value)
    else:  # Nunjucks names these "[object Object]" (a node, stringified) in its frame
        for value in values:
            frame.set("[object Object]", value)
    for key in ("index", "index0", "revindex", "revindex0", "first", "last", "length"):
        frame.set(f"loop.{key}", getattr(loop, key))
    return ""


def _enter_macro(frames: Frames, names: tuple[str, ...], *values: object, **extra: Any) -> str:
    frames.callers.append(frames.frame)
    frames.frame = _Frame()
    caller = extra.get("caller", UNDEFINED)
    if not is_undefined(caller):
        frames.frame.set("caller", caller)
    for name, value in zip(names, values, strict=True):
        frames.frame.set(name, value)
    return ""


def _leave_macro(frames: Frames) -> str:
    frames.frame = frames.callers.pop()
    return ""


def _enter_caller(frames: Frames, names: tuple[str, ...], *values: object) -> str:
    frames.frame = _Frame(frames.frame, isolate_writes=True)
    for name, value in zip(names, values, strict=True):
        frames.frame.set(name, value)
    return ""


def _define(frames: Frames, name: str, macro: object, top: bool) -> str:
    """A macro's name: in the context at a template's or macro's top, else in the frame."""
    if top:
        frames.context[name] = macro
    else:
        frames.frame.set(name, macro)
    return ""


FRAME_FILTERS: dict[str, Callable[..., Any]] = {
    "__nj_lookup": Frames.lookup,
    "__nj_set": Frames.set,
    "__nj_last": lambda frames: frames.last,
    "__nj_push": _push,
    "__nj_pop": _pop,
    "__nj_iter": _iterate,
    "__nj_bind": _bind,
    "__nj_enter_macro": _enter_macro,
    "__nj_leave_macro": _leave_macro,
    "__nj_enter_caller": _enter_caller,
    "__nj_leave_caller": _pop,
    "__nj_define": _define,
}
"""The helpers the rewritten tree calls, each with the render's :class:`Frames` first."""


# -- the rewrite


def _native(name: str) -> str:
    """The Jinja2 name a loop variable lives under (safe from ``loop``, ``self`` and ``1e3``)."""
    return f"__nj_{name}" if f"l_0___nj_{name}".isidentifier() else f"__nj_x{name.encode().hex()}"


def _helper(name: str, *args: nodes.Expr, **kwargs: nodes.Expr) -> nodes.Filter:
    keywords = [nodes.Keyword(k, v) for k, v in kwargs.items()]
    return nodes.Filter(nodes.Name(STATE, "load"), name, list(args), keywords, None, None)


def _out(call: nodes.Expr, lineno: int | None) -> nodes.Output:
    return nodes.Output([call], lineno=lineno)


class _Rewrite:
    """Rewrite one region (the template, a macro body) given its natively bound names."""

    def __init__(self, native: Mapping[str, str]) -> None:
        self.native = dict(native)
        """Nunjucks name → Jinja2 name, for loop variables and macro or caller arguments."""

    def with_names(self, names: Mapping[str, str]) -> _Rewrite:
        return _Rewrite({**self.native, **names})

    def expr(self, node: Any) -> Any:
        if isinstance(node, nodes.Name) and node.ctx == "load":
            if node.name in self.native:
                return nodes.Name(self.native[node.name], "load", lineno=node.lineno)
            return _helper("__nj_lookup", nodes.Const(node.name))
        if isinstance(node, nodes.Node):
            for field, value in node.iter_fields():
                if isinstance(value, nodes.Node):
                    setattr(node, field, self.expr(value))
                elif isinstance(value, list):
                    setattr(node, field, [self.expr(v) for v in value])
        return node

    def body(self, body: list[nodes.Node], top: bool) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for node in body:
            out += self.statement(node, top)
        return out

    def _set(self, value: nodes.Expr, names: list[str], lineno: int | None) -> list[nodes.Node]:
        consts = [nodes.Const(n) for n in names]
        out: list[nodes.Node] = [_out(_helper("__nj_set", value, *consts), lineno)]
        for name in names:  # a loop variable or argument: its JavaScript variable too
            if name in self.native:
                target = nodes.Name(self.native[name], "store")
                out.append(nodes.Assign(target, _helper("__nj_last"), lineno=lineno))
        return out

    def statement(self, node: nodes.Node, top: bool) -> list[nodes.Node]:
        line = node.lineno
        if isinstance(node, nodes.Assign):
            return self._set(self.expr(node.node), _names(node.target), line)
        if isinstance(node, nodes.AssignBlock):
            capture = nodes.Name("__nj_capture", "store")
            block = nodes.AssignBlock(capture, None, self.body(node.body, top), lineno=line)
            value = nodes.Name("__nj_capture", "load")
            return [block, *self._set(value, _names(node.target), line)]
        if isinstance(node, nodes.For):
            return self._for(node)
        if isinstance(node, nodes.Macro):
            return self._macro(node, top)
        if isinstance(node, nodes.CallBlock):
            return [self._call_block(node)]
        if isinstance(node, nodes.If):
            node.test = self.expr(node.test)
            node.body, node.else_ = self.body(node.body, top), self.body(node.else_, top)
            return [node]
        if isinstance(node, nodes.FilterBlock):
            node.filter = self.expr(node.filter)
            node.body = self.body(node.body, top)
            return [node]
        return [self.expr(node)]

    def _for(self, node: nodes.For) -> list[nodes.Node]:
        names = _names(node.target)
        inner = self.with_names({n: _native(n) for n in names})
        stored = [nodes.Name(_native(n), "store") for n in names]
        target = stored[0] if len(stored) == 1 else nodes.Tuple(stored, "store")
        loads = [nodes.Name(_native(n), "load") for n in names]
        bind = _helper("__nj_bind", nodes.Name("loop", "load"), nodes.Const(tuple(names)), *loads)
        iterate = nodes.Filter(
            self.expr(node.iter), "__nj_iter", [nodes.Name(STATE, "load"), nodes.Const(len(names))],
            [], None, None,
        )  # fmt: skip
        body = [_out(bind, node.lineno), *inner.body(node.body, top=False)]
        loop = nodes.For(target, iterate, body, self.body(node.else_, False), None, False)
        loop.lineno = node.lineno
        return [_out(_helper("__nj_push"), node.lineno), loop, _out(_helper("__nj_pop"), None)]

    def _macro(self, node: nodes.Macro, top: bool) -> list[nodes.Node]:
        params = [a.name for a in node.args]
        inner = _Rewrite({p: p for p in params})
        enter = _helper(
            "__nj_enter_macro",
            nodes.Const(tuple(params)),
            *(nodes.Name(p, "load") for p in params),
            caller=nodes.Name("caller", "load"),  # Jinja2 passes a caller, extra arguments …
            varargs=nodes.Name("varargs", "load"),  # … only to macros that read them
            kwargs=nodes.Name("kwargs", "load"),
        )
        node.defaults = [inner.expr(d) for d in node.defaults]
        node.body = [
            _out(enter, node.lineno),
            *inner.body(node.body, top=True),
            _out(_helper("__nj_leave_macro"), None),
        ]
        macro = nodes.Name(node.name, "load")
        define = _helper("__nj_define", nodes.Const(node.name), macro, nodes.Const(top))
        return [node, _out(define, node.lineno)]

    def _call_block(self, node: nodes.CallBlock) -> nodes.CallBlock:
        params = [a.name for a in node.args]
        inner = self.with_names({p: p for p in params})
        values = [nodes.Name(p, "load") for p in params]
        enter = _helper("__nj_enter_caller", nodes.Const(tuple(params)), *values)
        node.call = self.expr(node.call)
        node.defaults = [inner.expr(d) for d in node.defaults]
        node.body = [
            _out(enter, node.lineno),
            *inner.body(node.body, top=False),
            _out(_helper("__nj_leave_caller"), None),
        ]
        return node


def _names(target: nodes.Node) -> list[str]:
    if isinstance(target, nodes.Name):
        return [target.name]
    assert isinstance(target, nodes.Tuple)
    return [item.name for item in target.items if isinstance(item, nodes.Name)]


def use_frames(template: nodes.Template) -> nodes.Template:
    """Rewrite ``template`` so its variables live in Nunjucks' frames (see the module)."""
    template.body = _Rewrite({}).body(template.body, top=True)
    return template
