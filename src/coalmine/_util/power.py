"""What a comparison can detect: power, sample sizes and multiple testing (stdlib only).

Paired pass/fail outcomes (the same cases in two runs) are compared by McNemar's test, which
counts only the cases that flip. Write ``p10`` for the share that passed before and fail now,
``p01`` for the reverse, the *discordance* ``ψ = p10 + p01`` and the change in pass rate
``δ = p01 - p10`` (so ``|δ| ≤ ψ ≤ 1``). With ``n`` paired cases, a two-sided level ``α`` and
``z_q`` the standard normal quantile, Connor's normal approximation (Connor 1987, Biometrics 43,
after Miettinen 1968) gives

- power: ``Φ((|δ|·√n - z_{1-α/2}·√ψ) / √(ψ - δ²))``; it counts one tail only, so at ``δ = 0``
  it is ``α/2``;
- sample size: ``n = ⌈(z_{1-α/2}·√ψ + z_power·√(ψ - δ²))² / δ²⌉``, the smallest ``n`` whose
  power reaches the target (the ceiling is checked against the power, so rounding cannot make
  it one case off);
- the minimum detectable difference at ``n``: the smallest ``|δ|`` whose power reaches the
  target, found by bisection. The power rises with ``|δ|`` up to ``√(n·ψ) / z_{1-α/2}`` (its
  derivative has the sign of ``√n·ψ - z·√ψ·|δ|``), which is beyond ``ψ`` unless ``n < z²·ψ``;
  the search runs on ``(0, min(ψ, √(n·ψ)/z)]`` and finds nothing when even its end falls short.

Connor's formulas describe the large-sample (z) test. The exact conditional test that
``compare`` runs (``stats.mcnemar_exact``) is discrete and conservative, and its power is lower:
``mcnemar_exact_power`` computes it exactly, ``Σ_m P(M = m)·P(reject | m)`` with the flips
``M ~ Binomial(n, ψ)`` and, given ``m``, the fail→pass flips ``C ~ Binomial(m, (ψ + |δ|)/(2ψ))``.
At ``n = 200, ψ = 0.2, δ = 0.08`` Connor says 0.719 and the exact test has 0.677.

``ψ`` must be assumed before a comparison is run. ``planning_discordance`` takes it from two
earlier runs of the same cases: ``flips / n``, and Wilson's 95% upper bound as the
conservative choice (a larger ``ψ`` needs more cases for the same ``δ``). When nothing flipped
the observed share is 0, which would claim any difference is detectable; it gives no value
then, with the reason, and the caller passes an assumed one (or the upper bound).

Unpaired fallback (two independent groups): Fleiss's sample size per group, with ``p̄`` the mean
of the two rates, ``q = 1 - p`` and ``Δ = |p1 - p2|``,
``n' = (z_{1-α/2}·√(2·p̄·q̄) + z_power·√(p1·q1 + p2·q2))² / Δ²``, and with Fleiss's continuity
correction (Fleiss, Levin & Paik 2003, eq. 4.14) ``n = n'/4 · (1 + √(1 + 4/(n'·Δ)))²``.

Repeats: a case run ``r`` times with intraclass correlation ``ρ`` between its runs is worth
``n·r / (1 + (r - 1)·ρ)`` independent runs (Kish's design effect ``1 + (r - 1)·ρ``).

Several comparisons at once: Holm's step-down adjustment. With the ``m`` p-values sorted,
``p_(1) ≤ … ≤ p_(m)``, the adjusted ``p̃_(i) = max_{j ≤ i} min(1, (m - j + 1)·p_(j))``; rejecting
where ``p̃ ≤ α`` controls the family-wise error rate at ``α`` (Holm 1979).

``normal_quantile`` is Acklam's rational approximation (relative error below 1.2e-9) refined by
one Halley step on ``Φ(x) = erfc(-x/√2)/2``, which brings it to machine precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coalmine._util.estimate import Z95, wilson_interval

# Acklam's coefficients: the central region (a, b) and the tails (c, d).
_A = (
    -3.969683028665376e01,
    2.209460984245205e02,
    -2.759285104469687e02,
    1.383577518672690e02,
    -3.066479806614716e01,
    2.506628277459239e00,
)
_B = (
    -5.447609879822406e01,
    1.615858368580409e02,
    -1.556989798598866e02,
    6.680131188771972e01,
    -1.328068155288572e01,
)
_C = (
    -7.784894002430293e-03,
    -3.223964580411365e-01,
    -2.400758277161838e00,
    -2.549732539343734e00,
    4.374664141464968e00,
    2.938163982698783e00,
)
_D = (
    7.784695709041462e-03,
    3.224671290700398e-01,
    2.445134137142996e00,
    3.754408661907416e00,
)
_P_LOW = 0.02425
_BISECTION_TOLERANCE = 1e-12


def normal_cdf(x: float) -> float:
    """``Φ(x) = erfc(-x/√2) / 2``, accurate in both tails."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def normal_quantile(p: float) -> float:
    """The inverse standard normal CDF, ``Φ⁻¹(p)`` for ``0 < p < 1``."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"a normal quantile needs 0 < p < 1, not {p}")
    if p > 0.5:
        return -_lower_quantile(1.0 - p)  # exact: 1 - p has no rounding for p in [0.5, 1]
    return _lower_quantile(p)


def _lower_quantile(p: float) -> float:
    """``Φ⁻¹(p)`` for ``0 < p ≤ 0.5``: Acklam's approximation, then one Halley step."""
    if p < _P_LOW:
        q = math.sqrt(-2.0 * math.log(p))
        num = ((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]
        x = num / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0)
    else:
        q = p - 0.5
        r = q * q
        num = (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q
        x = num / (((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0)
    # u = (Φ(x) - p) / φ(x), with p factored out so that exp(x²/2) cannot overflow far out
    u = (normal_cdf(x) / p - 1.0) * math.exp(math.log(p) + x * x / 2.0) * math.sqrt(2.0 * math.pi)
    return x - u / (1.0 + x * u / 2.0)


def mcnemar_power(n: int, *, discordance: float, delta: float, alpha: float = 0.05) -> float:
    """Connor's power of McNemar's test: ``Φ((|δ|·√n - z_{1-α/2}·√ψ) / √(ψ - δ²))``.

    Args:
        n: Paired cases.
        discordance: ``ψ``, the share of cases that flip either way.
        delta: ``δ``, the change in pass rate (``p01 - p10``); its sign does not matter.
        alpha: The two-sided level.
    """
    _check_n(n)
    _check_paired(discordance, delta)
    z = normal_quantile(1.0 - _check_alpha(alpha) / 2.0)
    numerator = abs(delta) * math.sqrt(n) - z * math.sqrt(discordance)
    spread = discordance - delta * delta
    if spread <= 0.0:  # every case flips the same way: no variance left
        return 1.0 if numerator > 0.0 else 0.0
    return normal_cdf(numerator / math.sqrt(spread))


def mcnemar_exact_power(n: int, *, discordance: float, delta: float, alpha: float = 0.05) -> float:
    """The exact power of the exact (conditional binomial) McNemar test that ``compare`` runs.

    ``Σ_m P(M = m) · P(min(B, C) ≤ k_m | m)``: ``M = B + C ~ Binomial(n, ψ)`` flips, and given
    ``m`` of them ``C ~ Binomial(m, (ψ + δ)/(2ψ))``; ``k_m`` is the largest ``k`` with
    ``2·P(X ≤ k) ≤ α`` for ``X ~ Binomial(m, 1/2)``. Values of ``m`` more than 10 standard
    deviations from ``n·ψ`` are left out (their probability is below 1e-20).
    """
    _check_n(n)
    _check_paired(discordance, delta)
    _check_alpha(alpha)
    share = (discordance + abs(delta)) / (2.0 * discordance)
    spread = 10.0 * math.sqrt(n * discordance * (1.0 - discordance)) + 10.0
    low = max(0, math.floor(n * discordance - spread))
    high = min(n, math.ceil(n * discordance + spread))
    total = 0.0
    for m in range(low, high + 1):
        weight = math.exp(_log_binomial_pmf(m, n, discordance))
        total += weight * _rejection_chance(m, alpha, share)
    return min(1.0, total)


def _rejection_chance(m: int, alpha: float, share: float) -> float:
    """``P(C ≤ k_m) + P(C ≥ m - k_m)`` for ``C ~ Binomial(m, share)``, in one pass over ``k``.

    The pass stops at the first ``k`` where the null's ``2·P(X ≤ k)`` exceeds ``α``; the log
    binomial coefficient is carried from one ``k`` to the next.
    """
    log_half = m * math.log(0.5)
    log_p = math.log(share) if share > 0.0 else -math.inf
    log_q = math.log1p(-share) if share < 1.0 else -math.inf
    log_comb = 0.0
    null_cdf = chance = 0.0
    for k in range(m // 2 + 1):
        null_cdf += math.exp(log_comb + log_half)
        if 2.0 * null_cdf > alpha:
            break
        # C = k (few of the one kind of flip) or C = m - k (few of the other)
        chance += _exp_sum(log_comb, k, log_p, m - k, log_q)
        chance += _exp_sum(log_comb, m - k, log_p, k, log_q)
        log_comb += math.log(m - k) - math.log(k + 1)
    return min(1.0, chance)


def _exp_sum(log_comb: float, a: int, log_p: float, b: int, log_q: float) -> float:
    """``C(m, k)·p^a·q^b`` from logs, with ``0·log 0 = 0``."""
    log_value = log_comb + (a * log_p if a else 0.0) + (b * log_q if b else 0.0)
    return math.exp(log_value)


def _log_binomial_pmf(k: int, m: int, p: float) -> float:
    if p == 1.0:
        return 0.0 if k == m else -math.inf
    return (
        math.lgamma(m + 1)
        - math.lgamma(k + 1)
        - math.lgamma(m - k + 1)
        + k * math.log(p)
        + (m - k) * math.log1p(-p)
    )


def mcnemar_sample_size(
    *, discordance: float, delta: float, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Connor's paired cases: ``⌈(z_{1-α/2}·√ψ + z_power·√(ψ - δ²))² / δ²⌉``.

    The result is the smallest ``n`` with ``mcnemar_power(n, …) ≥ power``.
    """
    _check_paired(discordance, delta)
    if delta == 0.0:
        raise ValueError("a difference of 0 cannot be detected; give the change to detect")
    _check_power(power, alpha)
    z_alpha = normal_quantile(1.0 - alpha / 2.0)
    z_power = normal_quantile(power)
    spread = max(discordance - delta * delta, 0.0)
    root = z_alpha * math.sqrt(discordance) + z_power * math.sqrt(spread)
    n = max(1, math.ceil(root * root / (delta * delta)))

    def reaches(cases: int) -> bool:
        return mcnemar_power(cases, discordance=discordance, delta=delta, alpha=alpha) >= power

    while n > 1 and reaches(n - 1):
        n -= 1
    while not reaches(n):
        n += 1
    return n


def minimum_detectable_difference(
    n: int, *, discordance: float, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """The smallest ``|δ|`` that ``n`` paired cases detect with ``power``; ``None`` if none.

    Bisection on ``(0, min(ψ, √(n·ψ)/z_{1-α/2})]``, where Connor's power rises with ``|δ|``.
    """
    _check_n(n)
    _check_paired(discordance, 0.0)
    _check_power(power, alpha)
    z = normal_quantile(1.0 - alpha / 2.0)
    hi = min(discordance, math.sqrt(n * discordance) / z)
    if mcnemar_power(n, discordance=discordance, delta=hi, alpha=alpha) < power:
        return None
    # at 0 the power is alpha/2 < power
    return _smallest(
        0.0, hi, lambda d: mcnemar_power(n, discordance=discordance, delta=d, alpha=alpha) >= power
    )


def _smallest(lo: float, hi: float, enough: Callable[[float], bool]) -> float:
    """The smallest ``x`` in ``(lo, hi]`` with ``enough(x)``, by bisection (``enough`` rises)."""
    while hi - lo > _BISECTION_TOLERANCE:
        mid = (lo + hi) / 2.0
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi


def minimum_detectable_change(
    n: int, *, discordance: float, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """The smallest change in pass rate ``n`` paired cases detect, the flips it needs counted.

    :func:`minimum_detectable_difference` holds ``ψ`` fixed, so it can never find a change
    above ``ψ``: with few flips observed (or none, and ``ψ`` their upper bound) it finds nothing,
    although a real change of ``δ`` would itself flip at least ``δ`` of the cases. Here the
    discordance is ``max(ψ, |δ|)``: when the fixed-``ψ`` search finds nothing, the answer is the
    smallest ``|δ| ≥ ψ`` whose power, with every flip going the way of the change
    (``ψ = |δ|``: ``Φ((|δ|·√n - z_{1-α/2}·√|δ|) / √(|δ| - δ²))``), reaches ``power``, found by
    bisection (that power rises with ``|δ|``: it is ``Φ((√(n·|δ|) - z) / √(1 - |δ|))``).
    ``None`` when even ``|δ| = 1`` is not detected (``n`` below about 8 cases).
    """
    found = minimum_detectable_difference(n, discordance=discordance, alpha=alpha, power=power)
    if found is not None:
        return found

    def enough(delta: float) -> bool:
        if delta >= 1.0:
            return math.sqrt(n) > normal_quantile(1.0 - alpha / 2.0)  # Φ(+∞) once √n > z
        return mcnemar_power(n, discordance=delta, delta=delta, alpha=alpha) >= power

    lo, hi = max(discordance, 1e-15), 1.0
    if not enough(hi) or not hi > lo:
        return None
    return lo if enough(lo) else _smallest(lo, hi, enough)


def cases_to_detect(
    drop: float, *, discordance: float, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Paired cases to detect a pass-rate drop of ``drop``: ``mcnemar_sample_size``.

    A drop of ``d`` needs at least a share ``d`` of the cases to flip, so ``drop ≤ ψ``.
    """
    if not 0.0 < drop <= 1.0:
        raise ValueError(f"a drop to detect is in (0, 1], not {drop}")
    if drop > discordance:
        raise ValueError(
            f"a drop of {drop:g} needs at least {drop:g} of the cases to flip, but the assumed "
            f"discordance is {discordance:g}: assume a larger one"
        )
    return mcnemar_sample_size(discordance=discordance, delta=drop, alpha=alpha, power=power)


@dataclass(frozen=True)
class PlanningDiscordance:
    """The discordance to plan with, from the flips between two runs of the same cases."""

    value: float | None
    """``flips / n``; ``None`` when nothing flipped (see ``reason``)."""
    upper: float
    """Wilson's 95% upper bound on the share: the conservative value to plan with."""
    flips: int
    n: int
    reason: str | None = None


def planning_discordance(observed_flips: int, n: int) -> PlanningDiscordance:
    """The observed share of flips ``observed_flips / n`` and its Wilson 95% upper bound."""
    _check_n(n)
    if not 0 <= observed_flips <= n:
        raise ValueError(f"flips must be between 0 and the {n} cases, not {observed_flips}")
    upper = wilson_interval(observed_flips, n, Z95)[1]
    if observed_flips == 0:
        reason = (
            f"no case of {n} flipped between the runs, so the observed discordance is 0 and "
            "says nothing of what a change would flip; assume one (the upper bound "
            f"{upper:.3g} is conservative)"
        )
        return PlanningDiscordance(None, upper, 0, n, reason)
    return PlanningDiscordance(observed_flips / n, upper, observed_flips, n)


def two_proportion_sample_size(
    p1: float,
    p2: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    continuity: bool = True,
) -> int:
    """Cases per group to tell rates ``p1`` and ``p2`` apart in two independent groups.

    Fleiss: ``n' = (z_{1-α/2}·√(2·p̄·q̄) + z_power·√(p1·q1 + p2·q2))² / Δ²``; with the
    continuity correction (the default) ``n = n'/4 · (1 + √(1 + 4/(n'·Δ)))²``; rounded up.
    """
    _check_rate(p1, "p1")
    _check_rate(p2, "p2")
    if p1 == p2:
        raise ValueError("the two rates are equal: there is no difference to detect")
    _check_power(power, alpha)
    z_alpha = normal_quantile(1.0 - alpha / 2.0)
    z_power = normal_quantile(power)
    mean = (p1 + p2) / 2.0
    gap = abs(p1 - p2)
    root = z_alpha * math.sqrt(2.0 * mean * (1.0 - mean)) + z_power * math.sqrt(
        p1 * (1.0 - p1) + p2 * (1.0 - p2)
    )
    n = root * root / (gap * gap)
    if continuity:
        n = n / 4.0 * (1.0 + math.sqrt(1.0 + 4.0 / (n * gap))) ** 2
    return math.ceil(n - 1e-9)  # a whole n computed as 100.00000000000001 stays 100


def effective_cases(n_cases: int, *, repeats: int, icc: float) -> float:
    """Independent runs that ``n_cases`` cases of ``repeats`` runs are worth: ``n·r/(1+(r-1)·ρ)``.

    ``icc`` (``ρ``) is the correlation between two runs of the same case: 0 makes every run
    count, 1 makes the repeats worth one run per case.
    """
    if n_cases < 0:
        raise ValueError(f"the number of cases is >= 0, not {n_cases}")
    if repeats < 1:
        raise ValueError(f"a case runs at least once, not {repeats} times")
    if not 0.0 <= icc <= 1.0:
        raise ValueError(f"the intraclass correlation is in [0, 1], not {icc}")
    return n_cases * repeats / (1.0 + (repeats - 1) * icc)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values in input order: ``p̃_(i) = max_{j≤i} min(1, (m-j+1)·p_(j))``."""
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"a p-value is in [0, 1], not {p}")
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def holm_reject(p_values: Sequence[float], *, alpha: float = 0.05) -> list[bool]:
    """Which hypotheses Holm's procedure rejects at family-wise level ``alpha``: ``p̃ ≤ α``."""
    _check_alpha(alpha)
    return [p <= alpha for p in holm(p_values)]


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"the number of paired cases is at least 1, not {n}")


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha}")
    return alpha


def _check_power(power: float, alpha: float) -> None:
    _check_alpha(alpha)
    if not alpha / 2.0 < power < 1.0:
        raise ValueError(
            f"the target power must be between alpha/2 (the power at no difference) and 1, "
            f"not {power}"
        )


def _check_rate(p: float, name: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} is a rate in [0, 1], not {p}")


def _check_paired(discordance: float, delta: float) -> None:
    if not 0.0 <= discordance <= 1.0:
        raise ValueError(f"the discordance is a share of cases in [0, 1], not {discordance}")
    if discordance == 0.0:
        raise ValueError(
            "a discordance of 0 means no case flips, and McNemar's test has nothing to count; "
            "assume one (see planning_discordance)"
        )
    if abs(delta) > discordance:
        raise ValueError(
            f"a change of {delta:g} needs at least {abs(delta):g} of the cases to flip, more "
            f"than the discordance {discordance:g}"
        )
