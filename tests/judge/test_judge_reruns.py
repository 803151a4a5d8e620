"""``--judge-reruns N``: the judge is asked N times, the majority decides, a split is flagged."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable

import anyio
import yaml

from coalmine.engine.grading import grade_with_reruns, unstable_warnings
from coalmine.graders.base import GradeContext, JudgeReply
from coalmine.graders.base import registry as graders
from tests.helpers.openai_server import FakeOpenAI, Received, Reply
from tests.helpers.project import Project


def reply(score: float) -> JudgeReply:
    return JudgeReply(json.dumps({"criteria": {"ok": {"score": score, "reason": "r"}}}), "m")


def grade_with(scores: list[float]):  # type: ignore[no-untyped-def]
    grader = graders.get("llm-judge")
    config = grader.config.model_validate({"criteria": ["ok"]})

    def judge_for(repeat: int):  # type: ignore[no-untyped-def]
        async def ask(prompt: str) -> JudgeReply:
            return reply(scores[repeat])

        return ask

    ctx = GradeContext(case_id="c", prompt="p", judge=judge_for(0))
    return anyio.run(
        lambda: grade_with_reruns(
            grader, config, "out", ctx, reruns=len(scores), judge_for=judge_for
        )
    )


def test_the_majority_decides_and_a_split_is_flagged() -> None:
    # llm-judge passes at 0.7: 1, 0, 1 → two of three pass; lower median of [0, 1, 1] is 1
    grade = grade_with([1.0, 0.0, 1.0])
    assert (grade.passed, grade.score, grade.reruns, grade.spread, grade.unstable) == (
        True, 1.0, [1.0, 0.0, 1.0], 1.0, True,
    )  # fmt: skip
    assert unstable_warnings({"llm-judge": grade}) == [
        "unstable: llm-judge reruns straddle the threshold (scores 1, 0, 1)"
    ]


def test_an_even_split_fails_and_scores_on_the_failing_side() -> None:
    # 0.5 fails, 1 passes: a tie fails; lower median of [0.5, 1] is 0.5
    grade = grade_with([0.5, 1.0])
    assert (grade.passed, grade.score, grade.unstable) == (False, 0.5, True)


def test_agreeing_reruns_are_stable() -> None:
    grade = grade_with([1.0, 1.0, 1.0])
    assert (grade.passed, grade.spread, grade.unstable) == (True, 0.0, None)
    assert unstable_warnings({"llm-judge": grade}) == []


def flaky_judge(calls: Counter[str]) -> Callable[[Received], Reply]:
    """A judge that scores 1, 0, 1, … for the same prompt: its reruns disagree."""
    lock = threading.Lock()

    def flaky(received: Received) -> Reply:
        prompt = received.body["messages"][-1]["content"]
        with lock:
            calls[prompt] += 1
            score = 1 if calls[prompt] % 2 else 0
        return Reply(text=json.dumps({"criteria": {"ok": {"score": score, "reason": "r"}}}))

    return flaky


def test_an_eval_run_counts_its_unstable_cases(project: Project, openai_server: FakeOpenAI) -> None:
    calls: Counter[str] = Counter()
    openai_server.default = flaky_judge(calls)
    judge = {"provider": "openai", "model": "j", "base_url": openai_server.base_url}
    project.write("rerun_agent.py", "def run(prompt, context):\n    return prompt\n")
    agents = {"Bot": {"provider": "python", "target": "rerun_agent:run"}, "J": judge}
    project.config({"agents": agents, "judge": "J"})
    grader = {"type": "llm-judge", "config": {"criteria": ["ok"]}}
    project.write("harness/evals/s.yaml", yaml.safe_dump({"agent": "Bot", "graders": [grader]}))
    project.write("harness/evals/s.jsonl", json.dumps({"id": "a", "prompt": "hello"}) + "\n")
    proc = project.run_cli(
        "eval", "run", "--judge-reruns", "3", "--display", "none", "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    [result] = json.loads(proc.stdout)
    assert (result["passed"], result["unstable"]) == (1, 1)
    assert sum(calls.values()) == 3  # three judge calls for the one case


def test_a_canary_run_flags_an_unstable_judge_grade(
    project: Project, openai_server: FakeOpenAI
) -> None:
    calls: Counter[str] = Counter()
    openai_server.default = flaky_judge(calls)
    argv = project.agent_script("qa", "print('SQL injection found; fixed')")
    judge = {"provider": "openai", "model": "j", "base_url": openai_server.base_url}
    project.config({"agents": {"QA Coordinator": {"provider": "command", "argv": argv},
                               "J": judge}, "judge": "J"})  # fmt: skip
    project.canary("qa-001-x", graders=[{"type": "llm-judge", "config": {"criteria": ["ok"]}}])
    proc = project.run_cli("canary", "run", "--judge-reruns", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [result] = project.last_result()["results"]
    # the three reruns run at once: which one the server saw second is not fixed
    [warning] = result["warnings"]
    assert warning.startswith("unstable: llm-judge reruns straddle the threshold (scores ")
    grade = result["grader_scores"]["llm-judge"]
    assert sorted(grade["reruns"]) == [0.0, 1.0, 1.0] and grade["passed"] is True
