"""Pipeline evals (seed 003): stage real diffs, run isolated roles in order, grade, aggregate.

For each eval the fixture is staged as a real git repository (``review.staging``) and the
pipeline's roles run in order (resolver → reviewer → grader by default). A role's prompt is
built **only** from the inputs the pipeline declares for it, so the harness, not discipline,
keeps the assertions away from the agents under test and the fixture away from the grader.
Before any call, the eval's framing and spec are linted for leaks of the assertions, the trap
and the description; every prompt to a role other than the grader is linted again just before
it is sent. A leak is an error naming the eval, the role and the phrase, and nothing leaked is
sent. Every call is recorded (role, agent, inputs, the prompt, the answer), so an audit can see
exactly what each role saw.

The grader answers per assertion ``pass | fail | partial`` with a reason, as JSON; an unusable
answer is asked once more, as for the judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import anyio

from coalmine._util.clock import Clock, SystemClock
from coalmine._util.files import write_new_file
from coalmine._util.hashing import hash_text
from coalmine._util.markdown import md_code, md_text
from coalmine._util.secrets import redact
from coalmine.config import AgentConfig, Config
from coalmine.engine.call import Caller
from coalmine.engine.execute import periodically, run_bounded
from coalmine.engine.grading import judge_fn_for
from coalmine.engine.wiring import (
    Wiring,
    coalmine_version,
    ending_run,
    require_variables,
    secret_values,
    start_run_record,
)
from coalmine.errors import CoalmineError, ConfigError, GradeError, ProviderError
from coalmine.graders.base import GradeContext
from coalmine.graders.llm_judge import ask_judge, first_json_object
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.review.layout import Pipeline, ReviewEval, ReviewSet
from coalmine.review.leakage import Leak, find_leaks
from coalmine.review.staging import StagedEval, stage_all
from coalmine.store.evals import (
    Attempt,
    AttemptWriter,
    attempt_records,
    end_run,
    prior_runs,
    save_suite_summary,
)
from coalmine.store.runs import Store

Verdict = Literal["pass", "fail", "partial"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "partial")
SCORES = {"pass": 1.0, "partial": 0.5, "fail": 0.0}
SUITE = "review"
"""How review runs name their rows in the store (one row per eval, sample and reviewer)."""


class LeakError(CoalmineError):
    """Grading text reached a prompt it must never reach."""

    exit_code = 2

    def __init__(self, eval_name: str, leaks: Sequence[Leak]):
        self.leaks = list(leaks)
        shown = "; ".join(str(leak) for leak in leaks[:3])
        super().__init__(f"eval {eval_name!r}: {shown}")


@dataclass
class RoleCall:
    """One role's call: what it was given and what it answered (the audit record)."""

    role: str
    agent: str
    inputs: list[str]
    prompt: str
    output: str | None = None
    error: str | None = None


@dataclass
class Graded:
    """The grader's verdict on one assertion."""

    id: str
    verdict: Verdict
    reason: str


@dataclass
class EvalRun:
    """One run of the pipeline on one eval (one sample, one reviewer)."""

    eval: ReviewEval
    sample: int
    variant: str | None
    calls: list[RoleCall] = field(default_factory=list)
    grades: list[Graded] = field(default_factory=list)
    error: str | None = None

    @property
    def key(self) -> str:
        """The row's case id: the eval, and the reviewer when several are compared."""
        return self.eval.name if self.variant is None else f"{self.eval.name}@{self.variant}"


@dataclass
class ReviewOutcome:
    """What a review run produced."""

    run_id: str
    runs: list[EvalRun]
    regressions: list[str]
    note_path: Path | None
    exit_code: int
    stage_dir: Path | None = None


# -- prompts -----------------------------------------------------------------------------------

GRADER_INTRO = (
    "Grade the following artifacts against the listed assertions. Grade only from the outputs "
    "below: you are not given the fixture files or the worktree, and you must not assume what "
    "they contain. Assertions whose target is the resolver are graded against the resolver's "
    "output, those whose target is the reviewer against the reviewer's output, 'both' against "
    "both. For each assertion answer pass (fully met), partial (partly met) or fail, with a "
    "reason."
)


def grader_answer_form(ev: ReviewEval) -> str:
    """The JSON the grader must answer with, one entry per assertion."""
    form = {a.id: {"verdict": "pass | fail | partial", "reason": "…"} for a in ev.assertions}
    return json.dumps({"assertions": form}, ensure_ascii=False)


