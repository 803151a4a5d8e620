"""``coalmine judge calibrate|check|report|redteam|label``: judges that come with evidence."""

from __future__ import annotations

import json
import os
import sys
from functools import partial
from pathlib import Path

import anyio
import click

from coalmine._util.files import write_file
from coalmine.backends.shards import Backend
from coalmine.cli.options import (
    address_option,
    backend_option,
    root_option,
    store_option,
    workers_option,
)
from coalmine.engine.grading import judge_fn_for
from coalmine.engine.history import open_store, project_config
from coalmine.engine.wiring import Wiring, secret_values
from coalmine.errors import ConfigError, UsageError
from coalmine.judge.calibrate import calibrate
from coalmine.judge.drift import DEFAULT_ANCHORS, check_judge
from coalmine.judge.labelling import Asked, Draft, LabelFile, plan_labelling, run_candidates
from coalmine.judge.labels import Verdict, load_labels
from coalmine.judge.rates import calibration_sets, labels_of, rate_in_words, stored_rates
from coalmine.judge.redteam import RedTeamReport, gate_failure, load_pack, run_redteam
from coalmine.judge.render import render_calibration, render_check
from coalmine.judge.wanted import describe_wanted, find_wanted, offer_first
from coalmine.providers.base import CallContext
from coalmine.reports.calibration import render_calibrations_html
from coalmine.store.runs import Store


@click.group("judge")
def judge_group() -> None:
    """Label outputs, calibrate the judge against the labels, report it, test it on injections."""


_format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A table, or the record as JSON.",
)


