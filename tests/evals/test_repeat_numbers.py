"""What a suite's repeats and tags add to its result: pass^k, flaky cases, clustered errors.

pass^k and its gate (``min_pass_hat_k``), the cases whose repeats disagree, and the standard
error when cases that share a tag are not independent.
"""

from __future__ import annotations

import io
import json
import math
import random
from contextlib import redirect_stderr, redirect_stdout
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from coalmine._util.clustered import clustered_mean
from coalmine.cli.main import main
from coalmine.evals.summary import ClusterSums, cluster_of, summarise_attempts
from coalmine.store.evals import Attempt

SCHEMA = json.loads((files("coalmine") / "schemas" / "eval-result.v1.json").read_text("utf-8"))


def runs(case_id: str, statuses: str, *, tags: list[str] | None = None) -> list[Attempt]:
    """A case's stored runs: ``statuses`` a letter a run (p pass, f fail, e error)."""
    word = {"p": "pass", "f": "fail", "e": "error"}
    record: dict[str, Any] = {"tags": tags} if tags else {}
    return [
        Attempt("s", case_id, rep, word[s], True, None, {}, None, None, None, None, None, record)
        for rep, s in enumerate(statuses)
    ]


def test_pass_hat_k_is_the_mean_of_each_cases_chance_that_all_k_runs_pass() -> None:
    attempts = [*runs("a", "pppf"), *runs("b", "pppp"), *runs("c", "ppff"), *runs("d", "ffff")]
    s = summarise_attempts(iter(attempts), reducer="mean", repeats=4, min_score=None)
    # pass^4 of each: C(3,4)/C(4,4) = 0, 1, 0, 0 -> 1/4
    assert s.pass_hat_k[0] / s.pass_hat_k[2] == pytest.approx(0.25)
    s2 = summarise_attempts(iter(attempts), reducer="mean", repeats=2, min_score=None)
    # with k = 2 of 4 runs: C(3,2)/C(4,2) = 3/6, 1, C(2,2)/6 = 1/6, 0 -> (0.5 + 1 + 1/6) / 4
    assert s2.pass_hat_k[0] / s2.pass_hat_k[2] == pytest.approx((0.5 + 1 + 1 / 6) / 4)


def test_min_pass_hat_k_gates_the_suite_and_says_so_in_its_rule() -> None:
    attempts = [*runs("a", "pppf"), *runs("b", "pppp"), *runs("c", "pppp"), *runs("d", "pppp")]
    held = summarise_attempts(
        iter(attempts), reducer="mean", repeats=4, min_score=0.5, min_pass_hat_k=0.75
    )
    assert held.gate.passed and held.gate.rule == "score >= 0.5 and pass^4 >= 0.75"
    failed = summarise_attempts(
        iter(attempts), reducer="mean", repeats=4, min_score=0.5, min_pass_hat_k=0.8
    )
    assert not failed.gate.passed  # pass^4 = 3/4: every case's mean passes, not every run


def test_a_case_is_flaky_when_its_runs_disagree_and_its_interval_straddles_one_half() -> None:
    attempts = [*runs("a", "pf"), *runs("b", "pp"), *runs("c", "p" * 9 + "f"), *runs("d", "ff")]
    s = summarise_attempts(iter(attempts), reducer="mean", repeats=10, min_score=None)
    # a: 1/2, Wilson (0.095, 0.905); c: 9/10, Wilson (0.596, 0.982) does not reach 0.5
    assert [(f.id, f.passes, f.runs) for f in s.flaky_cases] == [("a", 1, 2)]
    assert s.flaky == 1
    assert s.flaky_cases[0].ci95 == pytest.approx((0.0945, 0.9055), abs=1e-4)


def test_an_errored_run_is_left_out_of_a_cases_runs() -> None:
    s = summarise_attempts(iter(runs("a", "ppe")), reducer="mean", repeats=3, min_score=None)
    # two runs that graded, both passed: pass^3 shrinks to pass^2 of them, 1
    assert s.pass_hat_k[0] == 1.0 and s.flaky == 0


def test_a_cases_cluster_is_its_group_tag_else_its_first_tag() -> None:
    assert cluster_of(["x", "group:doc-3", "y"]) == "group:doc-3"
    assert cluster_of(["x", "y"]) == "x"
    assert cluster_of([]) is None and cluster_of(None) is None