def build_prompt(
    name: str, pipeline: Pipeline, ev: ReviewEval, staged: StagedEval, outputs: Mapping[str, str]
) -> str:
    """The prompt of role ``name``: its declared inputs, and nothing else."""
    role = pipeline.roles[name]
    grader = name == pipeline.grader
    parts = [GRADER_INTRO if grader else f"You are the {name} of a code review. Follow your "
             "agent instructions."]  # fmt: skip
    for item in role.inputs:
        if item == "diff":
            parts.append(f"Diff (git diff --cached):\n---\n{staged.diff}\n---")
        elif item == "file_list":
            parts.append("Files (git diff --cached --name-only):\n---\n"
                         + "\n".join(staged.file_list) + "\n---")  # fmt: skip
        elif item == "worktree":
            parts.append(f"Worktree root: {staged.worktree}")
        elif item == "prompt":
            parts.append(f"Context from the requester:\n---\n{ev.prompt}\n---")
        elif item == "spec":
            if ev.spec:
                parts.append(f"Spec context:\n---\n{ev.spec}\n---")
        elif item == "assertions":
            listed = "\n".join(f"- [{a.id}] ({a.target}) {a.text}" for a in ev.assertions)
            parts.append(f"Assertions:\n{listed}")
        else:  # an earlier role's output
            parts.append(f"{item.capitalize()} output:\n---\n{outputs[item]}\n---")
    if grader:
        parts.append(
            "Answer with one JSON object and nothing else, in this form:\n" + grader_answer_form(ev)
        )
    return "\n\n".join(parts) + "\n"


def secrets_of(ev: ReviewEval) -> dict[str, str]:
    """The grading text no role but the grader may see: assertions, trap, description."""
    found = {f"assertion {a.id}": a.text for a in ev.assertions}
    if ev.trap:
        found["trap"] = ev.trap
    if ev.description:
        found["description"] = ev.description
    return found


def lint_framing(ev: ReviewEval) -> list[Leak]:
    """Leaks into the eval's own framing prompt and spec (checked before any call)."""
    prompts = {"framing": ev.prompt, **({"spec": ev.spec} if ev.spec else {})}
    return find_leaks(secrets_of(ev), prompts)


def parse_grades(ev: ReviewEval, reply: str) -> list[Graded]:
    """Read the grader's JSON; ``ValueError`` saying what is wrong when it is unusable."""
    data = first_json_object(reply)
    if data is None or not isinstance(data.get("assertions"), dict):
        raise ValueError('the reply holds no JSON object with an "assertions" mapping')
    block = data["assertions"]
    grades, problems = [], []
    for a in ev.assertions:
        entry = block.get(a.id)
        verdict = entry.get("verdict") if isinstance(entry, dict) else entry
        if verdict not in VERDICTS:
            problems.append(f"assertion {a.id!r}: verdict {verdict!r} is not pass, fail or partial")
            continue
        reason = entry.get("reason") if isinstance(entry, dict) else None
        grades.append(Graded(a.id, verdict, str(reason or "")))
    if problems:
        raise ValueError("; ".join(problems))
    return grades


# -- running -----------------------------------------------------------------------------------


