"""What each MCP tool does, with no MCP in it: the same library calls the CLI makes.

Every tool gives an :class:`Answer`: the data (the tool's structured content, JSON) and the
markdown a person would read. The project is fixed when the server starts (``--root``): a tool
takes only names the project's own files give (canary ids, suite names, run references), so
it runs what ``coalmine.yaml`` declares and nothing else. Results come from the store and the
result files, which hold no secret; every answer is scrubbed of the project's secrets once
more before it leaves (:meth:`Desk.scrubbed`), so a secret that reached a file by another road
does not reach the client either.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalmine._util.secrets import redact, redact_data
from coalmine.canary.plan import plan_canaries, require_judge
from coalmine.canary.run import run_canaries
from coalmine.compare import compare_runs
from coalmine.config import Config
from coalmine.engine.events import CaseEnd, EvalProgress, Hooks, RunStart
from coalmine.engine.history import (
    find_store,
    load_run,
    open_store,
    require_project_config,
    tally_run,
)
from coalmine.engine.pairs import load_pair_at
from coalmine.engine.wiring import secret_values
from coalmine.errors import CoalmineError, UsageError
from coalmine.evals.plan import Selection, plan_evals, require_eval_judge
from coalmine.evals.render import render_suites
from coalmine.evals.run import run_evals
from coalmine.harness.drift import harness_status, render_status, status_json
from coalmine.redteam.report import load_findings
from coalmine.redteam.report import render_json as render_redteam_json
from coalmine.redteam.report import render_markdown as render_redteam_markdown
from coalmine.reports.explain import explain_case, markdown_table
from coalmine.reports.json import render_json
from coalmine.reports.markdown import render_comparison, render_markdown
from coalmine.results import CaseResult, format_score
from coalmine.store.evals import suite_results
from coalmine.store.runs import Store

Progress = Callable[[float, float | None, str], Awaitable[None]]
"""``progress(done, total, message)``: how far a run is (an MCP progress notification)."""


@dataclass(frozen=True)
class Answer:
    """A tool's answer: its structured content and the markdown a person reads."""

    data: dict[str, Any]
    markdown: str


class _Reporter(Hooks):
    """A run's events as progress: each finished canary, or the eval counts as they move."""

    def __init__(self, progress: Progress | None):
        self.progress = progress
        self.total: float | None = None

    async def on_run_start(self, event: RunStart) -> None:
        self.total = event.total

    async def on_case_end(self, event: CaseEnd) -> None:
        if self.progress is not None:
            r = event.result
            await self.progress(event.index + 1, event.total, f"{r.verdict} {r.id}")

    async def on_eval_progress(self, event: EvalProgress) -> None:
        if self.progress is not None:
            said = f"{event.passed} passed, {event.failed} failed, {event.errored} errored"
            await self.progress(event.done, event.total, said)


