"""Field descriptions from attribute docstrings, read when a schema is asked for.

The reference is pydantic's own extraction (what ``use_attribute_docstrings`` runs): for every model of coalmine's registries and config, the descriptions
``describe_fields`` gives must be the ones pydantic would have given at class creation.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, create_model
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

from coalmine._util.docstrings import describe_fields
from coalmine.config import _ConfigFile
from coalmine.graders.base import registry as graders
from coalmine.providers.base import registry as providers


class Inner(BaseModel):
    size: int = 0
    """How big.

    Over two lines."""
    plain: int = 0


class Outer(BaseModel):
    inners: list[Inner] = []
    """The inner ones."""
    maybe: Inner | None = None
    named: int = 0
    """Named here."""


class Child(Outer):
    extra: str = ""
    """Only the child has it."""


class Loop(BaseModel):
    again: Loop | None = None
    """A model that holds itself."""


def _reference(model: type[BaseModel]) -> dict[str, str | None]:
    """What pydantic's extraction reads for each field, where the field is declared."""
    found: dict[str, str | None] = {}
    for owner in reversed(model.__mro__):
        if "__annotations__" not in vars(owner) or not issubclass(owner, BaseModel):
            continue
        docs = extract_docstrings_from_cls(owner, use_inspect=True)
        for name in vars(owner)["__annotations__"]:
            found[name] = docs.get(name)
    return found


def _registered_models() -> list[type[BaseModel]]:
    models: set[type[BaseModel]] = {_ConfigFile}
    models |= {item.config for _, item in graders}
    models |= {item.settings for _, item in providers}
    return sorted(models, key=lambda m: f"{m.__module__}.{m.__qualname__}")


def test_descriptions_come_from_the_strings_under_the_attributes() -> None:
    schema = describe_fields(Child).model_json_schema()
    props = schema["properties"]
    assert props["extra"]["description"] == "Only the child has it."
    assert props["named"]["description"] == "Named here."
    assert props["inners"]["description"] == "The inner ones."
    assert "description" not in props["maybe"]
    inner = schema["$defs"]["Inner"]["properties"]
    assert inner["size"]["description"] == "How big.\n\nOver two lines."
    assert "description" not in inner["plain"]


def test_a_model_that_holds_itself_is_described_once() -> None:
    schema = describe_fields(Loop).model_json_schema()
    assert schema["$defs"]["Loop"]["properties"]["again"]["description"] == (
        "A model that holds itself."
    )


def test_a_description_given_in_the_field_stays() -> None:
    model: Any = create_model("Given", x=(int, ...))
    model.model_fields["x"].description = "given"
    assert describe_fields(model).model_json_schema()["properties"]["x"]["description"] == "given"


@pytest.mark.parametrize("model", _registered_models(), ids=lambda m: m.__qualname__)
def test_every_registered_model_gets_what_pydantic_would_have_given(
    model: type[BaseModel],
) -> None:
    expected = _reference(model)
    own = {name: info.description for name, info in model.model_fields.items()}
    describe_fields(model)
    got = {name: info.description for name, info in model.model_fields.items()}
    for name, description in got.items():
        if own[name] is not None and own[name] != expected.get(name):
            continue  # a description written in the field wins, as with pydantic
        assert description == expected.get(name), name