async def run_review(
    review: ReviewSet,
    config: Config,
    *,
    store: Store,
    jobs: int = 4,
    samples: int = 1,
    models: Sequence[str] = (),
    keep: bool = False,
    clock: Clock | None = None,
    command_line: Sequence[str] = (),
    notes_dir: Path | None = None,
) -> ReviewOutcome:
    """Stage every eval, run its pipeline, store, aggregate, write the session note.

    Each eval runs ``samples`` times, and under each agent of ``models`` as the reviewer.

    Raises:
        LeakError: grading text is in an eval's framing or spec (nothing was called).
        ConfigError: a role's agent is not configured, or lacks an environment variable.
    """
    clock = clock or SystemClock()
    pipeline = review.pipeline
    for ev in review.evals:
        leaks = lint_framing(ev)
        if leaks:
            raise LeakError(ev.name, leaks)
    agents = _agents(config, pipeline, models)
    require_variables(agents.values())
    secrets = tuple(secret_values(config))
    wiring = Wiring(None, secrets, None, None)
    callers = {name: wiring.caller(agent) for name, agent in agents.items()}
    reviewer = _reviewer_role(pipeline)
    variants: list[str | None] = list(models) if models else [None]
    started = clock.now()
    run_id = start_run_record(
        store, "review", config, started, command_line, [e.name for e in review.evals],
        {"samples": samples, "models": list(models), "jobs": jobs},
    )  # fmt: skip
    with ending_run(store, run_id, kind="review", clock=clock, secrets=secrets):
        writer = AttemptWriter(store, run_id)
        runs: list[EvalRun] = []
        stage_dir = None
        try:
            with stage_all(review.evals, keep=keep) as (stage_dir, staged):
                items = [
                    EvalRun(ev, sample, variant)
                    for ev in review.evals
                    for variant in variants
                    for sample in range(samples)
                ]

                async def work(_: int, run: EvalRun) -> None:
                    await _run_pipeline(
                        run, pipeline, staged[run.eval.name], callers, reviewer,
                        timeout=config.defaults.timeout_seconds,
                        judge_timeout=config.defaults.judge_timeout_seconds,
                        secrets=list(secrets),
                    )  # fmt: skip
                    writer.add(_attempt(run, list(secrets)))
                    runs.append(run)

                async with periodically(writer.flush, every=writer.interval):
                    await run_bounded(items, work, jobs=jobs)
        finally:
            with anyio.CancelScope(shield=True):
                for caller in callers.values():
                    await caller.provider.aclose()
        runs.sort(key=lambda r: (r.eval.name, r.variant or "", r.sample))
        regressions = find_regressions(store, run_id, runs)
        save_suite_summary(
            store, run_id, SUITE,
            {"table": render_table(runs), "regressions": regressions,
             "pass_rates": {f"{k} {a}": v.count("pass") / len(v)
                            for (k, a), v in sorted(_verdicts_by_key(runs).items())}},
        )  # fmt: skip
        note = None
        if notes_dir is not None:
            note = write_note(notes_dir, runs, regressions, run_id=run_id, started=started,
                              pipeline=pipeline, agents=agents, config=config)  # fmt: skip
        shown = None  # the note, as the run names it (`coalmine view` shows it beside the run)
        if note is not None:
            shown = str(note.relative_to(config.root) if note.is_relative_to(config.root) else note)
        end_run(store, run_id, status="finished", ended_at=clock.now(), results_file=shown)
        failed = any(r.error or any(g.verdict != "pass" for g in r.grades) for r in runs)
        return ReviewOutcome(run_id, runs, regressions, note, 1 if failed else 0,
                             stage_dir if keep else None)  # fmt: skip


def _reviewer_role(pipeline: Pipeline) -> str | None:
    """The role ``--models`` swaps: ``reviewer``, else the last role before the grader."""
    if "reviewer" in pipeline.roles:
        return "reviewer"
    others = [name for name in pipeline.roles if name != pipeline.grader]
    return others[-1] if others else None


def _agents(config: Config, pipeline: Pipeline, models: Sequence[str]) -> dict[str, AgentConfig]:
    names = {role.agent for role in pipeline.roles.values()} | set(models)
    missing = sorted(n for n in names if n not in config.agents)
    if missing:
        raise ConfigError(
            f"the review pipeline names agents the config does not define: {', '.join(missing)}"
            f" (agents: {', '.join(config.agents) or 'none'})",
            path=config.path,
        )
    return {n: config.agents[n] for n in names}