class Desk:
    """One project's coalmine as the MCP tools reach it (its root is fixed at start)."""

    def __init__(self, root: Path, *, store_path: Path | None = None):
        self.root = root.resolve()
        self.store_path = store_path

    # -- canaries ------------------------------------------------------------------------------

    def list_canaries(self) -> Answer:
        """The canaries, the agent each one goes to, and every invalid spec."""
        plan = plan_canaries(self.root)
        canaries: list[dict[str, Any]] = [
            {
                "id": c.loaded.id,
                "phase": c.loaded.spec.phase,
                "title": c.loaded.spec.title,
                "agent": c.agent.name,
                "provider": c.agent.provider,
                "graders": [g.type for g in c.loaded.spec.expected.graders],
                "timeout_seconds": c.timeout,
            }
            for c in plan.canaries
        ]
        invalid = [{"id": i.spec_id, "reason": i.reason} for i in plan.invalid]
        judge = plan.config.judge
        rows: list[list[object]] = [["id", "phase", "agent", "graders"]]
        rows += [[c["id"], c["phase"], c["agent"], ", ".join(c["graders"])] for c in canaries]
        text = f"{len(canaries)} canaries, {len(invalid)} invalid\n\n{markdown_table(rows)}"
        text += "".join(f"\n\ninvalid {i['id'] or ''}: {i['reason']}" for i in invalid)
        data = {
            "canaries": canaries,
            "invalid": invalid,
            "judge": judge.name if judge else plan.config.judge_mode,
        }
        return self.scrubbed(Answer(data, text), plan.config)

    async def run_canaries(
        self,
        selectors: Sequence[str] = (),
        *,
        no_judge: bool = False,
        progress: Progress | None = None,
    ) -> Answer:
        """Run every canary, or those the selectors name (``qa-001`` runs ``qa-001-…``)."""
        config = require_project_config(self.root)
        store = Store.open(self.store_path or config.store_path)
        try:
            plan = plan_canaries(self.root, selectors=tuple(selectors), config=config)
            if not plan.canaries and selectors:
                raise UsageError(f"no canary matches {', '.join(selectors)}")
            require_judge(plan, disabled=no_judge)
            outcome = await run_canaries(
                plan, store=store, no_judge=no_judge, hooks=[_Reporter(progress)],
                command_line=["coalmine", "mcp", "run_canaries", *selectors],
            )  # fmt: skip
        finally:
            store.close()
        run = outcome.run
        path = self._shown(outcome.results_path)
        text = render_markdown(run, results_path=Path(path) if path else None,
                               date=run.timestamp[:10])  # fmt: skip
        data = {
            "run_id": run.store_run_id,
            "exit_code": outcome.exit_code,
            "results_path": path,
            "run": json.loads(render_json(run)),
        }
        return self.scrubbed(Answer(data, text), config)

    # -- eval suites ---------------------------------------------------------------------------

    def list_suites(self) -> Answer:
        """The eval suites: cases, bad lines, repeats, default agent, whether they block."""
        plan = plan_evals(self.root)
        suites: list[dict[str, Any]] = [
            {
                "name": s.name,
                "path": self._shown(s.index.path),
                "cases": len(s.index),
                "bad_lines": [str(b) for b in s.index.bad],
                "repeats": s.repeats,
                "agent": s.default_agent.name if s.default_agent else None,
                "blocking": s.index.meta.blocking,
            }
            for s in plan.suites
        ]
        broken = [{"path": self._shown(b.path), "message": b.message} for b in plan.broken]
        rows: list[list[object]] = [["suite", "cases", "bad lines", "repeats", "agent", "blocks"]]
        rows += [
            [s["name"], s["cases"], len(s["bad_lines"]), s["repeats"], s["agent"] or "per case",
             "yes" if s["blocking"] else "no"]
            for s in suites
        ]  # fmt: skip
        text = markdown_table(rows) if suites else "no eval suites (harness/evals/*.jsonl)"
        text += "".join(f"\n\nnot read: {b['message']}" for b in broken)
        return self.scrubbed(Answer({"suites": suites, "broken": broken}, text), plan.config)

    async def run_evals(
        self,
        suites: Sequence[str] = (),
        *,
        filters: Sequence[str] = (),
        limit: int | None = None,
        no_judge: bool = False,
        progress: Progress | None = None,
    ) -> Answer:
        """Run the eval suites (all, or those named); a cancelled run is kept, resumable."""
        config = require_project_config(self.root)
        store = Store.open(self.store_path or config.store_path)
        try:
            selection = Selection(tuple(filters), limit)
            plan = plan_evals(self.root, tuple(suites), selection=selection, config=config)
            require_eval_judge(plan, disabled=no_judge)
            outcome = await run_evals(
                plan, store=store, no_judge=no_judge, hooks=[_Reporter(progress)],
                command_line=["coalmine", "mcp", "run_evals", *suites],
            )  # fmt: skip
        finally:
            store.close()
        text = render_suites(outcome.suites, root=self.root)
        bad = [str(b) for s in plan.suites for b in s.index.bad]
        text += "".join(f"\nerror: {b.message}" for b in plan.broken)
        text += "".join(f"\nbad line: {b}" for b in bad[:20])
        data = {
            "run_id": outcome.run_id,
            "exit_code": outcome.exit_code,
            "interrupted": outcome.interrupted,
            "suites": [r.model_dump(mode="json", by_alias=True) for r in outcome.suites],
            "bad_lines": bad,
            "broken": [b.message for b in plan.broken],
        }
        return self.scrubbed(Answer(data, text), config)

    # -- the store -----------------------------------------------------------------------------

    def list_runs(self, limit: int = 20) -> Answer:
        """The newest runs: id, kind, label, status, passed of total, score, commit."""
        store = self._store()
        try:
            runs: list[dict[str, Any]] = []
            for info in store.list_runs(limit=max(1, limit)):
                tally = tally_run(store, info)
                runs.append(
                    {
                        "id": info.id, "kind": info.kind, "label": info.label,
                        "started_at": info.started_at, "status": info.status,
                        "passed": tally.passed, "total": tally.total, "score": tally.score,
                        "commit": info.git_commit, "dirty": info.git_dirty,
                    }
                )  # fmt: skip
        finally:
            store.close()
        rows: list[list[object]] = [["id", "kind", "started", "status", "passed", "score"]]
        rows += [
            [r["id"], r["kind"], r["started_at"][:19].replace("T", " "), r["status"],
             f"{'?' if r['passed'] is None else r['passed']}/{r['total']}",
             format_score(r["score"]) if r["score"] is not None else "—"]
            for r in runs
        ]  # fmt: skip
        text = markdown_table(rows) if runs else "no runs recorded yet"
        return self.scrubbed(Answer({"runs": runs}, text))

    def show_run(self, run: str) -> Answer:
        """A run as it was printed (``latest``, an id, an id prefix or a label)."""
        store = self._store()
        try:
            info = store.get_run(run)
            record = load_run(store, info.id)
            suites = suite_results(store, info.id) if info.kind == "eval" else []
        finally:
            store.close()
        if suites:
            text = render_suites(suites, root=Path(info.root))
        else:
            text = render_markdown(record, results_path=None, date=record.timestamp[:10])
        if info.error:
            text = f"run {info.id} stopped on an error: {info.error.splitlines()[0]}\n\n" + text
        data = {
            "id": info.id, "kind": info.kind, "status": info.status, "label": info.label,
            "run": json.loads(render_json(record)),
        }  # fmt: skip
        return self.scrubbed(Answer(data, text))

    def explain_failure(self, run: str, case: str) -> Answer:
        """Why one case of a run failed: its verdict, each grader's word, the output."""
        store = self._store()
        try:
            record = load_run(store, store.get_run(run).id)
        finally:
            store.close()
        result = _find_case(record.results, case)
        data = result.model_dump(mode="json", exclude_none=True)
        answer = Answer({"run_id": record.store_run_id, "case": data}, explain_case(result))
        return self.scrubbed(answer)

    def compare_runs(self, base: str, new: str) -> Answer:
        """What changed from ``base`` to ``new``: regressions, fixes, score deltas."""
        comparison = compare_runs(*load_pair_at(self.root, base, new, path=self.store_path))
        data = dataclasses.asdict(comparison)
        data["regressed"] = bool(comparison.regressions)
        return self.scrubbed(Answer(data, render_comparison(comparison)))

    def kits_status(self) -> Answer:
        """How the harness drifted since its kits were adopted."""
        store = find_store(self.root, path=self.store_path)
        try:
            status = harness_status(self.root, store)
        finally:
            if store is not None:
                store.close()
        return self.scrubbed(Answer(status_json(status), render_status(status)))

    def redteam_report(self, run: str = "latest") -> Answer:
        """A run's red-team findings, grouped as ``coalmine redteam report`` groups them."""
        store = self._store()
        try:
            found = load_findings(store, run)
        finally:
            store.close()
        data = json.loads(render_redteam_json(found))
        return self.scrubbed(Answer(data, render_redteam_markdown(found)))

    # -- helpers -------------------------------------------------------------------------------

    def _store(self) -> Store:
        return open_store(self.root, path=self.store_path, create="never")

    def _shown(self, path: Path | None) -> str | None:
        """A path relative to the project (what a client can use with its own root)."""
        if path is None:
            return None
        try:
            return str(path.resolve().relative_to(self.root))
        except ValueError:
            return str(path)

    def scrubbed(self, answer: Answer, config: Config | None = None) -> Answer:
        """``answer`` with every secret of the project's environment scrubbed, once more."""
        if config is None:
            try:
                config = require_project_config(self.root)
            except CoalmineError:  # no config, or one that cannot load: no secret it names
                return answer
        secrets = list(secret_values(config))
        if not secrets:
            return answer
        return Answer(redact_data(answer.data, secrets), redact(answer.markdown, secrets))


def _find_case(results: Sequence[CaseResult], case: str) -> CaseResult:
    """The result whose id is ``case``, or ends with ``/case`` (an eval run's ``suite/case``).

    Raises:
        UsageError: no case has it, or several do (the message lists them).
    """
    exact = [r for r in results if r.id == case]
    found = exact or [r for r in results if r.id.endswith(f"/{case}")]
    if len(found) == 1:
        return found[0]
    if found:
        raise UsageError(f"{case!r} names several cases: {', '.join(r.id for r in found)}")
    failing = [r.id for r in results if r.verdict != "PASS"][:20]
    hint = f"; its failing cases: {', '.join(failing)}" if failing else "; every case passed"
    raise UsageError(f"the run has no case {case!r}{hint}")
