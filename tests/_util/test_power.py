"""Power, sample sizes and Holm's adjustment: by hand, against scipy, and by simulation.

Constants used by hand below: z_{0.975} = 1.959963984540054, z_{0.8} = 0.8416212335729143.
"""

from __future__ import annotations

import math
import random
from functools import cache

import pytest

from coalmine._util.power import (
    cases_to_detect,
    effective_cases,
    holm,
    holm_reject,
    mcnemar_exact_power,
    mcnemar_power,
    mcnemar_sample_size,
    minimum_detectable_difference,
    normal_cdf,
    normal_quantile,
    planning_discordance,
    two_proportion_sample_size,
)

Z975 = 1.959963984540054
Z80 = 0.8416212335729143


def _quantile_grid() -> list[float]:
    tails = [10.0**-e for e in range(1, 301)] + [1e-10, 2.5e-10, 0.02425, 0.0242499]
    middle = [i / 1000 for i in range(1, 1000)]
    return tails + middle + [1 - p for p in tails if p >= 1e-16]


def test_normal_quantile_matches_scipy_to_1e_12() -> None:
    from scipy.stats import norm

    grid = _quantile_grid()
    for p, expected in zip(grid, norm.ppf(grid).tolist(), strict=True):
        assert abs(normal_quantile(p) - expected) <= 1e-12 * max(1.0, abs(expected)), p


def test_normal_quantile_known_values_and_symmetry() -> None:
    assert normal_quantile(0.975) == pytest.approx(Z975, abs=1e-15)
    assert normal_quantile(0.8) == pytest.approx(Z80, abs=1e-15)
    assert normal_quantile(0.5) == 0.0
    for p in (1e-10, 0.01, 0.3):
        assert normal_quantile(1 - p) == -normal_quantile(1 - (1 - p))


