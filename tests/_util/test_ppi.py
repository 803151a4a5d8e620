"""Prediction-powered inference: by hand (in exact fractions), invariants, ppi_py's formulas, coverage.

There is no PPI in scipy and ppi_py is not installed: its formulas are transcribed in numpy
below (`_ppi_py_reference`, from ppi_py/ppi.py's ppi_mean_ci and _calc_lam_glm).
"""

from __future__ import annotations

import math
import random
import statistics
from fractions import Fraction
from typing import Literal

import pytest

from coalmine._util.estimate import Z95, wilson_interval
from coalmine._util.ppi import PPIEstimate, ppi_mean, tuned_lambda

# N = 6 unlabelled verdicts and n = 4 labelled (human, judge) pairs
UNLABELLED = [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]
LABELLED = [(1.0, 1.0), (0.0, 1.0), (1.0, 1.0), (0.0, 0.0)]


def _variance(values: list[Fraction]) -> Fraction:
    mean = sum(values, Fraction(0)) / len(values)
    return sum(((v - mean) ** 2 for v in values), Fraction(0)) / (len(values) - 1)


def test_ppi_by_hand() -> None:
    # mean_N(f) = 4/6 = 2/3; σ²_f = (4·(1/3)² + 2·(2/3)²)/5 = (4/3)/5 = 4/15
    # f - Y = 0, 1, 0, 0: the rectifier mean is 1/4, σ²_{f-Y} = (3·(1/4)² + (3/4)²)/3 = 1/4
    # θ̂ = 2/3 - 1/4 = 5/12; SE² = (4/15)/6 + (1/4)/4 = 2/45 + 1/16 = 77/720
    f = [Fraction(1), Fraction(1), Fraction(1), Fraction(0), Fraction(1), Fraction(0)]
    assert _variance(f) == Fraction(4, 15)
    assert _variance([Fraction(0), Fraction(1), Fraction(0), Fraction(0)]) == Fraction(1, 4)
    result = ppi_mean(UNLABELLED, LABELLED)
    assert result.estimate == pytest.approx(5 / 12, abs=1e-15)
    assert result.stderr == pytest.approx(math.sqrt(77 / 720), abs=1e-15)  # 0.327024
    # 5/12 ± 1.96·0.327 = (-0.224, 1.058): clipped to [0, 1]
    assert result.ci95 == (0.0, 1.0)
    assert (result.lam, result.tuned) == (1.0, False)
    assert (result.n_labelled, result.n_unlabelled) == (4, 6)
    # the judge said pass on 7 of the 10 cases it judged
    assert result.raw_judge_rate == pytest.approx(0.7, abs=1e-15)
    # two of the four labels pass: Wilson's interval for 2 of 4
    assert result.classical_ci95 == wilson_interval(2, 4)


def test_ppi_plus_plus_by_hand() -> None:
    # Y = 1, 0, 1, 0 (mean 1/2); f = 1, 1, 1, 0 (mean 3/4).
    # Cov_n = ((1/2)(1/4) - (1/2)(1/4) + (1/2)(1/4) + (1/2)(3/4))/4 = (1/2)/4 = 1/8
    # f on all 10 cases: 7 ones, 3 zeros; Var = (7·0.3² + 3·0.7²)/9 = 7/30; 1 + n/N = 5/3
    # λ̂ = (1/8) / ((5/3)·(7/30)) = (1/8)/(7/18) = 9/28
    lam = Fraction(9, 28)
    assert Fraction(1, 8) / (Fraction(5, 3) * Fraction(7, 30)) == lam
    assert tuned_lambda(LABELLED, UNLABELLED) == pytest.approx(9 / 28, abs=1e-15)
    # θ̂_λ = λ·(2/3) + mean(Y - λf) = λ·2/3 + 1/2 - λ·3/4 = 1/2 - λ/12 = 1/2 - 3/112 = 53/112
    residuals = [Fraction(1) - lam, -lam, Fraction(1) - lam, Fraction(0)]
    estimate = lam * Fraction(2, 3) + sum(residuals, Fraction(0)) / 4
    assert estimate == Fraction(53, 112)
    # Y - λf = 19/28, -9/28, 19/28, 0: its variance is (2·47² + 65² + 29²)/112²/3 = 9484/37632
    assert _variance(residuals) == Fraction(9484, 37632)
    variance = lam**2 * Fraction(4, 15) / 6 + _variance(residuals) / 4  # 0.0675968
    result = ppi_mean(UNLABELLED, LABELLED, lam="tuned")
    assert result.estimate == pytest.approx(float(estimate), abs=1e-15)  # 0.473214
    assert result.stderr == pytest.approx(math.sqrt(float(variance)), abs=1e-15)  # 0.259994
    assert result.lam == pytest.approx(9 / 28, abs=1e-15)
    assert result.tuned is True


