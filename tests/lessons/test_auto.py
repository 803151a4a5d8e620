"""Lessons coalmine keeps by itself (caught regressions, judge disagreements) and recalls.

Real suites, canaries and calibration sets in a temporary project, a real in-process python
agent and judge, and the real SQLite store. The agent answers its prompt unless its case id is
listed in ``broken.txt`` next to it: a test breaks cases between two runs by writing that file.
"""

from __future__ import annotations

import io
import json
import sys
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from coalmine.canary.plan import plan_canaries
from coalmine.canary.run import run_canaries
from coalmine.cli.display import JsonlDisplay, PlainDisplay
from coalmine.config import load_config
from coalmine.engine.events import Hooks
from coalmine.evals.plan import plan_evals
from coalmine.evals.run import EvalOutcome, run_evals
from coalmine.judge.calibrate import calibrate
from coalmine.judge.labels import load_labels
from coalmine.providers.base import provider_settings
from coalmine.reports.html import render_html
from coalmine.reports.markdown import render_markdown
from coalmine.results import CanaryRun
from coalmine.store.memory import Lesson, add_lesson, feedback, list_lessons, recall
from coalmine.store.runs import Store

AGENT = """\
import json
from pathlib import Path

BROKEN = Path(__file__).with_name("broken.txt")


async def run(prompt, context):
    if BROKEN.exists() and context.case_id in BROKEN.read_text().split():
        return "nope then"
    return prompt


async def judge(prompt, context):
    score = 1 if "ANSWER-GOOD" in prompt else 0
    return json.dumps({"criteria": {"correct": {"score": score, "reason": "scripted"}}})
"""


class Repo:
    """A project with the agent module, a config, and helpers to run evals and canaries."""

    def __init__(self, root: Path, module: str):
        self.root = root
        self.module = module
        root.mkdir(parents=True)
        (root / f"{module}.py").write_text(AGENT, encoding="utf-8")
        agents = {
            "Bot": {"provider": "python", "target": f"{module}:run"},
            "Judge": {"provider": "python", "target": f"{module}:judge"},
        }
        data = {"agents": agents, "routing": {"qa": "Bot"}}
        (root / "coalmine.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")

    def suite(self, name: str, cases: list[dict[str, Any]], meta: dict[str, Any]) -> None:
        folder = self.root / "harness" / "evals"
        folder.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(c) + "\n" for c in cases)
        (folder / f"{name}.jsonl").write_text(lines, encoding="utf-8")
        meta = {"agent": "Bot", **meta}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")

    def break_cases(self, *case_ids: str) -> None:
        (self.root / "broken.txt").write_text(" ".join(case_ids), encoding="utf-8")

    def store(self) -> Store:
        return Store.open(self.root / ".coalmine" / "coalmine.db")

    def run(self, *names: str, hooks: list[Hooks] | None = None, **options: Any) -> EvalOutcome:
        plan = plan_evals(self.root, names)
        store = self.store()
        try:
            return anyio.run(partial(run_evals, plan, store=store, hooks=hooks or [], **options))
        finally:
            store.close()

    def lessons(self) -> list[Lesson]:
        store = self.store()
        try:
            return list_lessons(store)
        finally:
            store.close()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Repo]:
    module = f"lessagent_{uuid.uuid4().hex[:12]}"
    monkeypatch.setattr(sys, "path", list(sys.path))  # the provider adds the project folder
    yield Repo(tmp_path / "proj", module)
    sys.modules.pop(module, None)