def test_normal_cdf_matches_scipy() -> None:
    from scipy.stats import norm

    # math.erfc and scipy's ndtr part at 1.7e-13 relative by x = -30 (Φ = 4.9e-198)
    for x in (-30.0, -8.0, -1.5, 0.0, 0.28, 2.0, 7.0):
        assert normal_cdf(x) == pytest.approx(float(norm.cdf(x)), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_normal_quantile_rejects_p_outside_0_1(p: float) -> None:
    with pytest.raises(ValueError, match="0 < p < 1"):
        normal_quantile(p)


def test_mcnemar_power_by_hand() -> None:
    # n = 100, ψ = 0.2, δ = 0.1, α = 0.05:
    # (0.1·√100 - 1.959964·√0.2) / √(0.2 - 0.01) = (1 - 0.876523) / 0.435890 = 0.283276,
    # Φ(0.283276) = 0.61152
    z = (0.1 * 10 - Z975 * math.sqrt(0.2)) / math.sqrt(0.19)
    assert z == pytest.approx(0.283276, abs=1e-6)
    expected = 0.5 * math.erfc(-z / math.sqrt(2))
    assert expected == pytest.approx(0.61152, abs=1e-5)
    assert mcnemar_power(100, discordance=0.2, delta=0.1) == pytest.approx(expected, abs=1e-12)
    assert mcnemar_power(100, discordance=0.2, delta=-0.1) == pytest.approx(expected, abs=1e-12)


def test_mcnemar_power_against_scipy_normal() -> None:
    from scipy.stats import norm

    for n, psi, delta, alpha in [(50, 0.3, 0.1, 0.05), (400, 0.1, 0.03, 0.01), (20, 0.5, 0.4, 0.1)]:
        z = norm.ppf(1 - alpha / 2)
        expected = norm.cdf((delta * math.sqrt(n) - z * math.sqrt(psi)) / math.sqrt(psi - delta**2))
        assert mcnemar_power(n, discordance=psi, delta=delta, alpha=alpha) == pytest.approx(
            float(expected), abs=1e-12
        )


def test_mcnemar_power_edges() -> None:
    # no difference: one tail of the test, α/2
    assert mcnemar_power(80, discordance=0.2, delta=0.0) == pytest.approx(0.025, abs=1e-12)
    # every case flips one way (ψ = |δ| = 1): certain once √n > z (n ≥ 4), never before
    assert mcnemar_power(4, discordance=1.0, delta=1.0) == 1.0
    assert mcnemar_power(3, discordance=1.0, delta=1.0) == 0.0


def test_mcnemar_sample_size_by_hand() -> None:
    # ψ = 0.2, δ = 0.1: (1.959964·0.447214 + 0.841621·0.435890)² / 0.01
    # = (0.876523 + 0.366854)² / 0.01 = 154.60, so 155
    raw = (Z975 * math.sqrt(0.2) + Z80 * math.sqrt(0.19)) ** 2 / 0.01
    assert raw == pytest.approx(154.6, abs=0.01)
    assert mcnemar_sample_size(discordance=0.2, delta=0.1) == 155


@pytest.mark.parametrize("psi", [0.02, 0.05, 0.1, 0.2, 0.35, 0.6, 1.0])
@pytest.mark.parametrize("share", [0.1, 0.25, 0.5, 0.9, 1.0])
@pytest.mark.parametrize(("alpha", "power"), [(0.05, 0.8), (0.05, 0.9), (0.01, 0.8), (0.1, 0.5)])
def test_mcnemar_sample_size_is_the_smallest_that_reaches_the_power(
    psi: float, share: float, alpha: float, power: float
) -> None:
    delta = share * psi
    n = mcnemar_sample_size(discordance=psi, delta=delta, alpha=alpha, power=power)
    assert mcnemar_power(n, discordance=psi, delta=delta, alpha=alpha) >= power
    if n > 1:
        assert mcnemar_power(n - 1, discordance=psi, delta=delta, alpha=alpha) < power
    z_a, z_b = normal_quantile(1 - alpha / 2), normal_quantile(power)
    connor = (z_a * math.sqrt(psi) + z_b * math.sqrt(max(psi - delta**2, 0))) ** 2 / delta**2
    assert n == max(1, math.ceil(connor - 1e-9)), "Connor's ceiling"


def test_minimum_detectable_difference_solves_connor_in_closed_form() -> None:
    # the power equation (δ√n - z_a√ψ) / √(ψ - δ²) = z_b squared is the quadratic
    # (n + z_b²)·δ² - 2·z_a·√(nψ)·δ + (z_a² - z_b²)·ψ = 0, whose larger root is the MDE
    for n, psi in [(100, 0.2), (500, 0.05), (50, 0.5), (2000, 0.1), (30, 0.9)]:
        a = n + Z80**2
        b = -2 * Z975 * math.sqrt(n * psi)
        c = (Z975**2 - Z80**2) * psi
        root = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
        found = minimum_detectable_difference(n, discordance=psi)
        assert found is not None
        assert found == pytest.approx(root, abs=1e-9)
        assert mcnemar_power(n, discordance=psi, delta=found) >= 0.8
        assert mcnemar_power(n, discordance=psi, delta=found - 1e-7) < 0.8


def test_minimum_detectable_difference_none_when_no_change_reaches_the_power() -> None:
    # n = 3, ψ = 0.2: even δ = ψ gives Φ((0.2·√3 - 0.8765) / 0.4) = Φ(-1.325) = 0.09
    assert minimum_detectable_difference(3, discordance=0.2) is None
    # n = 1 < z²·ψ = 1.92: the power peaks at δ = √(nψ)/z = 0.361, below ψ, and is small there
    assert minimum_detectable_difference(1, discordance=0.5) is None


def test_mcnemar_exact_power_by_hand() -> None:
    # ψ = δ = 0.5: every flip is fail→pass, M ~ Binomial(10, 1/2); the exact test rejects
    # m flips all one way when 2·2⁻ᵐ ≤ 0.05, i.e. m ≥ 6:
    # P(M ≥ 6) = (C(10,6) + C(10,7) + C(10,8) + C(10,9) + C(10,10)) / 2¹⁰ = 386/1024
    assert mcnemar_exact_power(10, discordance=0.5, delta=0.5) == pytest.approx(
        386 / 1024, abs=1e-12
    )
    # five cases can never reach p ≤ 0.05 (2·2⁻⁵ = 0.0625)
    assert mcnemar_exact_power(5, discordance=0.2, delta=0.1) == 0.0


@pytest.mark.parametrize(("n", "psi", "delta"), [(30, 0.3, 0.1), (25, 0.6, -0.2), (40, 0.15, 0.15)])
def test_mcnemar_exact_power_against_scipy_enumeration(n: int, psi: float, delta: float) -> None:
    from scipy.stats import binomtest, multinomial

    p10, p01 = (psi - delta) / 2, (psi + delta) / 2
    expected = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            if b + c and binomtest(c, b + c, 0.5).pvalue <= 0.05:
                expected += float(multinomial.pmf([b, c, n - b - c], n, [p10, p01, 1 - psi]))
    assert mcnemar_exact_power(n, discordance=psi, delta=delta) == pytest.approx(
        expected, abs=1e-12
    )


def test_connor_against_simulated_mcnemar_tests() -> None:
    """4,000 seeded multinomial draws of n = 200 pairs, ψ = 0.2, δ = 0.08 (p10 = 0.06, p01 = 0.14).

    Observed: Connor's approximation 0.7188; the large-sample z test (|c - b|/√(b + c) > z)
    rejects in 0.7210 of the draws; the exact conditional test (scipy's binomtest, p ≤ 0.05) in
    0.6718, against its exact power 0.6770. Connor's formula is the z test's power (gap 0.002);
    for the exact test that compare runs it is optimistic by about 0.047 here (0.07 at n = 100,
    ψ = 0.2, δ = 0.1), the known conservatism of the discrete test, which mcnemar_exact_power
    gets right. The Monte Carlo standard error is 0.0074.
    """
    import numpy as np
    from scipy.stats import binomtest

    @cache
    def exact_rejects(b: int, c: int) -> bool:
        return b + c > 0 and binomtest(c, b + c, 0.5).pvalue <= 0.05

    n, psi, delta = 200, 0.2, 0.08
    draws = np.random.default_rng(2024).multinomial(n, [0.06, 0.14, 0.8], size=4000)
    exact = sum(exact_rejects(int(b), int(c)) for b, c, _ in draws) / len(draws)
    z_test = sum(b + c > 0 and abs(c - b) / math.sqrt(b + c) > Z975 for b, c, _ in draws) / len(
        draws
    )
    connor = mcnemar_power(n, discordance=psi, delta=delta)
    assert connor == pytest.approx(0.7188, abs=1e-4)
    assert exact == pytest.approx(0.67175, abs=1e-9)
    assert z_test == pytest.approx(0.72100, abs=1e-9)
    assert abs(connor - z_test) <= 0.03
    assert 0.0 < connor - exact <= 0.07
    assert abs(mcnemar_exact_power(n, discordance=psi, delta=delta) - exact) <= 0.025


def test_cases_to_detect_is_connor_for_a_drop() -> None:
    assert cases_to_detect(0.1, discordance=0.2) == 155
    assert cases_to_detect(0.05, discordance=0.1, power=0.9) == mcnemar_sample_size(
        discordance=0.1, delta=0.05, power=0.9
    )
    with pytest.raises(ValueError, match="needs at least 0.05 of the cases to flip"):
        cases_to_detect(0.05, discordance=0.03)
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        cases_to_detect(0.0, discordance=0.1)


def test_planning_discordance() -> None:
    seen = planning_discordance(12, 100)
    assert seen.value == 0.12
    assert seen.reason is None
    assert seen.upper > 0.12
    # no flip: no value; the Wilson upper bound z²/(n + z²) = 3.841459/103.841459 = 0.036993
    none = planning_discordance(0, 100)
    assert none.value is None
    assert none.upper == pytest.approx(0.036993, abs=1e-6)
    assert none.reason is not None and "no case of 100 flipped" in none.reason
    with pytest.raises(ValueError, match="between 0 and the 10 cases"):
        planning_discordance(11, 10)


def test_two_proportion_sample_size_by_hand() -> None:
    # p1 = 0.5, p2 = 0.4: p̄ = 0.45; √(2·0.45·0.55) = 0.703562, √(0.25 + 0.24) = 0.7
    # n' = (1.959964·0.703562 + 0.841621·0.7)² / 0.1² = (1.378956 + 0.589135)² / 0.01 = 387.34
    # Fleiss's continuity correction: 387.34/4 · (1 + √(1 + 4/38.734))² = 96.835·4.2040 = 407.1
    plain = (Z975 * math.sqrt(2 * 0.45 * 0.55) + Z80 * 0.7) ** 2 / 0.01
    assert plain == pytest.approx(387.34, abs=0.01)
    corrected = plain / 4 * (1 + math.sqrt(1 + 4 / (plain * 0.1))) ** 2
    assert corrected == pytest.approx(407.1, abs=0.05)
    assert two_proportion_sample_size(0.5, 0.4, continuity=False) == 388
    assert two_proportion_sample_size(0.5, 0.4) == 408
    assert two_proportion_sample_size(0.4, 0.5) == 408


def test_two_proportion_sample_size_reaches_the_power_of_the_z_test() -> None:
    # without the correction, n per group gives the pooled z test its power:
    # Φ((Δ√n - z_a·√(2p̄q̄)) / √(p1q1 + p2q2)) ≥ 0.8 at n and < 0.8 at n - 1
    for p1, p2 in [(0.9, 0.8), (0.3, 0.35), (0.05, 0.15)]:
        n = two_proportion_sample_size(p1, p2, continuity=False)
        mean = (p1 + p2) / 2

        def power(m: int, p1: float = p1, p2: float = p2, mean: float = mean) -> float:
            spread = math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
            return normal_cdf(
                (abs(p1 - p2) * math.sqrt(m) - Z975 * math.sqrt(2 * mean * (1 - mean))) / spread
            )

        assert power(n) >= 0.8 > power(n - 1)


def test_effective_cases_is_kish_design_effect() -> None:
    # 100 cases of 5 runs with ρ = 0.25: 500 / (1 + 4·0.25) = 250
    assert effective_cases(100, repeats=5, icc=0.25) == 250.0
    assert effective_cases(100, repeats=5, icc=0.0) == 500.0
    assert effective_cases(100, repeats=5, icc=1.0) == 100.0
    assert effective_cases(100, repeats=1, icc=0.7) == 100.0
    with pytest.raises(ValueError, match="intraclass correlation"):
        effective_cases(10, repeats=2, icc=1.5)
    with pytest.raises(ValueError, match="at least once"):
        effective_cases(10, repeats=0, icc=0.1)
    with pytest.raises(ValueError, match=">= 0"):
        effective_cases(-1, repeats=2, icc=0.1)


def test_holm_by_hand() -> None:
    # sorted: 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04; running max:
    # 0.02, 0.03, 0.06, 0.06; back in input order:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    assert holm_reject([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []


def _holm_by_definition(p: list[float]) -> list[float]:
    """p̃_(i) = max_{j ≤ i} min(1, (m - j + 1)·p_(j)), every i from scratch (1-based j)."""
    m = len(p)
    ordered = sorted(p)
    adjusted_sorted = [
        max(min(1.0, (m - j + 1) * ordered[j - 1]) for j in range(1, i + 1))
        for i in range(1, m + 1)
    ]
    # a tied value has one adjusted value, whichever of its places it takes
    by_value = dict(zip(ordered, adjusted_sorted, strict=True))
    return [by_value[x] for x in p]


def _holm_step_down(p: list[float], alpha: float) -> list[bool]:
    """Holm's procedure: reject p_(j) ≤ α/(m - j + 1) in order, and stop at the first that fails."""
    m = len(p)
    rejected = [False] * m
    for j, index in enumerate(sorted(range(m), key=lambda i: p[i]), start=1):
        if p[index] > alpha / (m - j + 1):
            break
        rejected[index] = True
    return rejected


def test_holm_against_the_definition_and_the_step_down_procedure() -> None:
    rng = random.Random(21)
    for _ in range(500):
        m = rng.randint(1, 12)
        pool = [0.001, 0.003, 0.007, 0.02, 0.2, 0.7]  # ties, away from the α boundaries
        p = [rng.choice(pool) if rng.random() < 0.4 else rng.random() ** 3 for _ in range(m)]
        adjusted = holm(p)
        assert adjusted == pytest.approx(_holm_by_definition(p), abs=1e-15)
        assert all(a >= x for a, x in zip(adjusted, p, strict=True))
        assert all(a <= 1.0 for a in adjusted)
        order = sorted(range(m), key=lambda i: p[i])
        assert all(adjusted[i] <= adjusted[j] for i, j in zip(order, order[1:], strict=False))
        for alpha in (0.01, 0.05, 0.1):
            assert holm_reject(p, alpha=alpha) == _holm_step_down(p, alpha)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mcnemar_power(0, discordance=0.2, delta=0.1), "at least 1"),
        (lambda: mcnemar_power(10, discordance=1.5, delta=0.1), r"in \[0, 1\]"),
        (lambda: mcnemar_power(10, discordance=0.0, delta=0.0), "nothing to count"),
        (lambda: mcnemar_power(10, discordance=0.1, delta=0.2), "more than the discordance"),
        (lambda: mcnemar_power(10, discordance=0.2, delta=0.1, alpha=0.0), "alpha"),
        (lambda: mcnemar_power(10, discordance=0.2, delta=0.1, alpha=1.0), "alpha"),
        (lambda: mcnemar_sample_size(discordance=0.2, delta=0.0), "difference of 0"),
        (lambda: mcnemar_sample_size(discordance=0.2, delta=0.1, power=1.0), "target power"),
        (lambda: mcnemar_sample_size(discordance=0.2, delta=0.1, power=0.02), "target power"),
        (lambda: minimum_detectable_difference(0, discordance=0.2), "at least 1"),
        (lambda: mcnemar_exact_power(10, discordance=0.2, delta=0.3), "more than"),
        (lambda: two_proportion_sample_size(0.3, 0.3), "equal"),
        (lambda: two_proportion_sample_size(1.2, 0.3), r"p1 is a rate in \[0, 1\]"),
        (lambda: holm([0.1, 1.2]), r"p-value is in \[0, 1\]"),
        (lambda: holm_reject([0.1], alpha=2.0), "alpha"),
        (lambda: planning_discordance(0, 0), "at least 1"),
    ],
)
def test_bad_arguments_raise_value_error(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=message):
        call()


def test_the_detectable_change_counts_the_flips_a_change_needs() -> None:
    from coalmine._util.power import mcnemar_power, minimum_detectable_change

    # with enough flips observed it is the fixed-discordance answer
    assert minimum_detectable_change(100, discordance=0.2) == minimum_detectable_difference(
        100, discordance=0.2
    )
    # with few (or their upper bound, none), a change larger than the flips: ψ = δ, power 0.8
    for n, psi in [(1000, 0.0038), (5000, 0.0014), (200, 0.01)]:
        assert minimum_detectable_difference(n, discordance=psi) is None
        d = minimum_detectable_change(n, discordance=psi)
        assert d is not None and d > psi
        assert mcnemar_power(n, discordance=d, delta=d) == pytest.approx(0.8, abs=1e-9)
    assert minimum_detectable_change(3, discordance=0.1) is None  # √3 < 1.96: never