def test_cluster_sums_give_the_clustered_standard_error_of_the_reference() -> None:
    rng = random.Random(8)
    for _ in range(200):
        n = rng.randrange(3, 60)
        values = [rng.choice([0.0, 1.0, rng.random()]) for _ in range(n)]
        keys = [rng.choice([None, "a", "b", "c", "d"]) for _ in range(n)]
        sums = ClusterSums()
        for key, value in zip(keys, values, strict=True):
            sums.add(key, value)
        got = sums.result()
        if not any(keys.count(k) >= 2 for k in "abcd"):
            assert got is None
            continue
        want = clustered_mean(values, keys)
        if want.stderr is None:
            assert got is None
            continue
        assert got is not None and got.clusters == want.clusters
        assert got.stderr == pytest.approx(want.stderr, abs=5e-5)


def test_two_clusters_by_hand() -> None:
    # a: 1, 1; b: 0, 0, 1. Mean 3/5; cluster residual sums 2 - 1.2 = 0.8 and 1 - 1.8 = -0.8;
    # SE = sqrt(2/1 · (0.64 + 0.64)) / 5 = sqrt(2.56) / 5 = 0.32
    sums = ClusterSums()
    for key, value in [("a", 1.0), ("a", 1.0), ("b", 0.0), ("b", 0.0), ("b", 1.0)]:
        sums.add(key, value)
    got = sums.result()
    assert got is not None and got.stderr == pytest.approx(0.32) and got.clusters == 2
    assert got.ci95 == pytest.approx((max(0.0, 0.6 - 1.959964 * 0.32), 1.0), abs=1e-4)


AGENT = """
SEEN = {}

async def run(prompt, context):
    # "k<N>" passes its first N calls and fails the rest
    SEEN[prompt] = SEEN.get(prompt, 0) + 1
    return "yes" if SEEN[prompt] <= int(prompt.split()[0][1:]) else "no"
"""


def test_a_run_with_repeats_and_tags_reports_pass_hat_k_flaky_cases_and_clusters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "p"
    (root / "harness" / "evals").mkdir(parents=True)
    (root / "repagent.py").write_text(AGENT, encoding="utf-8")
    (root / "coalmine.yaml").write_text(
        yaml.safe_dump({"agents": {"Bot": {"provider": "python", "target": "repagent:run"}}}),
        encoding="utf-8",
    )
    passes = [4, 4, 4, 2, 4, 3, 0, 4]  # of 4 runs each
    lines = [
        json.dumps({"id": f"c{i}", "prompt": f"k{k} case {i}", "tags": [f"doc{i // 2}"]})
        for i, k in enumerate(passes)
    ]
    (root / "harness" / "evals" / "s.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    meta = {
        "agent": "Bot",
        "repeats": 4,
        "min_pass_hat_k": 0.7,
        "graders": [{"type": "contains", "config": {"value": "yes"}}],
    }
    (root / "harness" / "evals" / "s.yaml").write_text(yaml.safe_dump(meta), "utf-8")
    monkeypatch.syspath_prepend(str(root))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["eval", "run", "--root", str(root), "--format", "json", "--display", "none"])
    monkeypatch.delitem(__import__("sys").modules, "repagent", raising=False)
    [suite] = json.loads(out.getvalue())
    jsonschema.validate(suite, SCHEMA)
    assert suite["passHatK"] == pytest.approx(5 / 8)  # five cases pass all four runs
    assert code == 1 and not suite["gate"]["passed"]  # 0.625 < 0.7
    assert suite["gate"]["rule"] == "every case passes and pass^4 >= 0.7"
    assert [f["id"] for f in suite["flakyCases"]] == ["c3", "c5"]  # 2/4 and 3/4
    c = suite["clustered"]
    values = [k / 4 for k in passes]
    want = clustered_mean(values, [i // 2 for i in range(8)])
    assert c["clusters"] == 4 and want.stderr is not None
    assert c["stderr"] == pytest.approx(want.stderr, abs=1e-4)
    plain = math.sqrt(sum((v - sum(values) / 8) ** 2 for v in values) / 7 / 8)
    assert suite["stderr"] == pytest.approx(plain, abs=1e-4)