def ok(case_id: str, *more: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A case the agent passes while it is not broken."""
    grader = {"type": "contains", "config": {"value": "ok"}}
    return {"id": case_id, "prompt": "ok then", "graders": [grader, *more], **extra}


ADVISORY = {
    "id": "advisory",
    "prompt": "ok then",
    "graders": [
        {"type": "contains", "config": {"value": "then"}},
        {"type": "contains", "name": "soft", "config": {"value": "ok"}, "blocking": False},
    ],
}


def triage(
    *, erroring: bool = False, extra: tuple[dict[str, Any], ...] = ()
) -> list[dict[str, Any]]:
    """The suite of the regression tests; ``errs`` errors when ``erroring``.

    (Its ``expected`` is then one its grader cannot take, which is found when it grades.)
    """
    errs: dict[str, Any] = {"id": "errs", "prompt": "ok then", "graders": [{"type": "levenshtein"}]}
    errs["expected"] = {"not": "text"} if erroring else "ok then"
    always_bad = {**ok("always-bad"), "prompt": "bad then"}
    cases = [ok("login-reset"), ok("slow-checkout"), ok("stable"), always_bad, ADVISORY, errs]
    return [*cases, *extra]


# -- caught regressions -----------------------------------------------------------------------


def test_a_blocking_suite_keeps_one_caught_regression_per_run(repo: Repo) -> None:
    repo.suite("triage", triage(), {"description": "Support ticket triage"})
    first = repo.run()
    assert first.exit_code == 1  # always-bad fails from the start
    assert repo.lessons() == []  # no baseline: nothing to compare with

    # run 2: two cases break, one fails only on an advisory grader, one errors, one is new
    repo.break_cases("login-reset", "slow-checkout", "advisory", "new-case")
    repo.suite("triage", triage(erroring=True, extra=(ok("new-case"),)), {})
    second = repo.run()
    [r] = second.suites
    assert (r.passed, r.failed, r.errored) == (1, 5, 1)
    lesson, other = repo.lessons()  # one per case
    assert lesson.kind == other.kind == "caught-regression"
    assert lesson.text == (
        f"Suite 'triage' caught a regression: case login-reset passed in run "
        f"{first.run_id} and fails in run {second.run_id} (contains failed: missing 'ok')"
    )
    assert other.text.startswith("Suite 'triage' caught a regression: case slow-checkout ")
    assert lesson.tags == ("triage", "eval")
    assert lesson.paths == ("harness/evals/triage.jsonl", "harness/evals/triage.yaml")
    assert lesson.evidence == (second.run_id, first.run_id, "triage/login-reset")
    assert (lesson.count, lesson.last_run) == (1, second.run_id)

    # a run killed after it retained, then resumed: the same lessons, counted once
    store = repo.store()
    try:
        store.reopen_run(second.run_id)
    finally:
        store.close()
    resumed = repo.run(resume=second.run_id)
    assert resumed.run_id == second.run_id
    assert [(x.id, x.count) for x in repo.lessons()] == [(lesson.id, 1), (other.id, 1)]

    # run 3 fails the same cases: its baseline (run 2) failed them too, so nothing is caught
    third = repo.run()
    assert third.exit_code == 1
    assert [(x.id, x.count) for x in repo.lessons()] == [(lesson.id, 1), (other.id, 1)]


def test_one_case_reads_in_the_singular(repo: Repo) -> None:
    repo.suite("triage", [ok("login-reset"), ok("stable")], {})
    first = repo.run()
    repo.break_cases("login-reset")
    second = repo.run()
    [lesson] = repo.lessons()
    assert lesson.text == (
        f"Suite 'triage' caught a regression: case login-reset passed in run {first.run_id} "
        f"and fails in run {second.run_id} (contains failed: missing 'ok')"
    )


def test_an_advisory_suite_keeps_nothing(repo: Repo) -> None:
    repo.suite("triage", triage(), {"blocking": False})
    repo.run()
    repo.break_cases("login-reset", "slow-checkout")
    second = repo.run()
    assert second.suites[0].failed == 3 and second.exit_code == 0
    assert repo.lessons() == []


def test_the_baseline_is_the_last_finished_run_of_the_same_suite(repo: Repo) -> None:
    repo.suite("triage", [ok("login-reset")], {})
    repo.suite("billing", [ok("refund")], {})
    base = repo.run()
    repo.break_cases("login-reset")
    repo.run("billing")  # a later run without triage is no baseline for it
    second = repo.run("triage")
    [lesson] = repo.lessons()
    assert lesson.evidence == (second.run_id, base.run_id, "triage/login-reset")


def test_a_flaky_case_keeps_one_lesson_counted_and_its_last_run(repo: Repo) -> None:
    repo.suite("triage", [ok("login-reset"), ok("stable")], {})
    runs = []
    for flip in range(6):  # pass, fail, pass, fail, pass, fail
        repo.break_cases(*(["login-reset"] if flip % 2 else []))
        runs.append(repo.run().run_id)
    [lesson] = repo.lessons()
    assert (lesson.count, lesson.last_run) == (3, runs[-1])
    assert lesson.text == (
        f"Suite 'triage' caught a regression: case login-reset passed in run {runs[-2]} "
        f"and fails in run {runs[-1]} (contains failed: missing 'ok')"
    )
    assert lesson.evidence == (runs[-1], runs[-2], "triage/login-reset")
    # another case is another lesson; the flaky one counts once more
    repo.break_cases()
    repo.run()
    repo.break_cases("login-reset", "stable")
    last = repo.run().run_id
    flaky, other = repo.lessons()
    assert (flaky.id, flaky.count, flaky.last_run) == (lesson.id, 4, last)
    assert (other.count, other.evidence[2]) == (1, "triage/stable")


def test_a_case_failing_for_another_cause_is_another_lesson(repo: Repo) -> None:
    other = {"type": "contains", "name": "polite", "config": {"value": "please"}}
    repo.suite("triage", [{**ok("login-reset", other), "prompt": "ok then, please"}], {})
    repo.run()
    repo.break_cases("login-reset")  # "nope then": both graders fail
    repo.run()
    (root := repo.root / "harness" / "evals" / "triage.jsonl").write_text(
        json.dumps({**ok("login-reset", other), "prompt": "ok then"}) + "\n"
    )
    repo.break_cases()
    repo.run()  # fails on "polite" alone: passed before? no: nothing new
    assert len(repo.lessons()) == 1
    root.write_text(json.dumps({**ok("login-reset", other), "prompt": "ok then, please"}) + "\n")
    repo.run()  # passes again
    root.write_text(json.dumps({**ok("login-reset", other), "prompt": "ok then"}) + "\n")
    repo.run()  # regresses on "polite" alone: another cause
    both, polite = repo.lessons()
    assert "contains failed" in both.text and "polite failed" in both.text
    assert "contains failed" not in polite.text and polite.count == 1


# A missing key never reaches a call: the run stops before it, with exit 2 and no lesson
# (tests/engine/test_variables.py).
PROVIDER_ERRORS = {
    "a cassette miss": ({}, "replay"),
    "a refused connection": (
        {
            "provider": "openai",
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": "COALMINE_TEST_KEY",
            "retries": 0,
        },
        None,
    ),  # fmt: skip
    "an agent that cannot start": ({"provider": "command", "argv": ["/nonexistent/agent"]}, None),
}


@pytest.mark.parametrize("cause", list(PROVIDER_ERRORS))
def test_an_infrastructure_error_is_no_regression(
    repo: Repo, cause: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("COALMINE_TEST_KEY", "sk-test")
    canary(repo, "qa-001-login")
    repo.suite("triage", [ok("login-reset")], {})
    assert repo.run().exit_code == 0
    run_canary_plan(repo)
    settings, how = PROVIDER_ERRORS[cause]
    options: dict[str, Any] = {}
    if how == "replay":
        cassette = tmp_path / "empty.jsonl"
        cassette.write_text("")
        options["replay"] = cassette
    else:
        config = yaml.safe_load((repo.root / "coalmine.yaml").read_text())
        config["agents"]["Bot"] = settings
        (repo.root / "coalmine.yaml").write_text(yaml.safe_dump(config))
    failed = repo.run(**options)
    assert failed.exit_code == 1 and failed.suites[0].failed == 1
    again = run_canary_plan(repo, replay=options.get("replay"))
    assert [r.reason for r in again.results] == ["agent_error"]
    assert repo.lessons() == []


# -- recall before a run ------------------------------------------------------------------------


def test_lessons_relevant_to_each_suite_are_recalled_shown_and_recorded(repo: Repo) -> None:
    repo.suite("triage", [ok("login-reset")], {"description": "Support ticket routing"})
    repo.suite("billing", [ok("refund")], {})
    store = repo.store()
    try:
        by_path = add_lesson(
            store, "risk-note", "Login resets need the old token revoked",
            paths=["harness/evals/triage.jsonl"],
        )  # fmt: skip
        by_words = add_lesson(store, "observation", "Ticket routing drifts after prompt edits")
        stale = add_lesson(store, "observation", "Routing of tickets is fine, ignore it")
        for _ in range(3):
            feedback(store, stale, "negative")
        add_lesson(store, "risk-note", "Unrelated: the cache ignores model versions")
        expected = {
            lesson.id: round(score, 3)
            for lesson, score in recall(
                store,
                "triage Support ticket routing",
                paths=["harness/evals/triage.jsonl", "harness/evals/triage.yaml"],
            )
        }
    finally:
        store.close()
    plain, jsonl = io.StringIO(), io.StringIO()
    outcome = repo.run(hooks=[PlainDisplay(plain), JsonlDisplay(jsonl)])

    billing, triage_result = outcome.suites
    assert billing.suite_id == "billing" and billing.lessons == []
    data = json.loads(outcome.paths[1].read_text(encoding="utf-8"))
    assert [x["id"] for x in data["lessons"]] == [by_path, by_words]  # the path hit ranks first
    assert data["lessons"][0] == {
        "id": by_path,
        "kind": "risk-note",
        "text": "Login resets need the old token revoked",
        "score": expected[by_path],
    }
    assert data["lessons"] == [x.model_dump() for x in triage_result.lessons]

    shown = plain.getvalue().splitlines()
    assert shown[:3] == [
        "Lessons recalled:",
        f"  #{by_path} risk-note Login resets need the old token revoked",
        f"  #{by_words} observation Ticket routing drifts after prompt edits",
    ]
    assert shown[3].startswith("coalmine: running 2 case runs")
    assert "ignore it" not in plain.getvalue()  # the stale lesson
    events = [json.loads(line) for line in jsonl.getvalue().splitlines()]
    assert [e["event"] for e in events][:2] == ["lessons_recalled", "eval_start"]
    assert [x["id"] for x in events[0]["lessons"]] == [by_path, by_words]


def test_no_relevant_lesson_no_event_and_an_empty_list(repo: Repo) -> None:
    repo.suite("triage", [ok("login-reset")], {})
    store = repo.store()
    try:
        add_lesson(store, "risk-note", "The cache ignores model versions", paths=["src/cache"])
    finally:
        store.close()
    jsonl = io.StringIO()
    outcome = repo.run(hooks=[JsonlDisplay(jsonl)])
    assert outcome.suites[0].lessons == []
    assert json.loads(outcome.paths[0].read_text(encoding="utf-8"))["lessons"] == []
    assert "lessons_recalled" not in jsonl.getvalue()


# -- canaries -----------------------------------------------------------------------------------


def canary(repo: Repo, spec_id: str) -> None:
    spec = {
        "id": spec_id,
        "phase": "qa",
        "title": spec_id,
        "prompt": "ok then",
        "expected": {"graders": [{"type": "keyword", "config": {"required": ["ok"]}}]},
    }
    path = repo.root / "bench" / "canaries" / "qa" / f"{spec_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")


def run_canary_plan(
    repo: Repo, hooks: list[Hooks] | None = None, replay: Path | None = None
) -> CanaryRun:
    store = repo.store()
    try:
        plan = plan_canaries(repo.root)
        run = partial(run_canaries, plan, store=store, hooks=hooks or [], replay=replay)
        outcome = anyio.run(run)
    finally:
        store.close()
    return outcome.run


def test_a_canary_run_keeps_its_caught_regression_and_recalls_it_next_time(repo: Repo) -> None:
    canary(repo, "qa-001-login")
    canary(repo, "qa-002-search")
    first = run_canary_plan(repo)
    assert repo.lessons() == []
    repo.break_cases("qa-001-login")
    second = run_canary_plan(repo)
    assert [r.verdict for r in second.results] == ["FAIL", "PASS"]
    [lesson] = repo.lessons()
    assert lesson.kind == "caught-regression"
    assert lesson.text == (
        f"Canaries caught a regression: spec qa-001-login passed in run {first.store_run_id} "
        f"and fails in run {second.store_run_id} (composite 0.00 < 0.70; keyword scored 0.00, "
        "below the 0.50 floor every grader must reach: missing keywords 'ok')"
    )
    assert (lesson.tags, lesson.paths) == (
        ("canary", "qa"),
        ("bench/canaries/qa/qa-001-login.yaml",),
    )
    assert lesson.evidence == (second.store_run_id, first.store_run_id, "qa-001-login")

    # the next run recalls it (its spec file): shown, in the result and in the report
    plain = io.StringIO()
    third = run_canary_plan(repo, [PlainDisplay(plain)])
    assert [x.id for x in third.lessons] == [lesson.id]
    head, line = plain.getvalue().splitlines()[:2]
    assert head == "Lessons recalled:"
    assert line == f"  #{lesson.id} caught-regression {lesson.text[:199]}…"  # cut at 200
    report = render_markdown(third, results_path=None, date="2026-04-13")
    assert f"### Lessons recalled\n\n- #{lesson.id} caught-regression: {lesson.text}" in report
    page = render_html(third)
    assert '<h2 id="lessons">Lessons recalled</h2>' in page
    assert f"<li><code>#{lesson.id}</code> caught-regression: Canaries caught" in page
    assert "Lessons recalled" not in render_markdown(first, results_path=None, date="x")
    assert len(repo.lessons()) == 1  # run 3 failed what run 2 failed: nothing new


# -- calibration --------------------------------------------------------------------------------


def item(n: int, *, good: bool, humans: str) -> dict[str, Any]:
    return {
        "id": f"item-{n:02d}",
        "prompt": f"Answer question {n}.",
        "output": f"ANSWER-{'GOOD' if good else 'BAD'}-{n}",
        "criteria": {"correct": "the answer is right"},
        "labels": [{"labeller": "ann", "verdict": humans}],
        "split": "heldout",
    }


def test_calibration_disagreements_become_lessons_once(repo: Repo) -> None:
    items = [
        item(1, good=True, humans="pass"),
        item(2, good=True, humans="fail"),  # the judge passes what the humans failed
        item(3, good=False, humans="fail"),
        item(4, good=True, humans="fail"),
        item(5, good=False, humans="pass"),  # the judge fails what the humans passed
        item(6, good=True, humans="unsure"),  # left out
    ]
    path = repo.root / "labels" / "correctness.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    config = load_config(repo.root, providers=provider_settings())

    def run() -> tuple[int, ...]:
        store = repo.store()
        try:
            outcome = anyio.run(
                partial(
                    calibrate, config, load_labels(path), store=store, judge="Judge", reruns=1,
                    cache=False, verbosity=False,
                )
            )  # fmt: skip
        finally:
            store.close()
        assert outcome.record["confusion"] == {"tp": 1, "fp": 2, "tn": 1, "fn": 1}
        return outcome.lessons

    first = run()
    false_pass, false_block = repo.lessons()
    assert first == (false_pass.id, false_block.id)
    assert false_pass.kind == "judge-false-positive"
    assert false_pass.text == (
        "Judge 'Judge' passed 2 cases the humans failed in labels/correctness.jsonl: "
        "item-02, item-04"
    )
    assert false_block.kind == "judge-false-negative"
    assert false_block.text == (
        "Judge 'Judge' failed 1 case the humans passed in labels/correctness.jsonl: item-05"
    )
    sha = load_labels(path).sha256
    assert false_pass.evidence == (f"labels {sha}", "item-02", "item-04")
    assert false_block.evidence == (f"labels {sha}", "item-05")
    assert false_pass.paths == false_block.paths == ("labels/correctness.jsonl",)
    assert false_pass.tags[0] == "Judge" and false_pass.tags[2] == "judge"
    assert false_pass.tags[1].startswith("sha256:")  # the judge's identity key

    # the same judge on the same labels, disagreeing the same way: no second lesson
    assert run() == first
    assert len(repo.lessons()) == 2
