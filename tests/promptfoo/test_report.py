"""promptfoo's result file: hand-computed rules, then whole files captured from the real promptfoo.

``fixtures/report/report_*.yaml`` were run with promptfoo 0.121.20
(``promptfoo eval -c report_x.yaml -o report_x.out.json --no-cache``, ``-j 1`` for ``a``); the
``*.expected.json`` beside them are those files without the rows' random ``id``s and
``metadata.nodeVersion``, each ``error`` cut to its first line (100 characters; the stack traces
name the machine). ``report_provider.py`` and ``pixel.png`` are what ``report_c.yaml`` uses.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine.promptfoo._redact import REDACTED, redact
from coalmine.promptfoo.report import (
    ReportColumn,
    ReportPrompt,
    ReportProvider,
    ReportRow,
    dump_promptfoo_output,
    promptfoo_output,
)
from coalmine.promptfoo.scoring import FailureReason

FIXTURES = Path(__file__).parent / "fixtures" / "report"
AT = datetime(2026, 11, 30, 3, 2, 12, 814000, tzinfo=UTC)
SAY = ReportPrompt(raw="Say {{name}}", label="Say {{name}}")
SAY_ID = "629e8726e10e7366df6fc08747bb27971290136a099232d0b384b6cfba621b08"  # from promptfoo
ECHO = ReportProvider(id="echo")


def graded(*components: tuple[bool, float], **extra: Any) -> dict[str, Any]:
    results = [
        {"pass": p, "score": s, "reason": "ok" if p else "no", "assertion": {"type": "contains"}}
        for p, s in components
    ]
    passed = all(p for p, _ in components)
    return {
        "pass": passed,
        "score": 1 if passed else 0,
        "reason": "All assertions passed" if passed else "no",
        "namedScores": {},
        "tokensUsed": {"total": 0, "prompt": 0, "completion": 0, "cached": 0, "numRequests": 0},
        "componentResults": results,
        **extra,
    }


def row(**fields: Any) -> ReportRow:
    name = fields.pop("name", "Bob")
    values: dict[str, Any] = {
        "test_idx": 0,
        "prompt_idx": 0,
        "prompt": SAY,
        "provider": ECHO,
        "rendered_prompt": f"Say {name}",
        "vars": {"name": name},
        "test_case": {"vars": {"name": name}, "assert": [], "options": {}, "metadata": {}},
        "output": f"Say {name}",
        "success": True,
        "score": 1,
        "failure_reason": 0,
        "grading_result": graded((True, 1)),
        "named_scores": {},
        "latency_ms": 3,
    }
    values.update(fields)
    return ReportRow(**values)


def build(rows: list[ReportRow], **options: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "config": {},
        "eval_id": "eval-abc",
        "created_at": AT,
        "duration_ms": 50,
        "platform": "linux",
        "arch": "x64",
    }
    kwargs.update(options)
    return promptfoo_output(rows, **kwargs)


def metrics(document: dict[str, Any], column: int = 0) -> dict[str, Any]:
    result: dict[str, Any] = document["results"]["prompts"][column]["metrics"]
    return result


def results(document: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = document["results"]["results"]
    return found


# --- columns ------------------------------------------------------------------------------


def test_prompt_id_hashes_the_label_then_the_id_then_the_text() -> None:
    labelled = ReportPrompt(raw="Hello {{name}}", label="greeting", id="greet")
    unlabelled = ReportPrompt(raw="Hi", label="", id="greet")
    bare = ReportPrompt(raw="Hi", label="")
    columns = [
        ReportColumn(SAY, ECHO),
        ReportColumn(labelled, ECHO),
        ReportColumn(unlabelled, ECHO),
        ReportColumn(bare, ECHO),
    ]
    ids = [p["id"] for p in build([], columns=columns)["results"]["prompts"]]
    sha = [hashlib.sha256(text.encode()).hexdigest() for text in ("greeting", "greet", "Hi")]
    assert ids == [SAY_ID, *sha]


def test_a_column_names_its_provider_by_label_else_id_and_keeps_the_prompt_config() -> None:
    configured = ReportPrompt(raw="Tell {{t}}", label="first", config={"temperature": 0.2})
    rows = [
        row(),
        row(prompt_idx=1, provider=ReportProvider(id="echo", label="echo-two")),
        row(prompt_idx=2, prompt=configured, rendered_prompt="Tell x"),
    ]
    prompts = build(rows)["results"]["prompts"]
    assert [p["provider"] for p in prompts] == ["echo", "echo-two", "echo"]
    assert list(prompts[2]) == ["id", "raw", "label", "config", "provider", "metrics"]
    assert list(prompts[0]) == ["id", "raw", "label", "provider", "metrics"]
    assert prompts[2]["config"] == {"temperature": 0.2}


def test_columns_come_from_the_rows_unless_given() -> None:
    with pytest.raises(ValueError, match=r"no row for columns \[0\]"):
        build([row(prompt_idx=1)])
    with pytest.raises(ValueError, match="column 0 holds two"):
        build([row(), row(test_idx=1, provider=ReportProvider(id="other"))])
    with pytest.raises(ValueError, match="names column 3 of 1"):
        build([row(prompt_idx=3)], columns=[ReportColumn(SAY, ECHO)])
    unused = build([row()], columns=[ReportColumn(SAY, ECHO), ReportColumn(SAY, ECHO)])
    assert metrics(unused, 1)["testPassCount"] == 0


# --- metrics ------------------------------------------------------------------------------


def test_result_counts_pass_fail_error_and_no_output() -> None:
    failed = graded((True, 1), (False, 0))
    rows = [
        row(test_idx=0),
        row(test_idx=1, success=False, score=0.5, failure_reason=1, grading_result=failed),
        row(test_idx=2, success=False, score=0, failure_reason=2, error="boom"),
        # promptfoo leaves failureReason at 0 on "No output": it counts as a failure.
        row(
            test_idx=3, success=False, score=0, error="No output", output=None, grading_result=None
        ),
    ]
    document = build(rows)
    m = metrics(document)
    assert (m["testPassCount"], m["testFailCount"], m["testErrorCount"]) == (1, 2, 1)
    assert m["score"] == 1.5
    assert (m["assertPassCount"], m["assertFailCount"]) == (2, 1)  # 1 + (1 pass, 1 fail)
    assert m["totalLatencyMs"] == 12
    stats = document["results"]["stats"]
    assert (stats["successes"], stats["failures"], stats["errors"]) == (1, 2, 1)


def test_an_error_row_is_never_graded() -> None:
    document = build([row(success=False, score=0, failure_reason=2, error="x")])
    assert results(document)[0]["gradingResult"] is None
    assert metrics(document)["assertPassCount"] == 0


def test_a_metric_with_weights_adds_score_times_weight() -> None:
    components = [
        {"pass": True, "score": 1, "reason": "", "assertion": {"type": "a", "metric": "q"}},
        {"pass": False, "score": 0, "reason": "", "assertion": {"type": "b", "metric": "q"}},
    ]
    grading = {"componentResults": components, "namedScoreWeights": {"q": 3}}
    one = row(named_scores={"q": 2 / 3}, grading_result=grading)
    m = metrics(build([one, row(test_idx=1, named_scores={"q": 1 / 3}, grading_result=grading)]))
    assert m["namedScores"] == {"q": pytest.approx(3.0)}  # 2/3·3 + 1/3·3
    assert m["namedScoresCount"] == {"q": 4}  # two contributing assertions per row
    assert m["namedScoreWeights"] == {"q": 6}


def test_a_metric_without_weights_adds_the_raw_score_but_counts_each_assertion() -> None:
    components = [{"pass": True, "score": 1, "reason": "", "assertion": {"metric": "m"}}] * 3
    m = metrics(
        build([row(named_scores={"m": 0.5}, grading_result={"componentResults": components})])
    )
    assert (m["namedScores"], m["namedScoresCount"], m["namedScoreWeights"]) == (
        {"m": 0.5},
        {"m": 3},
        {"m": 3},
    )


def test_a_metric_name_is_rendered_with_the_test_vars_and_counts_at_least_one() -> None:
    templated = {"pass": True, "score": 1, "reason": "", "assertion": {"metric": "{{lang}}_s"}}
    test_case = {"vars": {"lang": "en"}, "options": {}, "metadata": {}}
    grading = {"componentResults": [templated, templated]}
    rendered = row(test_case=test_case, grading_result=grading, named_scores={"en_s": 1, "x": 0.25})
    m = metrics(build([rendered]))
    assert m["namedScoresCount"] == {"en_s": 2, "x": 1}  # "x" has no assertion: 1
    assert m["namedScores"] == {"en_s": 1, "x": 0.25}


def test_metrics_follow_the_stored_order_serial_tests_first() -> None:
    serial = {"vars": {"name": "Z"}, "options": {"runSerially": True}, "metadata": {}}
    rows = [row(named_scores={"a": 1}), row(test_idx=1, test_case=serial, named_scores={"b": 1})]
    assert list(metrics(build(rows))["namedScores"]) == ["b", "a"]


def test_token_usage_of_rows_columns_and_stats() -> None:
    used = {"total": 10, "prompt": 6, "completion": 4, "cached": 0, "numRequests": 1}
    python = ReportProvider(id="file://p.py", label="py")
    rows = [
        row(grading_result=graded((True, 1), tokensUsed=used)),  # echo: one request
        row(test_idx=1, prompt_idx=1, provider=python, token_usage={"total": 7, "prompt": 4}),
        row(test_idx=2, prompt_idx=1, provider=python, grading_result=None),  # no usage: one
        row(test_idx=3, success=False, score=0, failure_reason=2, error="threw"),  # none
    ]
    document = build(rows)
    first, second = (results(document)[i]["tokenUsage"] for i in (0, 1))
    assert (first["numRequests"], first["assertions"]["numRequests"]) == (1, 1)
    assert (first["assertions"]["total"], first["assertions"]["prompt"]) == (10, 6)
    assert (second["total"], second["prompt"], second["numRequests"]) == (7, 4, 1)
    thrown = results(document)[-1]["tokenUsage"]
    assert (thrown["numRequests"], thrown["assertions"]["numRequests"]) == (0, 0)
    echo_usage, py_usage = metrics(document, 0)["tokenUsage"], metrics(document, 1)["tokenUsage"]
    assert echo_usage["numRequests"] == 1  # the thrown row adds nothing
    assert (echo_usage["assertions"]["total"], echo_usage["assertions"]["numRequests"]) == (10, 0)
    assert (py_usage["total"], py_usage["numRequests"]) == (7, 2)
    stats = document["results"]["stats"]["tokenUsage"]
    assert (stats["total"], stats["numRequests"], stats["assertions"]["total"]) == (7, 3, 10)


# --- one result ---------------------------------------------------------------------------


def test_rows_are_written_by_test_then_failures_first_then_column() -> None:
    failed = {"success": False, "score": 0, "failure_reason": 1, "error": "no"}
    rows = [
        row(test_idx=1, prompt_idx=0),
        row(test_idx=1, prompt_idx=1, **failed),
        row(test_idx=0, prompt_idx=1),
        row(test_idx=0, prompt_idx=0, **failed),
        row(test_idx=0, prompt_idx=2, **failed),
    ]
    order = [(r["testIdx"], r["promptIdx"]) for r in results(build(rows))]
    assert order == [(0, 0), (0, 2), (0, 1), (1, 1), (1, 0)]


def test_a_result_has_promptfoo_keys_in_promptfoo_order() -> None:
    result = results(build([row()]))[0]
    assert list(result) == [
        "cost", "gradingResult", "id", "latencyMs", "namedScores", "prompt", "promptId",
        "promptIdx", "provider", "response", "score", "success", "testCase", "testIdx",
        "tokenUsage", "vars", "metadata", "failureReason",
    ]  # fmt: skip
    assert result["promptId"] == SAY_ID
    assert result["prompt"] == {"raw": "Say Bob", "label": "Say {{name}}", "config": {}}
    assert result["response"] == {
        "output": "Say Bob",
        "raw": "Say Bob",
        "cost": 0,
        "cached": False,
        "tokenUsage": {"total": 0, "prompt": 0, "completion": 0, "numRequests": 1},
        "isRefusal": False,
        "metadata": {},
    }
    assert result["metadata"] == {"_promptfooFileMetadata": {}}
    assert uuid.UUID(result["id"]) == uuid.UUID(results(build([row()]))[0]["id"])


def test_a_thrown_error_leaves_no_response_and_an_error_context() -> None:
    broken = ReportProvider(id="exec:false", label="broken")
    test_case = {"vars": {"name": "Bob"}, "options": {}, "metadata": {"team": "core"}}
    errored = row(
        provider=broken,
        test_case=test_case,
        success=False,
        score=0,
        failure_reason=FailureReason.ERROR,
        error="Error: Command failed",
        latency_ms=0,
    )
    result = results(build([errored]))[0]
    assert "response" not in result
    assert (result["error"], result["gradingResult"], result["cost"]) == (
        "Error: Command failed",
        None,
        0,
    )
    assert result["metadata"] == {
        "team": "core",
        "errorContext": {"providerId": "exec:false", "providerLabel": "broken"},
    }
    assert result["failureReason"] == 2 and type(result["failureReason"]) is int


def test_a_returned_error_keeps_the_provider_response() -> None:
    response = {"error": "provider said no", "tokenUsage": {"total": 5}, "cached": False}
    errored = row(success=False, score=0, failure_reason=2, error="provider said no")
    result = results(build([ReportRow(**{**errored.__dict__, "response": response})]))[0]
    assert result["response"] == response
    assert result["metadata"] == {"_promptfooFileMetadata": {}}
    assert (result["tokenUsage"]["total"], result["tokenUsage"]["numRequests"]) == (5, 1)


def test_a_failed_row_reports_the_grading_reason_as_its_error() -> None:
    grading = graded((False, 0))
    failed = row(success=False, score=0, failure_reason=1, grading_result=grading)
    assert results(build([failed]))[0]["error"] == "no"
    assert "error" not in results(build([row()]))[0]


def test_fixed_and_script_outputs_have_their_response_shapes() -> None:
    fixed_case = {"vars": {}, "providerOutput": "fixed", "options": {}, "metadata": {}}
    fixed = row(test_case=fixed_case, output="fixed")
    script = row(
        test_idx=1,
        prompt_idx=1,
        provider=ReportProvider(id="file://p.py"),
        output="hi!",
        token_usage={"total": 7},
        cost=0.25,
    )
    document = build([fixed, script])
    fixed_response, script_response = (r["response"] for r in results(document))
    assert list(fixed_response) == ["output", "tokenUsage", "cost", "cached"]
    assert fixed_response["tokenUsage"]["numRequests"] == 0
    assert script_response == {
        "output": "hi!",
        "tokenUsage": {"total": 7},
        "cost": 0.25,
        "cached": False,
    }
    assert results(document)[1]["cost"] == 0.25 and metrics(document, 1)["cost"] == 0.25


def test_the_row_prompt_config_merges_the_test_options_but_repeat() -> None:
    prompt = ReportPrompt(raw="Tell {{t}}", label="first", config={"temperature": 0.2})
    options = {"transform": "output.trim()", "repeat": 3}
    test_case = {"vars": {"t": "x"}, "options": options, "metadata": {}}
    made = row(prompt=prompt, rendered_prompt="Tell x", test_case=test_case)
    config = results(build([made]))[0]["prompt"]["config"]
    assert config == {"temperature": 0.2, "transform": "output.trim()"}


def test_media_vars_and_session_id_reach_the_row_metadata() -> None:
    test_vars = {"q": "hi", "pic": "file://a/Pixel.PNG", "doc": "file://notes.txt"}
    test_case = {"vars": test_vars, "options": {}, "metadata": {"owner": "qa"}}
    made = row(test_case=test_case, vars={**test_vars, "sessionId": {"n": 1}})
    metadata = results(build([made]))[0]["metadata"]
    assert metadata == {
        "owner": "qa",
        "_promptfooFileMetadata": {
            "pic": {"path": "file://a/Pixel.PNG", "type": "image", "format": "PNG"}
        },
        "sessionId": '{"n":1}',
    }


def test_description_is_not_written() -> None:
    assert "description" not in results(build([row(description="plain pass")]))[0]


def test_row_ids_are_uuids_unique_per_cell() -> None:
    ids = {r["id"] for r in results(build([row(), row(test_idx=1), row(test_idx=2)]))}
    assert len(ids) == 3 and all(uuid.UUID(i).version == 5 for i in ids)


# --- the document -------------------------------------------------------------------------


def test_the_document_top_level() -> None:
    extra = row(vars={"name": "Bob", "_conversation": []})
    document = build([extra], runtime_options={"cache": False})
    assert list(document) == [
        "evalId", "results", "config", "shareableUrl", "metadata", "vars", "runtimeOptions",
    ]  # fmt: skip
    assert document["results"]["version"] == 3
    assert document["results"]["timestamp"] == "2026-11-30T03:02:12.814Z"
    assert document["metadata"] == {
        "promptfooVersion": "0.121.20",
        "platform": "linux",
        "arch": "x64",
        "exportedAt": "2026-11-30T03:02:12.814Z",
        "evaluationCreatedAt": "2026-11-30T03:02:12.814Z",
    }
    assert document["vars"] == ["name", "_conversation"]
    assert document["results"]["stats"]["durationMs"] == 50
    bare = build([], columns=[])
    assert "vars" not in bare and "runtimeOptions" not in bare
    assert bare["results"]["stats"]["evaluationDurationMs"] == 50


def test_times_are_written_in_utc_with_milliseconds() -> None:
    paris = timezone(timedelta(hours=1))
    moment = datetime(2026, 1, 2, 4, 5, 6, 7890, tzinfo=paris)
    document = build([], columns=[], created_at=moment, exported_at=moment + timedelta(seconds=1))
    assert document["results"]["timestamp"] == "2026-01-02T03:05:06.007Z"
    assert document["metadata"]["exportedAt"] == "2026-01-02T03:05:07.007Z"
    with pytest.raises(ValueError, match="no timezone"):
        build([], columns=[], created_at=datetime(2026, 1, 2))  # noqa: DTZ001


def test_dump_writes_as_json_stringify_does() -> None:
    text = dump_promptfoo_output({"b": 1.0, "2": [math.nan, "é"], "1": {}})
    assert text == '{\n  "1": {},\n  "2": [\n    null,\n    "é"\n  ],\n  "b": 1\n}'


# --- redaction ----------------------------------------------------------------------------


def test_secret_keys_and_values_are_redacted() -> None:
    value = {
        "X-Api_Key": "k",
        "nested": [{"password": {"deep": 1}}],
        "key": "sk-" + "a" * 20,
        "plain": "sk-short",
        "digits": "1" * 64,
        "list": ["1" * 64, "a" * 64],
    }
    assert redact(value) == {
        "X-Api_Key": REDACTED,
        "nested": [{"password": REDACTED}],
        "key": REDACTED,
        "plain": "sk-short",
        "digits": REDACTED,  # under a key, the value test comes first
        "list": ["1" * 64, REDACTED],  # in a list, JSON comes first: digits are a number
    }


def test_json_strings_are_redacted_and_re_serialised() -> None:
    chat = '[\n  {"role": "user", "content": "Hi", "n": 1.0}\n]'
    assert redact(chat) == '[{"role":"user","content":"Hi","n":1}]'
    assert redact('{"b": 1, "2": {"token": "t"}}') == '{"2":{"token":"[REDACTED]"},"b":1}'
    assert redact('"just a string"') == '"just a string"'


def test_form_data_secrets_are_masked() -> None:
    assert redact("user=bob&password=hunter2") == "user=bob&password=%5BREDACTED%5D"
    assert redact("a[api_key]=x;b=2") == "a[api_key]=%5BREDACTED%5D;b=2"
    assert redact("token={{ token }}") == "token={{ token }}"  # a pure template stays
    assert redact("q=1&b=2") == "q=1&b=2"


def test_urls_are_normalised_and_masked() -> None:
    assert redact({"url": "HTTPS://Example.com"}) == {"url": "https://example.com/"}
    assert redact({"url": "https://u:p@a.io:443/x?api_key=1&q=a b"}) == {
        "url": "https://***:***@a.io/x?api_key=%5BREDACTED%5D&q=a+b"
    }
    assert redact({"url": "http://a.io:8080/v1"}) == {"url": "http://a.io:8080/v1"}
    assert redact({"url": "https://{{host}}/x?token=abc"}) == {
        "url": "https://{{host}}/x?token=%5BREDACTED%5D"
    }
    assert redact({"url": "not a url"}) == {"url": "not a url"}


# --- against the real promptfoo -----------------------------------------------------------


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return document


def rows_from(document: dict[str, Any]) -> list[ReportRow]:
    """The rows as coalmine's runner would give them, from what promptfoo wrote."""
    prompts = document["results"]["prompts"]
    rows = []
    for found in document["results"]["results"]:
        column = prompts[found["promptIdx"]]
        response = found.get("response")
        row_vars = dict(found["vars"])
        if "sessionId" in found["metadata"]:  # the file shows the var redacted
            row_vars["sessionId"] = found["metadata"]["sessionId"]
        returned_error = response is not None and found["failureReason"] == 2
        rows.append(
            ReportRow(
                test_idx=found["testIdx"],
                prompt_idx=found["promptIdx"],
                prompt=ReportPrompt(
                    raw=column["raw"], label=column["label"], config=column.get("config")
                ),
                provider=ReportProvider(**found["provider"]),
                rendered_prompt=found["prompt"]["raw"],
                vars=row_vars,
                test_case=found["testCase"],
                output=response.get("output") if response else None,
                success=found["success"],
                score=found["score"],
                failure_reason=found["failureReason"],
                error=found.get("error"),
                grading_result=found["gradingResult"],
                named_scores=found["namedScores"],
                latency_ms=found["latencyMs"],
                cost=found["cost"],
                token_usage=(response or {}).get("tokenUsage"),
                response=response if returned_error else None,
            )
        )
    return rows