def test_a_perfect_judge_needs_no_correction() -> None:
    rng = random.Random(5)
    unlabelled = [float(rng.random() < 0.6) for _ in range(300)]
    labelled = [(y, y) for y in (float(rng.random() < 0.6) for _ in range(40))]
    result = ppi_mean(unlabelled, labelled)
    assert result.estimate == pytest.approx(statistics.fmean(unlabelled), abs=1e-15)
    # the rectifier's variance is 0: SE² = σ²_f / N
    assert result.stderr == pytest.approx(statistics.stdev(unlabelled) / math.sqrt(300), abs=1e-15)


def test_lambda_zero_is_the_labels_alone() -> None:
    rng = random.Random(6)
    unlabelled = [rng.random() for _ in range(100)]
    labelled = [(float(rng.random() < 0.7), rng.random()) for _ in range(30)]
    result = ppi_mean(unlabelled, labelled, lam=0.0)
    labels = [y for y, _ in labelled]
    assert result.estimate == pytest.approx(statistics.fmean(labels), abs=1e-15)
    assert result.stderr == pytest.approx(statistics.stdev(labels) / math.sqrt(30), abs=1e-15)


def test_no_unlabelled_case_is_the_classical_estimate() -> None:
    result = ppi_mean([], [(1.0, 1.0), (0.0, 1.0), (1.0, 0.0)])
    assert result.estimate == pytest.approx(2 / 3)
    assert result.lam == 0.0 and result.tuned is False
    assert result.ci95 == result.classical_ci95 == wilson_interval(2, 3)
    assert result.stderr == pytest.approx(math.sqrt(1 / 3 / 3))


@pytest.mark.parametrize("labelled", [[], [(1.0, 1.0)]])
def test_below_two_labels_there_is_no_estimate(labelled: list[tuple[float, float]]) -> None:
    result = ppi_mean([1.0, 0.0, 1.0], labelled)
    assert result.estimate is None and result.ci95 is None and result.lam is None
    assert result.reason is not None and "at least two" in result.reason
    assert result.raw_judge_rate is not None
    assert (result.classical_ci95 is None) == (not labelled)


def test_a_constant_judge_gets_no_weight() -> None:
    assert tuned_lambda([(1.0, 1.0), (0.0, 1.0)], [1.0, 1.0, 1.0]) == 0.0
    result = ppi_mean([1.0, 1.0, 1.0], [(1.0, 1.0), (0.0, 1.0)], lam="tuned")
    assert result.estimate == pytest.approx(0.5)


def test_score_labels_get_the_normal_classical_interval() -> None:
    result = ppi_mean([0.5, 0.7], [(0.2, 0.4), (0.6, 0.5), (0.9, 0.8)])
    mean, se = 1.7 / 3, statistics.stdev([0.2, 0.6, 0.9]) / math.sqrt(3)
    assert result.classical_ci95 == pytest.approx((mean - Z95 * se, min(1.0, mean + Z95 * se)))


def _ppi_py_reference(
    labelled: list[tuple[float, float]], unlabelled: list[float], lam: float | None
) -> tuple[float, float, float]:
    """ppi_py's ppi_mean_ci in numpy, with ddof=1 standard deviations (ppi_py uses ddof=0)."""
    import numpy as np

    y = np.array([h for h, _ in labelled]).reshape(-1, 1)
    yhat = np.array([j for _, j in labelled]).reshape(-1, 1)
    yhat_u = np.array(unlabelled).reshape(-1, 1)
    n, big_n = y.shape[0], yhat_u.shape[0]
    if lam is None:  # _calc_lam_glm, gradients at the λ = 1 point estimate, clip=True
        point = yhat_u.mean(0) + (y - yhat).mean(0)
        grads, grads_hat, grads_hat_u = y - point, yhat - point, yhat_u - point
        gc, ghc = grads - grads.mean(0), grads_hat - grads_hat.mean(0)
        cov = (1 / n) * (gc.T @ ghc + ghc.T @ gc)
        var = np.cov(np.concatenate([grads_hat, grads_hat_u], axis=0).T).reshape(1, 1)
        lam = float(np.clip(np.trace(cov) / (2 * (1 + n / big_n) * np.trace(var)), 0, 1))
    estimate = float((lam * yhat_u).mean() + (y - lam * yhat).mean())
    imputed = (lam * yhat_u).std(0, ddof=1) / np.sqrt(big_n)
    rectifier = (y - lam * yhat).std(0, ddof=1) / np.sqrt(n)
    return estimate, float(np.sqrt(imputed**2 + rectifier**2)[0]), lam