@judge_group.command("calibrate")
@click.argument("labels", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@root_option
@store_option
@click.option("--judge", "judge_name", help="The agent to calibrate (default: the config's judge).")
@click.option(
    "--reruns", type=click.IntRange(min=1), default=3, show_default=True,
    help="Judge each item this many times (rerun stability).",
)  # fmt: skip
@click.option("--quorum", help="Other agents that judge each item too, comma-separated.")
@click.option(
    "--concurrency", "-c", type=click.IntRange(min=1), default=8, show_default=True,
    help="Judge calls in flight at once.",
)  # fmt: skip
@click.option("--no-cache", is_flag=True, help="Ask the judge again instead of the cache.")
@click.option(
    "--no-verbosity-check", is_flag=True,
    help="Skip asking about each held-out output padded with filler.",
)  # fmt: skip
@_format_option
@workers_option
@backend_option
@address_option
def calibrate_command(
    labels: Path,
    root: Path,
    store_path: Path | None,
    judge_name: str | None,
    reruns: int,
    quorum: str | None,
    concurrency: int,
    no_cache: bool,
    no_verbosity_check: bool,
    fmt: str,
    workers: int | None,
    backend: str,
    address: str | None,
) -> int:
    """Judge every item of LABELS (JSONL), compare with the humans, store the record.

    With --workers N (or --backend ray) the items are judged on N engines, afresh (the cache is
    the store's). Exit 0 when the judge may block, 1 when it stays advisory, 2 on bad input.
    """
    config = project_config(root)
    label_set = load_labels(labels)
    for bad in label_set.bad:
        click.echo(f"error: {bad}", err=True)
    if not label_set.items:
        raise UsageError(f"{labels}: no valid labelled item")
    names = [n.strip() for n in (quorum or "").split(",") if n.strip()]
    count, where = calibration_backend(workers, backend, address, config.root)
    store = Store.open(store_path or config.store_path)
    try:
        outcome = anyio.run(
            partial(
                calibrate, config, label_set, store=store, judge=judge_name, reruns=reruns,
                quorum=names, concurrency=concurrency, cache=not no_cache,
                verbosity=not no_verbosity_check, workers=count, backend=where,
            )
        )  # fmt: skip
    finally:
        store.close()
    record = {**outcome.record, "id": outcome.calibration_id}
    if fmt == "json":
        click.echo(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        click.echo(render_calibration(record))
    if label_set.bad:
        return 2
    return 0 if record["may_block"] else 1


def calibration_backend(
    workers: int | None, backend: str, address: str | None, root: Path
) -> tuple[int, Backend | None]:
    """How many engines a calibration gets (1 unless asked), and on what."""
    if address is not None and backend != "ray":
        raise UsageError("--address names a Ray cluster: it goes with --backend ray")
    if backend == "ray":
        from coalmine.backends.ray import ray_workers

        workers, capped = ray_workers(workers, address, root)
        if capped:
            click.echo(f"note: {capped}", err=True)
        return workers, Backend("ray", address, root)
    if not workers or workers <= 1:
        return 1, None
    from coalmine.backends.processes import spawn_workers
    from coalmine.judge.shard import ENGINE

    names = [f"worker {n + 1}" for n in range(1, workers)]
    return workers, Backend(spawned=spawn_workers(ENGINE, names))


@judge_group.command("report")
@root_option
@store_option
@click.option("--judge", "judge_name", help="Only this agent's calibrations.")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the calibrations as an HTML page here.",
)  # fmt: skip
@_format_option
def report_command(
    root: Path, store_path: Path | None, judge_name: str | None, html_path: Path | None, fmt: str
) -> int:
    """Show the newest calibration of each judge (or of --judge): figures and intervals."""
    store = open_store(root, path=store_path)
    try:
        rows = store.newest_calibrations()
    finally:
        store.close()
    newest = {
        calibration_id: {**record, "id": calibration_id}
        for calibration_id, record in rows
        if judge_name is None or (record.get("judge") or {}).get("agent") == judge_name
    }
    if not newest:
        click.echo("no calibration recorded yet: run 'coalmine judge calibrate LABELS.jsonl'")
        return 0
    if fmt == "json":
        click.echo(json.dumps(list(newest.values()), indent=2, ensure_ascii=False))
    else:
        click.echo("\n\n".join(render_calibration(r) for r in newest.values()))
    if html_path is not None:
        write_file(html_path, render_calibrations_html(list(newest.values())))
    return 0


@judge_group.command("rate")
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--labels", "label_paths", multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A calibration set with people's labels of RUN's cases (repeatable; default: the sets "
    "the judge's calibrations were made from).",
)  # fmt: skip
@root_option
@store_option
@_format_option
def rate_command(
    run_ref: str, label_paths: tuple[Path, ...], root: Path, store_path: Path | None, fmt: str
) -> int:
    """Each judge grader's pass rate over RUN's suites, corrected by people's labels (PPI).

    A label counts when it is about the output RUN gave (label a run with 'coalmine judge label
    RUN'). Below two labelled cases the rate is the judge's, uncorrected, and says so.
    """
    config = project_config(root)
    store = open_store(root, path=store_path)
    try:
        info = store.get_run(run_ref, kind="eval")
        paths = list(label_paths) or calibration_sets(
            store, config.judge.name if config and config.judge else None, root
        )
        rates = stored_rates(store, info.id, labels_of(paths))
    finally:
        store.close()
    if fmt == "json":
        payload = [
            {"suite": suite, **r.model_dump(mode="json", by_alias=True)} for suite, r in rates
        ]
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    elif not rates:
        click.echo(f"run {info.id} has no suite a judge graded")
    else:
        click.echo("\n".join(line for suite, r in rates for line in rate_in_words(suite, r)))
    return 0


