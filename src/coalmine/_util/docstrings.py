"""Field descriptions from attribute docstrings, read when a JSON schema is asked for.

The models document their fields as the house style does, with a string under each attribute.
pydantic's ``use_attribute_docstrings`` reads them at class creation, and on Python < 3.13 it
finds each class's source by walking frames and calling ``inspect.getmodule`` on each: measured
on ``coalmine eval run``, 0.25–0.3 s of a 0.8 s start-up went there, for descriptions that only a
printed schema (``coalmine graders show``, the shipped schema files) ever shows. Here each module
is parsed once, when a schema is generated, and the models are rebuilt with the descriptions.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import typing
from typing import Any

from pydantic import BaseModel


@functools.cache
def _module_docstrings(module: str) -> dict[str, dict[str, str]]:
    """Class name → attribute → the string under it, for every class of one module."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (KeyError, OSError, TypeError, SyntaxError):
        return {}
    found: dict[str, dict[str, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        docs: dict[str, str] = {}
        body = node.body
        for stmt, after in zip(body, body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(after.value.value)
        found.setdefault(node.name, docs)  # a name defined twice keeps its first class
    return found


def _held_models(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation holds (``list[X]``, ``X | None``, ``dict[str, X]`` …)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _held_models(arg)]


_DESCRIBED: set[type[BaseModel]] = set()
"""Models rebuilt with their descriptions, after every model they hold was."""


def describe_fields(model: type[BaseModel]) -> type[BaseModel]:
    """Give every field of ``model`` and of the models it holds its docstring as description.

    A field's own ``description`` stays. Held models are done first, so the rebuilt ``model``
    embeds their descriptions. Returns ``model``, for chaining into ``model_json_schema()``.
    """
    _describe(model, set())
    return model


def _describe(model: type[BaseModel], visiting: set[type[BaseModel]]) -> None:
    if model in _DESCRIBED or model in visiting:  # (a model that holds itself, in a cycle)
        return
    visiting.add(model)
    for info in model.model_fields.values():
        for held in _held_models(info.annotation):
            _describe(held, visiting)
    for name, info in model.model_fields.items():
        if info.description is not None:
            continue
        for owner in model.__mro__:  # an inherited field is documented where it is declared
            if name in vars(owner).get("__annotations__", {}):
                info.description = (
                    _module_docstrings(owner.__module__).get(owner.__name__, {}).get(name)
                )
                break
    model.model_rebuild(force=True)
    _DESCRIBED.add(model)
