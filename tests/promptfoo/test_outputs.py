"""What a row's assertions see of the output: an object stays the object promptfoo passes.

A provider that answers an object (a promptfoo Python provider's dict or list, OpenAI's reply
to a JSON schema) or a ``providerOutput`` object reaches ``javascript`` and ``python``
assertions, transforms and ``context.providerResponse`` as that object; the string graders
read its ``JSON.stringify``; the row's ``response.output`` and the stored row keep it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coalmine.promptfoo.output import promptfoo_document
from tests.helpers.openai_server import FakeOpenAI
from tests.helpers.project import Project
from tests.promptfoo.test_import import import_and_run
from tests.promptfoo.test_run import NEEDS_NODE, evaluate, fixed, run

pytestmark = [NEEDS_NODE, pytest.mark.usefixtures("fast_python")]

PROVIDER = """\
def call_api(prompt, options, context):
    kind = context["vars"]["kind"]
    if kind == "object":
        return {"output": {"sentiment": "positive", "n": 2.0, "words": ["a", "b"]}}
    if kind == "list":
        return {"output": [1, 2, 3]}
    return {"output": 7}
"""

CONFIG = """\
prompts: ["{{ kind }}"]
providers: [file://provider.py]
tests:
  - vars: {kind: object}
    assert:
      - {type: javascript, value: "output.sentiment === 'positive' && output.words.length === 2"}
      - {type: python, value: "output['n'] == 2 and context['providerResponse']['output']['words'] == ['a', 'b']"}
      - {type: contains, value: '"n":2,'}
      - {type: equals, value: positive, transform: output.sentiment}
      - {type: is-refusal}
  - vars: {kind: list}
    options: {transform: "output.map(x => x * 2)"}
    assert:
      - {type: javascript, value: "output[2] === 6"}
      - {type: equals, value: "[2,4,6]"}
  - vars: {kind: number}
    assert:
      - {type: javascript, value: "output === 7"}
      - {type: python, value: "output + 1 == 8"}
"""


def object_project(root: Path) -> Path:
    project = Project(root)
    project.write("provider.py", PROVIDER)
    return project.write("promptfooconfig.yaml", CONFIG)


def passes(row: Any) -> list[bool]:
    return [c.passed for c in row.result.outcome.grading.component_results]


def test_a_python_providers_objects_reach_the_assertions_as_objects(tmp_path: Path) -> None:
    ours = run(object_project(tmp_path), tmp_path)
    assert [passes(r) for r in ours.rows] == [
        [True, True, True, True, True],
        [True, True],
        [True, True],
    ]
    assert [r.result.outcome.success for r in ours.rows] == [True, True, True]
    # an object is no text to refuse with: promptfoo passes is-refusal with score 0
    assert ours.rows[0].result.outcome.grading.component_results[4].score == 0.0
    first = ours.rows[0].result
    assert first.output == {"sentiment": "positive", "n": 2.0, "words": ["a", "b"]}
    document = promptfoo_document(ours)
    outputs = [r["response"]["output"] for r in document["results"]["results"]]
    assert outputs == [first.output, [2, 4, 6], 7]


def test_an_imported_suite_keeps_the_object_in_the_stored_row(tmp_path: Path) -> None:
    config = object_project(tmp_path / "source")
    code, rows = import_and_run(config, tmp_path / "project")
    assert code == 0
    by_test = {r["testIdx"]: r for r in rows}
    assert [by_test[i]["success"] for i in range(3)] == [True, True, True]
    assert by_test[0]["output"] == {"sentiment": "positive", "n": 2.0, "words": ["a", "b"]}
    assert by_test[1]["output"] == [2, 4, 6]
    assert by_test[2]["output"] == 7
    attempt = by_test[0]["_attempt"]
    # what the string graders read: JSON.stringify's text
    assert attempt.record["output"] == '{"sentiment":"positive","n":2,"words":["a","b"]}'


@pytest.mark.parametrize(
    ("output", "check"),
    [
        (
            {"a": {"b": [1, None]}},
            "output.a.b[1] === null && context.providerResponse.output.a.b[0] === 1",
        ),
        ([{"x": 1}], "Array.isArray(output) && output[0].x === 1"),
        (12.5, "typeof output === 'number' && output > 12"),
    ],
)
def test_a_fixed_output_of_any_shape_reaches_javascript_as_it_is(output: Any, check: str) -> None:
    result = evaluate(fixed({"type": "javascript", "value": check}, output=output))
    assert result.outcome.success, result.outcome.error


def test_an_openai_json_schema_reply_reaches_javascript_parsed(
    tmp_path: Path, openai_server: FakeOpenAI
) -> None:
    openai_server.enqueue('{"sentiment": "negative", "score": 0.2}')
    config = Project(tmp_path).write(
        "promptfooconfig.yaml",
        f"""\
        prompts: ["Rate: {{{{ text }}}}"]
        providers:
          - id: openai:chat:some-model
            config:
              apiBaseUrl: {openai_server.base_url}
              apiKeyRequired: false
              response_format:
                type: json_schema
                json_schema: {{name: rating, schema: {{type: object}}}}
        tests:
          - vars: {{text: awful}}
            assert:
              - {{type: javascript, value: "output.sentiment === 'negative' && output.score < 0.5"}}
              - {{type: is-json}}
        """,
    )
    ours = run(config, tmp_path)
    assert passes(ours.rows[0]) == [True, True]
    assert ours.rows[0].result.output == {"sentiment": "negative", "score": 0.2}