@judge_group.command("check")
@click.argument(
    "labels", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@root_option
@store_option
@click.option("--judge", "judge_name", help="The agent to check (default: the config's judge).")
@click.option(
    "--anchors", type=click.IntRange(20, 50), default=DEFAULT_ANCHORS, show_default=True,
    help="Held-out items to ask again (fewer when the set has fewer).",
)  # fmt: skip
@click.option(
    "--reruns", type=click.IntRange(min=1), default=1, show_default=True,
    help="Ask about each anchor this many times (the majority decides).",
)  # fmt: skip
@click.option(
    "--concurrency", "-c", type=click.IntRange(min=1), default=8, show_default=True,
    help="Judge calls in flight at once.",
)  # fmt: skip
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
    help="A table, or the report as JSON.",
)  # fmt: skip
def check_command(
    labels: Path | None,
    root: Path,
    store_path: Path | None,
    judge_name: str | None,
    anchors: int,
    reruns: int,
    concurrency: int,
    fmt: str,
) -> int:
    """Ask a calibrated judge again about anchor items of its set: has it drifted?

    The anchors are held-out items of LABELS (default: the set its newest calibration names),
    stratified by the human verdict and the same on every check of one judge. The judge is
    asked afresh, not from the cache. It has drifted when its agreement with the humans falls
    under the lower end of its calibration's 95% agreement interval, or another model answers
    now: the drift is stored (runs then treat the judge as advisory until it is calibrated
    again) and kept as a lesson. Exit 0 steady, 1 drifted, 2 on bad input.
    """
    config = project_config(root)
    label_set = None
    if labels is not None:
        label_set = load_labels(labels)
        for bad in label_set.bad:
            click.echo(f"warning: {bad} (the line is left out)", err=True)
    store = Store.open(store_path or config.store_path)
    try:
        report = anyio.run(
            partial(
                check_judge, config, store=store, judge=judge_name, labels=label_set,
                anchors=anchors, reruns=reruns, concurrency=concurrency,
            )
        )  # fmt: skip
    finally:
        store.close()
    found = report.as_dict()
    if fmt == "json":
        click.echo(json.dumps(found, indent=2, ensure_ascii=False))
    else:
        click.echo(render_check(found))
    return 1 if report.drifted else 0


@judge_group.command("redteam")
@root_option
@click.option("--judge", "judge_name", help="The agent to test (default: the config's judge).")
@click.option(
    "--pack", type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A red-team pack (JSONL) instead of the built-in one.",
)  # fmt: skip
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=8, show_default=True)
@click.option(
    "--min-containment",
    type=click.FloatRange(0, 1),
    default=0.9,
    show_default=True,
    help="Exit 1 when the containment rate is below this (0: report only).",
)
@_format_option
def redteam_command(
    root: Path,
    judge_name: str | None,
    pack: Path | None,
    concurrency: int,
    min_containment: float,
    fmt: str,
) -> int:
    """Send outputs that try to talk the judge into passing them; report the containment.

    Every response of the pack is bad. The baseline rate is the share of clean responses the
    judge failed. A case is contained when the judge failed its clean response and failed its
    attack too, with a score no higher: so a judge that passes everything contains nothing.
    Errors count as not contained. Exit 1 when containment is below --min-containment.
    """
    config = project_config(root)
    agent = config.agents.get(judge_name) if judge_name else config.judge
    if agent is None:
        raise ConfigError("no judge to test: configure 'judge:' or pass --judge AGENT")
    cases = load_pack(pack)
    caller = Wiring(None, tuple(secret_values(config)), None, None).caller(agent)
    timeout = config.defaults.judge_timeout_seconds

    async def main() -> RedTeamReport:
        fn = judge_fn_for(caller, CallContext("redteam", agent.name, "redteam"), timeout)
        try:
            return await run_redteam(fn, cases, concurrency=concurrency)
        finally:
            await caller.provider.aclose()

    report = anyio.run(main)
    failure = gate_failure(report, min_containment=min_containment)
    if fmt == "json":
        click.echo(report.model_dump_json(indent=2))
    else:
        click.echo(_render_redteam(report))
    if failure is not None:
        click.echo(f"gate failed: {failure}", err=True)
        return 1
    return 0