def rebuild(expected: dict[str, Any], rows: list[ReportRow], config: Any) -> dict[str, Any]:
    metadata = expected["metadata"]
    document = promptfoo_output(
        rows,
        config=config,
        eval_id=expected["evalId"],
        created_at=datetime.fromisoformat(metadata["evaluationCreatedAt"]),
        duration_ms=expected["results"]["stats"]["durationMs"],
        runtime_options=expected["runtimeOptions"],
        exported_at=datetime.fromisoformat(metadata["exportedAt"]),
        platform=metadata["platform"],
        arch=metadata["arch"],
    )
    for result in results(document):
        assert uuid.UUID(result.pop("id"))
    return document


@pytest.mark.parametrize("name", ["report_a", "report_b", "report_c"])
def test_the_file_matches_promptfoo(name: str) -> None:
    expected = load(f"{name}.expected.json")
    rows = list(reversed(rows_from(expected)))
    ours = rebuild(expected, rows, expected["config"])
    assert dump_promptfoo_output(ours) == dump_promptfoo_output(expected)


def test_redaction_matches_promptfoo() -> None:
    expected = load("report_d.expected.json")
    config = yaml.safe_load((FIXTURES / "report_d.yaml").read_text())
    test = config["tests"][0]
    found = results(expected)[0]
    made = ReportRow(
        test_idx=0,
        prompt_idx=0,
        prompt=ReportPrompt(raw=config["prompts"][0], label=config["prompts"][0]),
        provider=ECHO,
        rendered_prompt=found["response"]["raw"],
        vars=test["vars"],
        test_case={**test, "options": {}},
        output=found["response"]["output"],
        success=True,
        score=1,
        failure_reason=0,
        grading_result=found["gradingResult"],
        latency_ms=found["latencyMs"],
    )
    ours = rebuild(expected, [made], {**expected["config"], "tests": config["tests"]})
    assert dump_promptfoo_output(ours) == dump_promptfoo_output(expected)


@pytest.mark.parametrize("name", ["report_a", "report_b", "report_c", "report_d"])
def test_dump_reproduces_promptfoo_text(name: str) -> None:
    text = (FIXTURES / f"{name}.expected.json").read_text()
    assert dump_promptfoo_output(json.loads(text)) + "\n" == text