def test_against_ppi_py_formulas_in_numpy() -> None:
    rng = random.Random(8)
    for _ in range(40):
        n, big_n = rng.randint(5, 60), rng.randint(5, 400)
        labelled = []
        for _ in range(n):
            y = float(rng.random() < 0.6)
            labelled.append((y, y if rng.random() < 0.8 else 1.0 - y))
        unlabelled = [float(rng.random() < 0.6) for _ in range(big_n)]
        choices: list[tuple[float | Literal["tuned"], float | None]] = [
            ("tuned", None),
            (1.0, 1.0),
            (0.4, 0.4),
        ]
        for lam, reference_lam in choices:
            estimate, stderr, weight = _ppi_py_reference(labelled, unlabelled, reference_lam)
            result = ppi_mean(unlabelled, labelled, lam=lam)
            assert result.lam == pytest.approx(weight, abs=1e-12)
            assert result.estimate == pytest.approx(min(1.0, max(0.0, estimate)), abs=1e-12)
            assert result.stderr == pytest.approx(stderr, rel=1e-10)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ppi_mean([1.2], [(1.0, 1.0), (0.0, 0.0)]), "judge verdict"),
        (lambda: ppi_mean([1.0], [(1.0, -0.1), (0.0, 0.0)]), "judge verdict"),
        (lambda: ppi_mean([1.0], [(2.0, 1.0), (0.0, 0.0)]), "human label"),
        (lambda: ppi_mean([1.0], [(1.0, 1.0), (0.0, 0.0)], lam=1.5), "lam"),
        (lambda: tuned_lambda([], [1.0]), "labelled and unlabelled"),
    ],
)
def test_bad_arguments(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=message):
        call()


def _simulate(false_pass: float, false_fail: float, sims: int) -> dict[str, tuple[float, float]]:
    """Coverage of 0.7 and mean width of each interval over seeded suites (N = 500, n = 50)."""
    rng = random.Random(2023)
    rate = 0.7
    hits = {name: 0 for name in ("ppi", "ppi++", "classical", "raw judge")}
    widths: dict[str, list[float]] = {name: [] for name in hits}

    def draw() -> tuple[float, float]:
        y = float(rng.random() < rate)
        wrong = rng.random() < (false_fail if y else false_pass)
        return y, 1.0 - y if wrong else y

    def count(name: str, interval: tuple[float, float] | None) -> None:
        assert interval is not None
        hits[name] += interval[0] <= rate <= interval[1]
        widths[name].append(interval[1] - interval[0])

    for _ in range(sims):
        unlabelled = [draw()[1] for _ in range(500)]
        labelled = [draw() for _ in range(50)]
        plain: PPIEstimate = ppi_mean(unlabelled, labelled)
        count("ppi", plain.ci95)
        count("ppi++", ppi_mean(unlabelled, labelled, lam="tuned").ci95)
        count("classical", plain.classical_ci95)
        judged = unlabelled + [f for _, f in labelled]
        count("raw judge", wilson_interval(round(sum(judged)), len(judged)))
    return {name: (hits[name] / sims, statistics.fmean(widths[name])) for name in hits}


def test_coverage_with_a_biased_judge() -> None:
    """2,000 seeded suites: true rate 0.7; the judge passes 10% of true fails and fails 5% of passes.

    The judge's expected rate is 0.7·0.95 + 0.3·0.1 = 0.695 (a bias of -0.005). Observed coverage
    of 0.7 (mean width): PPI 94.8% (0.159), PPI++ 93.0% (0.147, mean λ̂ 0.75), the labels alone
    (Wilson, n = 50) 95.75% (0.244), the raw judge (Wilson on its 550 verdicts) 94.35% (0.077).
    """
    found = _simulate(0.10, 0.05, 2000)
    assert found["ppi"][0] >= 0.93
    assert found["ppi++"][0] >= 0.92
    assert found["ppi"][1] < 0.7 * found["classical"][1]
    assert found["ppi++"][1] < found["ppi"][1]


@pytest.mark.slow
def test_coverage_with_a_judge_that_passes_too_much() -> None:
    """2,000 seeded suites: the judge passes 30% of true fails (expected rate 0.755, bias +0.055).

    Observed coverage of 0.7 (mean width): PPI 94.5% (0.205), PPI++ 92.65% (0.188), the labels
    alone 95.75% (0.244), the raw judge 18.3% (0.072): its narrow interval is in the wrong place.
    """
    found = _simulate(0.30, 0.05, 2000)
    assert found["ppi"][0] >= 0.93
    assert found["raw judge"][0] < 0.3
    assert found["ppi"][1] < found["classical"][1]