async def _run_pipeline(
    run: EvalRun,
    pipeline: Pipeline,
    staged: StagedEval,
    callers: Mapping[str, Caller],
    reviewer: str | None,
    *,
    timeout: float,
    judge_timeout: float,
    secrets: list[str],
) -> None:
    ev = run.eval
    outputs: dict[str, str] = {}
    hidden = secrets_of(ev)
    for name, role in pipeline.roles.items():
        agent = run.variant if (run.variant and name == reviewer) else role.agent
        caller = callers[agent]
        prompt = build_prompt(name, pipeline, ev, staged, outputs)
        call = RoleCall(name, agent, list(role.inputs), redact(prompt, secrets))
        run.calls.append(call)
        context = CallContext(ev.name, agent, f"review:{name}")
        if name == pipeline.grader:
            ctx = GradeContext(case_id=ev.name, prompt="", judge=judge_fn_for(
                caller, context, judge_timeout, repeat=run.sample))  # fmt: skip
            try:
                answer = await ask_judge(ctx, prompt, lambda text: parse_grades(ev, text),
                                         grader="review-grader")  # fmt: skip
            except GradeError as exc:
                call.error = run.error = redact(f"{name}: {exc.reason}", secrets)
                return
            # a reason may quote what an agent echoed (its env): the table and notes show it
            run.grades = [replace(g, reason=redact(g.reason, secrets)) for g in answer.verdict]
            call.output = json.dumps(
                {g.id: {"verdict": g.verdict, "reason": g.reason} for g in run.grades}
            )
            continue
        leaks = find_leaks(hidden, {name: prompt})
        if leaks:  # an earlier output carried grading text: never send it
            call.error = run.error = str(LeakError(ev.name, leaks))
            return
        try:
            called = await caller.call(AgentRequest(prompt, context, timeout), timeout,
                                       repeat=run.sample)  # fmt: skip
        except ProviderError as exc:  # scrubbed by the caller
            call.error = run.error = f"{name}: {exc}"
            return
        outputs[name] = called.output.text
        call.output = redact(called.output.text, secrets)


def _attempt(run: EvalRun, secrets: list[str]) -> Attempt:
    values = [SCORES[g.verdict] for g in run.grades]
    scores: dict[str, float | None] = {g.id: SCORES[g.verdict] for g in run.grades}
    status = "error" if run.error else ("pass" if all(g.verdict == "pass" for g in run.grades)
                                        else "fail")  # fmt: skip
    record: dict[str, Any] = {
        "eval": run.eval.name,
        "variant": run.variant,
        "grades": {g.id: {"verdict": g.verdict, "reason": g.reason} for g in run.grades},
        "calls": [
            {
                "role": c.role,
                "agent": c.agent,
                "inputs": c.inputs,
                "prompt": c.prompt,
                "prompt_sha256": hash_text(c.prompt),
                "output": c.output,
                "error": c.error,
            }
            for c in run.calls
        ],  # fmt: skip
    }
    if run.error:
        record["error"] = redact(run.error, secrets)
    return Attempt(
        SUITE, run.key, run.sample, status, status != "pass",
        sum(values) / len(values) if values else None, scores, None, None, None, None,
        "review" if run.error else None, record,
    )  # fmt: skip


# -- aggregating ------------------------------------------------------------------------------


def majority(verdicts: Sequence[str]) -> str:
    """The most common verdict of an assertion over samples (a tie is partial)."""
    counts = {v: verdicts.count(v) for v in VERDICTS}
    best = max(counts.values())
    winners = [v for v in VERDICTS if counts[v] == best]
    return winners[0] if len(winners) == 1 else "partial"


def _verdicts_by_key(runs: Sequence[EvalRun]) -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        for g in run.grades:
            found.setdefault((run.key, g.id), []).append(g.verdict)
    return found


def find_regressions(store: Store, run_id: str, runs: Sequence[EvalRun]) -> list[str]:
    """Assertions that passed in the prior review run of the same evals and do not now."""
    keys = {run.key for run in runs}
    for prior_id in prior_runs(store, "review", run_id):
        before: dict[tuple[str, str], list[str]] = {}
        for case_id, record in attempt_records(store, prior_id, SUITE):
            if case_id in keys:
                for aid, grade in record.get("grades", {}).items():
                    before.setdefault((case_id, aid), []).append(grade["verdict"])
        if not before:
            continue
        now = _verdicts_by_key(runs)
        return [
            f"{key} {aid}: {majority(old)} → {majority(now[(key, aid)])}"
            for (key, aid), old in sorted(before.items())
            if majority(old) == "pass" and (key, aid) in now and majority(now[(key, aid)]) != "pass"
        ]
    return []