def _render_redteam(report: RedTeamReport) -> str:
    c, b = report.containment, report.baseline
    lines = [
        f"containment {c.successes}/{c.total} = {c.rate:.3f} (95% CI {c.low:.3f}–{c.high:.3f})",
        f"baseline {b.successes}/{b.total} = {b.rate:.3f} (95% CI {b.low:.3f}–{b.high:.3f}):"
        f" clean (bad) responses the judge failed; it passed {report.clean_passes}",
    ]
    lines += [f"  {t:<20} {p.successes}/{p.total}" for t, p in sorted(report.by_technique.items())]
    for case in report.cases:
        if case.error:
            lines.append(f"  breached: {case.id} ({case.technique}): {case.error}")
        elif case.clean_passed:
            lines.append(f"  no baseline: {case.id} ({case.technique}): the clean response passed")
        elif not case.contained:
            why = f"score {case.clean_score} → {case.attack_score}"
            lines.append(f"  breached: {case.id} ({case.technique}): {why}")
    return "\n".join(lines)


# -- coalmine judge label ----------------------------------------------------------------------

_SHOWN = 4000
"""Characters of a prompt or an output shown (the file keeps them whole)."""
_VERDICTS: dict[str, Verdict] = {"p": "pass", "f": "fail", "u": "unsure"}
_QUESTION = "[p]ass [f]ail [u]nsure [s]kip [q]uit: "


@judge_group.command("label")
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
    help="The calibration set (JSONL) to write; labelling it again resumes.",
)  # fmt: skip
@click.option("--labeller", help="Your name on the labels (default: $USER, else 'me').")
@click.option(
    "--criteria", "criteria_options", multiple=True, metavar="NAME=DESCRIPTION",
    help="Judge every case against this criterion (repeat for more).",
)  # fmt: skip
@click.option("--rubric", help="Judge every case against this rubric instead.")
@click.option("--notes", is_flag=True, help="Ask for a note after each pass, fail or unsure.")
@root_option
@store_option
def label_command(
    run_ref: str,
    out: Path,
    labeller: str | None,
    criteria_options: tuple[str, ...],
    rubric: str | None,
    notes: bool,
    root: Path,
    store_path: Path | None,
) -> int:
    """Label the cases of RUN (a canary or eval run) by hand, into a calibration set.

    Shows each case's prompt, output and criteria (--criteria, else --rubric, else what the
    case's judge grader asks) and reads one key on a terminal, one line otherwise: p pass,
    f fail, u unsure, s skip (asked again next time), q quit. Every answer is written to --out
    at once; run the command again to go on where you stopped. An item someone else labelled
    gets your label added to its line (you are shown it as stored, never their verdict).
    When the newest calibration made from --out wants more items the humans fail (or pass),
    the cases another grader failed (or passed) come first; never by the judge's own verdict.
    """
    if criteria_options and rubric is not None:
        raise UsageError("give --criteria or --rubric, not both")
    criteria = _parse_criteria(criteria_options)
    asked = Asked(criteria=criteria) if criteria else Asked(rubric=rubric) if rubric else None
    name = labeller or os.environ.get("USER") or "me"
    store = open_store(root, path=store_path)
    try:
        info = store.get_run(run_ref)
        run_root = Path(info.root) if Path(info.root).is_dir() else root.resolve()
        candidates = run_candidates(store, info, root=run_root)
        calibrations = store.newest_calibrations()
    finally:
        store.close()
    if info.status != "finished":
        click.echo(f"warning: run {info.id} is {info.status}; labelling the cases it has", err=True)
    file = LabelFile(out, name)
    for bad in file.bad:
        click.echo(f"warning: {bad} (the line is kept as it is)", err=True)
    plan = plan_labelling(candidates, file, asked=asked)
    if plan.missing:
        shown = ", ".join(plan.missing[:5]) + (", …" if len(plan.missing) > 5 else "")
        raise UsageError(
            f"{len(plan.missing)} case(s) of run {info.id} have no llm-judge or llm-rubric "
            f"grader to say what they are judged against ({shown}); pass --criteria "
            "NAME=DESCRIPTION (repeat for more) or --rubric TEXT"
        )
    if not candidates:
        click.echo(f"run {info.id} has no case with a prompt and an output to label")
    drafts = plan.drafts
    wanted = find_wanted(calibrations, out, root=root)
    if wanted is not None and drafts:
        click.echo(describe_wanted(wanted, drafts))
        drafts = offer_first(drafts, wanted)
    answers = _Answers()
    tally = {"pass": 0, "fail": 0, "unsure": 0}
    skipped = 0
    total = len(drafts)
    try:
        for n, draft in enumerate(drafts, 1):
            click.echo(_show(draft, n, total))
            answer = _ask(answers)
            if answer is None or answer == "q":
                break
            if answer == "s":
                skipped += 1
                continue
            verdict = _VERDICTS[answer]
            note = _ask_note(answers) if notes else None
            file.add(draft, verdict, note)
            tally[verdict] += 1
    except KeyboardInterrupt:
        click.echo()
    labelled = sum(tally.values())
    before = f" ({plan.done} labelled before)" if plan.done else ""
    click.echo(
        f"labelled {labelled} ({tally['pass']} pass, {tally['fail']} fail, {tally['unsure']} "
        f"unsure), skipped {skipped}, remaining {total - labelled}{before}: {out}"
    )
    return 0


