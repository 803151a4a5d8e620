"""The shipped JSON Schemas of the manifest and the profile match their models."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema

from coalmine.harness.kits import Manifest, manifest_json_schema
from coalmine.harness.profile import Profile


def shipped(name: str) -> object:
    return json.loads((files("coalmine") / "schemas" / name).read_text("utf-8"))


def test_the_shipped_schemas_are_the_models() -> None:
    assert shipped("manifest.v1.json") == manifest_json_schema()
    assert shipped("profile.v1.json") == Profile.model_json_schema(by_alias=True)


def test_an_empty_manifest_validates_and_a_wrong_schema_does_not() -> None:
    schema = shipped("manifest.v1.json")
    jsonschema.validate(Manifest().model_dump(mode="json"), schema)
    bad = {"schema": "coalmine.manifest.v0", "kits": []}
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError as exc:
        assert "coalmine.manifest.v1" in str(exc)
    else:
        raise AssertionError("a v0 manifest validated")
