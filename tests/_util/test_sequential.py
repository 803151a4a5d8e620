"""The sequential gate: hand-computed bets, and wrong decisions at most alpha over 2,000 runs."""

from __future__ import annotations

import math
import random

import pytest

from coalmine._util.sequential import GateSequence


def test_the_first_bets_are_the_papers_plug_in_by_hand() -> None:
    gate = GateSequence(threshold=0.5, size=4, alpha=0.05)
    # t = 1: σ̂²_0 = 1/4; λ = sqrt(2 log 40 / (1/4 · 1 · log 2)) = 6.525…, cut to c/m = 0.5/0.5 = 1
    # m_1 = (0.5 · 4 − 0) / 4 = 0.5: the pass bettor gains 1 + 1·(1 − 0.5), the fail one 1 − 0.5
    assert gate.add(1.0) is None
    assert gate.log_pass == pytest.approx(math.log(1.5))
    assert gate.log_fail == pytest.approx(math.log(0.5))
    # t = 2: μ̂_1 = (1/2 + 1)/2 = 0.75, σ̂²_1 = (1/4 + (1 − 0.75)²)/2 = 0.15625
    # λ = sqrt(2 log 40 / (0.15625 · 2 · log 3)) = 4.6357…; m_2 = (2 − 1)/3 = 1/3
    # up = min(λ, 0.5 / (1/3)) = 1.5, down = min(λ, 0.5 / (2/3)) = 0.75; the value drawn is 0
    lam = math.sqrt(2 * math.log(40) / (0.15625 * 2 * math.log(3)))
    assert lam == pytest.approx(4.6357, abs=1e-4)
    assert gate.add(0.0) is None
    assert gate.log_pass == pytest.approx(math.log(1.5) + math.log(1 - 1.5 / 3))
    assert gate.log_fail == pytest.approx(math.log(0.5) + math.log(1 + 0.75 / 3))


def test_counting_decides_when_the_rest_cannot_change_the_answer() -> None:
    gate = GateSequence(threshold=0.75, size=4)
    assert [gate.add(v) for v in (0.0, 0.0)] == [None, "fail"]  # at most 2 of 4 can pass now
    assert gate.decided_at == 2
    gate = GateSequence(threshold=0.5, size=4)
    assert [gate.add(v) for v in (1.0, 1.0)] == [None, "pass"]  # at least 2 of 4 pass
    assert GateSequence(threshold=0.0, size=3).decision == "pass"  # nothing to draw for that


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="alpha"):
        GateSequence(threshold=0.5, size=3, alpha=1.5)
    gate = GateSequence(threshold=0.5, size=1)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        gate.add(1.5)
    gate.add(1.0)
    with pytest.raises(ValueError, match="more draws"):
        gate.add(1.0)


def _run(passing: int, size: int, threshold: float, rng: random.Random) -> tuple[str, int]:
    suite = [1.0] * passing + [0.0] * (size - passing)
    rng.shuffle(suite)
    gate = GateSequence(threshold=threshold, size=size, alpha=0.05)
    for value in suite:
        if gate.add(value) is not None:
            break
    assert gate.decision is not None and gate.decided_at is not None  # all drawn: decided
    return gate.decision, gate.decided_at


@pytest.mark.parametrize("passing", [120, 150, 159, 160, 161, 170, 190])
def test_wrong_decisions_stay_at_or_under_alpha_over_2000_runs(passing: int) -> None:
    size, threshold = 200, 0.8  # 160 of 200 is exactly the threshold: a pass
    rng = random.Random(passing)
    truth = "pass" if passing / size >= threshold else "fail"
    wrong = sum(_run(passing, size, threshold, rng)[0] != truth for _ in range(2000))
    assert wrong / 2000 <= 0.05


def test_ten_points_from_the_threshold_most_of_the_suite_is_saved() -> None:
    rng = random.Random(7)
    saved = []
    for passing in (140, 180):  # 0.7 and 0.9 against a threshold of 0.8
        drawn = [_run(passing, 200, 0.8, rng)[1] for _ in range(2000)]
        saved.append(1 - sum(drawn) / len(drawn) / 200)
    assert min(saved) > 0.3  # the note states the figures (test -s prints them)
    print(f"saved at 0.7: {saved[0]:.1%}, at 0.9: {saved[1]:.1%}")


def test_a_case_with_no_value_makes_the_suite_one_smaller_and_may_decide_by_counting() -> None:
    gate = GateSequence(threshold=0.6, size=4)
    gate.add(1.0)
    gate.add(1.0)
    assert gate.decision is None  # 2 of 4: the rate ends between 0.5 and 1, either side of 0.6
    assert gate.remove_one() == "pass"  # of 3, two passes are >= 2/3 whatever the last one does
    assert gate.size == 3 and gate.decided_at == 2


def test_remove_one_refuses_when_no_undrawn_case_is_left() -> None:
    gate = GateSequence(threshold=0.5, size=2)
    gate.add(1.0)
    gate.add(0.0)
    with pytest.raises(ValueError, match="no undrawn case"):
        gate.remove_one()
