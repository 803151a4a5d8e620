"""A calibration record, and a drift check, as plain text tables (``coalmine judge``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _pct(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    interval = (record.get("intervals") or {}).get(key)
    if value is None or not interval:
        return "—"
    low, high = interval["ci95"]
    return f"{value:.3f}  ({low:.3f}–{high:.3f})  {interval['successes']}/{interval['n']}"


def _bound(record: Mapping[str, Any], key: str, limit_key: str, sign: str) -> str:
    """``  bound ≤ 0.119 (limit 0.15)``: the one-sided 95% bound the verdict used."""
    value = (record.get("bounds") or {}).get(key)
    if value is None:
        return ""
    limit = (record.get("limits") or {}).get(limit_key)
    shown = "" if limit is None else f" (limit {limit:g})"
    return f"  95% bound {sign} {value:.3f}{shown}"


def render_calibration(record: Mapping[str, Any]) -> str:
    """A calibration record as a table of figures, with intervals and bounds, and a confusion."""
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
        f"agreement           {_pct(record, 'agreement')}",
        f"kappa               {'—' if kappa is None else f'{kappa:.3f}'}"
        + _bound(record, "kappa", "min_kappa", "≥")
        + ("" if human_kappa is None else f"  (human–human {human_kappa:.3f})"),
        f"false-pass rate     {_pct(record, 'false_pass_rate')}"
        + _bound(record, "false_pass_rate", "max_false_pass_rate", "≤"),
        f"false-block rate    {_pct(record, 'false_block_rate')}"
        + _bound(record, "false_block_rate", "max_false_block_rate", "≤"),
        f"precision (pass)    {_pct(record, 'precision')}",
        f"recall (pass)       {_pct(record, 'recall')}",
        f"F1 (pass)           {'—' if record['f1'] is None else format(record['f1'], '.3f')}",
        f"rerun stability     {_pct(record, 'rerun_stability')} over {record['reruns']} reruns",
    ]
    if record.get("verbosity_flip_rate") is not None:
        lines.append(f"verbosity flips     {_pct(record, 'verbosity_flip_rate')} (padded output)")
    if record.get("quorum_disagreement") is not None:
        lines.append(f"quorum disagreement {_pct(record, 'quorum_disagreement')}")
    lines += [
        "",
        "                 human pass  human fail",
        f"judge pass       {c['tp']:>10}  {c['fp']:>10}",
        f"judge fail       {c['fn']:>10}  {c['tn']:>10}",
    ]
    return "\n".join(lines)


def _rate(rate: Mapping[str, Any] | None) -> str:
    if not rate or rate.get("value") is None:
        return "—"
    low, high = rate["ci95"]
    return f"{rate['value']:.3f} ({low:.3f}–{high:.3f}) {rate['successes']}/{rate['n']}"


def render_check(report: Mapping[str, Any]) -> str:
    """A drift check (``DriftReport.as_dict()``): agreement now and at calibration."""
    anchors = report["anchors"]
    fails = sum(1 for a in anchors if a["human"] == "fail")
    against = report["calibration_id"]
    head = f"check of {report['judge']}" + (
        f" against calibration #{against}" if against is not None else ""
    )
    if anchors:
        head += f": {len(anchors)} anchors ({fails} human fail, {len(anchors) - fails} human pass)"
    verdict = "DRIFTED (it advises until it is calibrated again)" if report["drifted"] else "STEADY"
    lines = [
        head,
        f"verdict: {verdict}",
        *[f"  - {why}" for why in report["reasons"]],
        *[f"  note: {note}" for note in report["notes"]],
    ]
    if anchors:
        heldout = report.get("heldout_agreement")
        floor = report.get("floor")
        at_calibration = _rate(
            None if not heldout else {**heldout, "value": heldout["successes"] / heldout["n"]}
        )
        graded = sum(1 for a in anchors if a["now"] is not None)
        lines += [
            "",
            f"{'':<22}{'now':<30}at calibration",
            f"{'agreement, anchors':<22}{_rate(report['agreement']):<30}"
            f"{_rate(report.get('agreement_then'))}",
            f"{'agreement, held-out':<22}{'':<30}{at_calibration}"
            + ("" if floor is None else f"; drifted under {floor:.3f}"),
            f"{'changed verdicts':<22}{report['changed']} of {len(anchors)}"
            + ("" if graded == len(anchors) else f" (not graded now: {len(anchors) - graded})"),
            f"{'models':<22}{', '.join(report['models_now']) or '—':<30}"
            f"{', '.join(report.get('models_then') or []) or '—'}",
        ]
    if report.get("drift_id") is not None:
        lessons = ", ".join(f"#{n}" for n in report.get("lessons") or [])
        lines.append(f"{'stored':<22}drift record #{report['drift_id']}, lesson {lessons}")
    return "\n".join(lines)