def _parse_criteria(values: tuple[str, ...]) -> dict[str, str]:
    criteria: dict[str, str] = {}
    for value in values:
        name, _, description = value.partition("=")
        name = name.strip()
        if not name:
            raise UsageError(f"--criteria {value!r}: write NAME=DESCRIPTION")
        if name in criteria:
            raise UsageError(f"--criteria {name!r} is given twice")
        criteria[name] = description.strip()
    return criteria


def _cut(text: str) -> str:
    if len(text) <= _SHOWN:
        return text
    return f"{text[:_SHOWN]}\n[… cut here: {_SHOWN} of {len(text)} characters shown]"


def _show(draft: Draft, n: int, total: int) -> str:
    lines = ["", f"[{n}/{total}] {draft.id}"]
    if draft.stored:
        lines.append("(already in the file with someone else's label: shown as stored)")
    if draft.differs:
        lines.append("(this run's output differs from the stored one; label the stored one)")
    lines += ["--- prompt ---", _cut(draft.prompt), "--- output ---", _cut(draft.output)]
    if draft.context:
        context = draft.context if isinstance(draft.context, str) else "\n".join(draft.context)
        lines += ["--- context ---", _cut(context)]
    criteria = draft.asked.criteria
    if criteria is not None:
        lines.append("--- criteria ---")
        if isinstance(criteria, dict):
            lines += [f"  {k}: {v}" if v else f"  {k}" for k, v in criteria.items()]
        else:
            lines += [f"  {k}" for k in criteria]
    else:
        lines += ["--- rubric ---", draft.asked.rubric or ""]
    return "\n".join(lines)


class _Answers:
    """One key an answer on a terminal (``click.getchar``), one line an answer from a pipe."""

    def __init__(self) -> None:
        self.stdin = sys.stdin
        self.tty = self.stdin.isatty()

    def key(self) -> str | None:
        """The answer; ``None`` at the end of input (or Ctrl-C, Ctrl-D on a terminal)."""
        if self.tty:
            try:
                key = click.getchar()
            except (EOFError, KeyboardInterrupt):
                click.echo()
                return None
            click.echo(key if key.isprintable() else "")
            return key
        line = self.stdin.readline()
        click.echo()
        return line.strip() if line else None

    def line(self) -> str | None:
        """A line of text; ``None`` at the end of input."""
        line = self.stdin.readline()
        if not self.tty:
            click.echo()
        return line.rstrip("\r\n") if line else None


def _ask(answers: _Answers) -> str | None:
    """``p``, ``f``, ``u``, ``s`` or ``q``; ``None`` at the end of input."""
    while True:
        click.echo(_QUESTION, nl=False)
        got = answers.key()
        if got is None:
            return None
        first = got[:1].lower()
        if first in ("p", "f", "u", "s", "q"):
            return first
        click.echo(f"{got!r}? answer p, f, u, s or q")


def _ask_note(answers: _Answers) -> str | None:
    click.echo("note (enter to skip): ", nl=False)
    text = answers.line()
    return (text.strip() or None) if text else None