def render_table(runs: Sequence[EvalRun]) -> str:
    """The seed's table: ``| Eval | Assertions | Pass | Fail | Partial |`` and a Total row."""
    lines = ["| Eval | Assertions | Pass | Fail | Partial |", "|---|---|---|---|---|"]
    total = {"n": 0, "pass": 0, "fail": 0, "partial": 0}
    keys = sorted({run.key for run in runs})
    verdicts = _verdicts_by_key(runs)
    for key in keys:
        ev = next(r.eval for r in runs if r.key == key)
        ids = [a.id for a in ev.assertions]
        span = f"{ids[0]}–{ids[-1]} ({len(ids)})" if len(ids) > 1 else f"{ids[0]} (1)"
        counts = {"pass": 0, "fail": 0, "partial": 0}
        for aid in ids:
            got = verdicts.get((key, aid))
            counts[majority(got) if got else "fail"] += 1
        errored = any(r.error for r in runs if r.key == key)
        name = md_text(key) + (" ⚠ error" if errored else "")
        lines.append(f"| {name} | {md_text(span)} | {counts['pass']} | {counts['fail']} | "
                     f"{counts['partial']} |")  # fmt: skip
        total["n"] += len(ids)
        for v in counts:
            total[v] += counts[v]
    lines.append(f"| **Total** | {total['n']} | {total['pass']} | {total['fail']} | "
                 f"{total['partial']} |")  # fmt: skip
    return "\n".join(lines)


def render_highlights(runs: Sequence[EvalRun], regressions: Sequence[str]) -> str:
    """Failed and partial assertions with the grader's reasons, errors, and regressions."""
    samples = max((r.sample for r in runs), default=0) + 1
    found: dict[tuple[str, str, bool], list[int]] = {}
    """(eval, what happened, an error?) → the samples it happened in (reruns often fail alike)."""
    for run in runs:
        if run.error:
            what = f": error: {md_text(run.error)}"
            found.setdefault((run.key, what, True), []).append(run.sample)
        for g in run.grades:
            if g.verdict != "pass":
                text = next(a.text for a in run.eval.assertions if a.id == g.id)
                what = f" {md_text(f'{g.id} {g.verdict.upper()}: {text} — {g.reason}')}"
                found.setdefault((run.key, what, False), []).append(run.sample)
    lines = [
        f"- **{md_text(key)}**{_samples(taken, error=error, of=samples)}{what}"
        for (key, what, error), taken in found.items()
    ]
    if samples > 1:
        lines += ["", f"Pass rates over {samples} samples:"]
        for (key, aid), verdicts in sorted(_verdicts_by_key(runs).items()):
            lines.append(f"- {md_text(f'{key} {aid}')}: {verdicts.count('pass')}/{len(verdicts)}")
    if regressions:
        lines += ["", "Regressions since the prior run:", *[f"- {md_text(r)}" for r in regressions]]
    if not any(r.error or any(g.verdict != "pass" for g in r.grades) for r in runs):
        lines.insert(0, "Every assertion passed.")
    return "\n".join(lines).strip()


def _samples(taken: Sequence[int], *, error: bool, of: int) -> str:
    """`` (sample 2)``, `` (samples 1, 3)``, `` (all 3 samples)``; nothing for a lone sample."""
    if of == 1:
        return " (sample 1)" if error else ""
    if len(taken) == of:
        return f" (all {of} samples)"
    numbers = ", ".join(str(n + 1) for n in sorted(taken))
    return f" (sample{'s' if len(taken) > 1 else ''} {numbers})"


def write_note(
    folder: Path,
    runs: Sequence[EvalRun],
    regressions: Sequence[str],
    *,
    run_id: str,
    started: datetime,
    pipeline: Pipeline,
    agents: Mapping[str, AgentConfig],
    config: Config,
) -> Path:
    """Write ``harness-<date>-eval-runs.md`` (``-2``, ``-3`` … on the same day)."""
    date = started.date().isoformat()
    roles = "\n".join(
        f"- {md_text(name)}: {md_text(role.agent)} ({md_text(agents[role.agent].provider)}) ← "
        + md_text(", ".join(role.inputs))
        for name, role in pipeline.roles.items()
    )
    samples = max((r.sample for r in runs), default=0) + 1
    shown = md_code(f"coalmine runs show {run_id}")
    text = (
        f"# Review eval runs — {date}\n\n"
        f"Harness: coalmine {coalmine_version() or 'unknown'} · run {md_code(run_id)} in the run "
        f"store ({shown}) · config {md_text(str(config.path))}\n\n"
        f"Roles (each sees only its inputs):\n{roles}\n\n"
        f"Samples per eval: {samples}\n\n"
        f"{render_table(runs)}\n\n## Highlights\n\n{render_highlights(runs, regressions)}\n"
    )
    return write_new_file(
        folder,
        lambda n: f"harness-{date}-eval-runs{'' if n == 1 else f'-{n}'}.md",
        lambda _: text,
    )
