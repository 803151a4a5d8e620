"""``coalmine judge calibrate|report|redteam``: judges that come with evidence."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import click

from coalmine.cli.options import root_option, store_option
from coalmine.errors import ConfigError, UsageError
from coalmine.judge.labels import load_labels
from coalmine.providers.base import CallContext
from coalmine.runner.calibrate import calibrate
from coalmine.runner.canary import _secrets, _Wiring
from coalmine.runner.case import judge_fn_for
from coalmine.runner.history import project_config
from coalmine.runner.redteam import RedTeamReport, load_pack, run_redteam
from coalmine.store.runs import Store


@click.group("judge")
def judge_group() -> None:
    """Calibrate the judge against human labels, report it, test it against injections."""


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
@_format_option
def calibrate_command(
    labels: Path,
    root: Path,
    store_path: Path | None,
    judge_name: str | None,
    reruns: int,
    quorum: str | None,
    concurrency: int,
    no_cache: bool,
    fmt: str,
) -> int:
    """Judge every item of LABELS (JSONL), compare with the humans, store the record.

    Exit 0 when the judge may block, 1 when it stays advisory, 2 on bad input.
    """
    config = project_config(root)
    label_set = load_labels(labels)
    for bad in label_set.bad:
        click.echo(f"error: {bad}", err=True)
    if not label_set.items:
        raise UsageError(f"{labels}: no valid labelled item")
    names = [n.strip() for n in (quorum or "").split(",") if n.strip()]
    store = Store.open(store_path or config.store_path)
    try:
        outcome = anyio.run(
            partial(
                calibrate, config, label_set, store=store, judge=judge_name, reruns=reruns,
                quorum=names, concurrency=concurrency, cache=not no_cache,
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


@judge_group.command("report")
@root_option
@store_option
@click.option("--judge", "judge_name", help="Only this agent's calibrations.")
@_format_option
def report_command(root: Path, store_path: Path | None, judge_name: str | None, fmt: str) -> int:
    """Show the newest calibration of each judge (or of --judge): figures and intervals."""
    config = project_config(root)
    store = Store.open(store_path or config.store_path)
    try:
        rows = store.conn.execute(
            "SELECT id, judge_key, record FROM judge_calibrations ORDER BY id DESC"
        ).fetchall()
    finally:
        store.close()
    newest: dict[str, dict[str, Any]] = {}
    for row in rows:
        record = {**json.loads(row["record"]), "id": row["id"]}
        agent = (record.get("judge") or {}).get("agent")
        if judge_name is not None and agent != judge_name:
            continue
        newest.setdefault(row["judge_key"], record)
    if not newest:
        click.echo("no calibration recorded yet: run 'coalmine judge calibrate LABELS.jsonl'")
        return 0
    if fmt == "json":
        click.echo(json.dumps(list(newest.values()), indent=2, ensure_ascii=False))
    else:
        click.echo("\n\n".join(render_calibration(r) for r in newest.values()))
    return 0


@judge_group.command("redteam")
@root_option
@click.option("--judge", "judge_name", help="The agent to test (default: the config's judge).")
@click.option(
    "--pack", type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A red-team pack (JSONL) instead of the built-in one.",
)  # fmt: skip
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=8, show_default=True)
@_format_option
def redteam_command(
    root: Path, judge_name: str | None, pack: Path | None, concurrency: int, fmt: str
) -> int:
    """Send outputs that try to talk the judge into passing them; report the containment."""
    config = project_config(root)
    agent = config.agents.get(judge_name) if judge_name else config.judge
    if agent is None:
        raise ConfigError("no judge to test: configure 'judge:' or pass --judge AGENT")
    cases = load_pack(pack)
    caller = _Wiring(None, tuple(_secrets(config)), None, None).caller(agent)
    timeout = config.defaults.judge_timeout_seconds

    async def main() -> RedTeamReport:
        fn = judge_fn_for(caller, CallContext("redteam", agent.name, "redteam"), timeout)
        try:
            return await run_redteam(fn, cases, concurrency=concurrency)
        finally:
            await caller.provider.aclose()

    report = anyio.run(main)
    if fmt == "json":
        click.echo(report.model_dump_json(indent=2))
        return 0
    c = report.containment
    click.echo(
        f"containment {c.successes}/{c.total} = {c.rate:.3f} "
        f"(95% CI {c.low:.3f}–{c.high:.3f}); clean outputs the judge passed: "
        f"{report.clean_passes}"
    )
    for technique, p in sorted(report.by_technique.items()):
        click.echo(f"  {technique:<20} {p.successes}/{p.total}")
    for case in report.cases:
        if not case.contained:
            why = case.error or f"score {case.clean_score} → {case.attack_score}"
            click.echo(f"  breached: {case.id} ({case.technique}): {why}")
    return 0


def _pct(rate: dict[str, Any] | None) -> str:
    if not rate or rate.get("value") is None:
        return "—"
    low, high = rate["ci95"]
    return f"{rate['value']:.3f}  ({low:.3f}–{high:.3f})  {rate['successes']}/{rate['n']}"


def render_calibration(record: dict[str, Any]) -> str:
    """A calibration record as a table of figures, with intervals, and a confusion matrix."""
    judge = record.get("judge") or {}
    c = record["confusion"]
    kappa = record.get("kappa")
    human_kappa = record.get("human_kappa")
    lines = [
        f"calibration #{record.get('id')} of {judge.get('agent')} "
        f"({judge.get('provider')}, {judge.get('model') or 'model not set'}), "
        f"grader {record.get('grader')}, set {record['calibration_set']['id']}",
        f"verdict: {'MAY BLOCK' if record['may_block'] else 'ADVISORY'}",
        *[f"  - {why}" for why in record.get("why_not", [])],
        "",
        f"held-out items      {record['n_heldout']} (dev {record['n_dev']}, unsure "
        f"{record['n_unsure']}, judge errors {record['n_errors']})",
        f"threshold           {record['threshold']:g} (picked on the dev split)",
        f"agreement           {_pct(record['agreement'])}",
        f"kappa               {'—' if kappa is None else f'{kappa:.3f}'}"
        + ("" if human_kappa is None else f"  (human–human {human_kappa:.3f})"),
        f"false-pass rate     {_pct(record['false_pass_rate'])}",
        f"false-block rate    {_pct(record['false_block_rate'])}",
        f"precision (pass)    {_pct(record['precision'])}",
        f"recall (pass)       {_pct(record['recall'])}",
        f"F1 (pass)           {'—' if record['f1'] is None else format(record['f1'], '.3f')}",
        f"rerun stability     {_pct(record['rerun_stability'])} over {record['reruns']} reruns",
    ]
    if record.get("quorum_disagreement"):
        lines.append(f"quorum disagreement {_pct(record['quorum_disagreement'])}")
    lines += [
        "",
        "                 human pass  human fail",
        f"judge pass       {c['tp']:>10}  {c['fp']:>10}",
        f"judge fail       {c['fn']:>10}  {c['tn']:>10}",
    ]
    return "\n".join(lines)
