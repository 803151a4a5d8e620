"""Judge calibration statistics against hand-computed values."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from coalmine._util.estimate import wilson_interval
from coalmine.judge.stats import (
    Confusion,
    Rate,
    agreement,
    best_threshold,
    cohen_kappa,
    confusion,
    f1,
    false_block_rate,
    false_pass_rate,
    majority_label,
    precision,
    quorum,
    recall,
    rerun_stability,
    score_spread,
)

P, F, U = "pass", "fail", "unsure"

# 20 items: tp = 8 (both pass), fp = 2 (judge pass, human fail), tn = 6 (both fail),
# fn = 4 (judge fail, human pass). Humans pass 12, judge passes 10.
HUMAN = [P] * 8 + [F] * 2 + [F] * 6 + [P] * 4
JUDGE = [P] * 8 + [P] * 2 + [F] * 6 + [F] * 4
TABLE = Confusion(tp=8, fp=2, tn=6, fn=4)


def test_confusion_counts() -> None:
    c = confusion(HUMAN, JUDGE)
    assert c == TABLE
    assert c.n == 20


def test_confusion_of_nothing() -> None:
    assert confusion([], []) == Confusion(0, 0, 0, 0)


@pytest.mark.parametrize(
    ("human", "judge", "match"),
    [
        ([P, F], [P], "lengths differ"),
        ([P, "PASS"], [P, F], "unknown verdict 'PASS': use pass or fail"),
        ([P, F], [P, U], "unknown verdict 'unsure'"),
    ],
)
def test_confusion_rejects(human: list[str], judge: list[str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        confusion(human, judge)


def test_negative_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        Confusion(tp=1, fp=-1, tn=0, fn=0)


def test_rates_hand_values() -> None:
    # agreement   (tp + tn)/n   = (8 + 6)/20 = 14/20 = 0.7
    # false pass  fp/(fp + tn)  = 2/(2 + 6)  = 2/8   = 0.25
    # false block fn/(fn + tp)  = 4/(4 + 8)  = 4/12  = 0.3333
    # precision   tp/(tp + fp)  = 8/10       = 0.8
    # recall      tp/(tp + fn)  = 8/12       = 0.6667
    # F1 = 2·0.8·0.6667/(0.8 + 0.6667) = 1.0667/1.4667 = 0.7273 (= 2·8/(16 + 2 + 4) = 16/22)
    assert _num(agreement(TABLE)) == (14, 20, 0.7)
    assert _num(false_pass_rate(TABLE)) == (2, 8, 0.25)
    assert _num(false_block_rate(TABLE)) == (4, 12, 4 / 12)
    assert _num(precision(TABLE)) == (8, 10, 0.8)
    assert _num(recall(TABLE)) == (8, 12, 8 / 12)
    assert round(_val(false_block_rate(TABLE)), 4) == 0.3333
    assert round(_val(recall(TABLE)), 4) == 0.6667
    score = f1(TABLE)
    assert score is not None
    assert round(score, 4) == 0.7273
    assert score == pytest.approx(16 / 22)


def test_wilson_interval_of_false_pass_rate_by_hand() -> None:
    # Wilson for 2 of 8, z = 1.959964, z² = 3.841459, p = 0.25:
    #   denominator = 1 + z²/n               = 1 + 3.841459/8              = 1.480182
    #   centre      = (p + z²/2n)/denominator = (0.25 + 0.240091)/1.480182 = 0.331102
    #   half        = z·√(p(1-p)/n + z²/4n²)/denominator
    #               = 1.959964·√(0.0234375 + 0.0150057)/1.480182
    #               = 1.959964·0.196070/1.480182                          = 0.259624
    #   interval    = (0.331102 - 0.259624, 0.331102 + 0.259624)          = (0.0715, 0.5907)
    ci = false_pass_rate(TABLE).ci95
    assert ci is not None
    assert (round(ci[0], 4), round(ci[1], 4)) == (0.0715, 0.5907)
    assert ci == wilson_interval(2, 8)  # the shared implementation, not a copy


def test_every_rate_carries_its_wilson_interval() -> None:
    for rate in (agreement, false_pass_rate, false_block_rate, precision, recall):
        r = rate(TABLE)
        assert r.ci95 == wilson_interval(r.successes, r.n)


def test_no_items_means_no_rates() -> None:
    empty = Confusion(0, 0, 0, 0)
    assert empty.n == 0
    for rate in (agreement, false_pass_rate, false_block_rate, precision, recall):
        assert rate(empty) == Rate(value=None, successes=0, n=0, ci95=None)
    assert f1(empty) is None


def test_humans_pass_everything() -> None:
    # Humans pass all 4: nothing can slip through, so the false-pass rate is undefined.
    # tp = 3, fn = 1: false block 1/4, precision 3/3, recall 3/4, F1 = 2·3/(6 + 0 + 1) = 6/7.
    c = confusion([P, P, P, P], [P, P, P, F])
    assert c == Confusion(tp=3, fp=0, tn=0, fn=1)
    assert false_pass_rate(c) == Rate(None, 0, 0, None)
    assert _num(false_block_rate(c)) == (1, 4, 0.25)
    assert _num(precision(c)) == (3, 3, 1.0)
    assert _num(recall(c)) == (3, 4, 0.75)
    assert f1(c) == pytest.approx(6 / 7)


def test_f1_undefined_when_the_judge_never_passes() -> None:
    # tp + fp = 0: precision is 0/0, so F1 is undefined.
    c = Confusion(tp=0, fp=0, tn=5, fn=3)
    assert precision(c).value is None
    assert f1(c) is None


def test_f1_zero_when_precision_and_recall_are_zero() -> None:
    # P = 0/2 = 0, R = 0/3 = 0: P + R = 0, F1 = 0.
    c = Confusion(tp=0, fp=2, tn=1, fn=3)
    assert (precision(c).value, recall(c).value) == (0.0, 0.0)
    assert f1(c) == 0.0


@pytest.mark.parametrize(
    ("successes", "n"), [(-1, 3), (4, 3), (1, 0)], ids=["negative", "above n", "of nothing"]
)
def test_rate_of_rejects(successes: int, n: int) -> None:
    with pytest.raises(ValueError, match="0 <= successes <= n"):
        Rate.of(successes, n)


def test_kappa_hand_value() -> None:
    # p_o = (8 + 6)/20 = 0.7
    # judge passes 10/20, fails 10/20; humans pass 12/20, fail 8/20
    # p_e = (10/20·12/20) + (10/20·8/20) = 0.3 + 0.2 = 0.5
    # κ = (0.7 - 0.5)/(1 - 0.5) = 0.4
    assert cohen_kappa(HUMAN, JUDGE) == pytest.approx(0.4)
    assert cohen_kappa(JUDGE, HUMAN) == pytest.approx(0.4)  # symmetric


@pytest.mark.parametrize(
    ("a", "b", "kappa"),
    [
        # perfect agreement on a mix: p_o = 1, p_e = 0.5·0.5 + 0.5·0.5 = 0.5, κ = 0.5/0.5 = 1
        ([P, F, P, F], [P, F, P, F], 1.0),
        # chance-level: p_o = 2/4 = 0.5, p_e = 0.5, κ = 0
        ([P, P, F, F], [P, F, P, F], 0.0),
        # perfect disagreement: p_o = 0, p_e = 0.5, κ = (0 - 0.5)/0.5 = -1
        ([P, F], [F, P], -1.0),
        # one rater constant: p_o = 3/4, p_e = 1·3/4 + 0·1/4 = 0.75, κ = 0/0.25 = 0
        ([P, P, P, P], [P, P, P, F], 0.0),
        # agree on items 1, 2, 4, 5: p_o = 4/5 = 0.8; a passes 3/5, b passes 2/5
        # p_e = 3/5·2/5 + 2/5·3/5 = 0.24 + 0.24 = 0.48, κ = 0.32/0.52 = 0.6154
        ([P, P, P, F, F], [P, P, F, F, F], 0.32 / 0.52),
    ],
)
def test_kappa_small_tables(a: list[str], b: list[str], kappa: float) -> None:
    assert cohen_kappa(a, b) == pytest.approx(kappa)


def test_kappa_to_four_decimals() -> None:
    value = cohen_kappa([P, P, P, F, F], [P, P, F, F, F])
    assert value is not None
    assert round(value, 4) == 0.6154


def test_kappa_when_chance_agreement_is_certain() -> None:
    # Both raters pass everything: p_e = 1·1 + 0·0 = 1, so κ is 0/0; they agree on every item.
    assert cohen_kappa([P, P, P], [P, P, P]) == 1.0
    assert cohen_kappa([F, F], [F, F]) == 1.0


def test_kappa_of_nothing() -> None:
    assert cohen_kappa([], []) is None


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [([P, F], [P], "lengths differ"), ([P, F], [P, "yes"], "unknown verdict 'yes'")],
)
def test_kappa_rejects(a: list[str], b: list[str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cohen_kappa(a, b)


def test_rerun_stability_three_items_three_reruns() -> None:
    # item 1: pass pass pass -> stable; item 2: pass fail pass -> unstable;
    # item 3: fail fail fail -> stable. 2 stable of 3 = 0.6667.
    rate = rerun_stability([[P, P, P], [P, F, P], [F, F, F]])
    assert _num(rate) == (2, 3, 2 / 3)
    assert rate.ci95 == wilson_interval(2, 3)


def test_rerun_stability_counts_items_with_runs() -> None:
    # the empty item is left out; one run is stable: 2 stable of 3 items with runs
    rate = rerun_stability([[P], [], [F, F], [F, P]])
    assert _num(rate) == (2, 3, 2 / 3)
    assert rerun_stability([]) == Rate(None, 0, 0, None)
    assert rerun_stability([[], []]) == Rate(None, 0, 0, None)


def test_rerun_stability_rejects_bad_verdicts() -> None:
    with pytest.raises(ValueError, match="unknown verdict 'maybe'"):
        rerun_stability([[P, "maybe"]])


def test_score_spread() -> None:
    # spreads: 0.5 - 0.25 = 0.25; 0.75 - 0.75 = 0; 1.0 - 0.5 = 0.5; empty item left out
    # mean = (0.25 + 0 + 0.5)/3 = 0.25
    assert score_spread([[0.25, 0.5, 0.375], [0.75, 0.75, 0.75], [], [0.5, 1.0]]) == 0.25
    assert score_spread([]) is None
    assert score_spread([[], []]) is None


def test_quorum_majority_and_disagreement() -> None:
    verdicts = [
        [P, P, F],  # 2 of 3 pass -> pass, split
        [P, F],  # 1-1 tie -> fail, split
        [F, F, F],  # -> fail, unanimous
        [P, P, P],  # -> pass, unanimous
        [F, P, F, P],  # 2-2 tie -> fail, split
        [P],  # one judge -> pass, unanimous
    ]
    majority, disagreement = quorum(verdicts)
    assert majority == [P, F, F, P, F, P]
    # split on 3 of 6 items = 0.5
    assert _num(disagreement) == (3, 6, 0.5)
    assert disagreement.ci95 == wilson_interval(3, 6)


def test_quorum_of_nothing() -> None:
    assert quorum([]) == ([], Rate(None, 0, 0, None))


@pytest.mark.parametrize(
    ("verdicts", "match"),
    [([[P], []], "item 1 has no verdict"), ([[P, "Pass"]], "unknown verdict 'Pass'")],
)
def test_quorum_rejects(verdicts: list[list[str]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        quorum(verdicts)


def test_best_threshold_separable() -> None:
    # fails score 0.1, 0.3, 0.4; passes 0.6, 0.8, 0.9. t = 0.6: TPR 3/3, TNR 3/3, BA = 1;
    # t = 0.4: TPR 1, TNR 2/3, BA 0.8333; t = 0.8: TPR 2/3, TNR 1, BA 0.8333.
    scores = [0.1, 0.3, 0.4, 0.6, 0.8, 0.9]
    human = [F, F, F, P, P, P]
    assert best_threshold(scores, human, default=0.5) == 0.6
    assert best_threshold(scores[::-1], human[::-1], default=0.95) == 0.6  # order is irrelevant


def test_best_threshold_imbalanced_prefers_balanced_accuracy() -> None:
    # 8 passes: 0.1, 0.2, 0.25, 0.6, 0.7, 0.8, 0.9, 1.0; 2 fails: 0.3, 0.4.
    #   t = 0.1 (always pass): TP 8, TN 0 -> accuracy 8/10 = 0.8, BA (1 + 0)/2 = 0.5
    #   t = 0.4:               TP 5, TN 1 -> accuracy 0.6, BA (5/8 + 1/2)/2 = 0.5625
    #   t = 0.6:               TP 5, TN 2 -> accuracy 0.7, BA (5/8 + 1)/2 = 0.8125
    #   t = 0.7:               TP 4, TN 2 -> accuracy 0.6, BA (4/8 + 1)/2 = 0.75
    # Plain accuracy would pick "always pass"; balanced accuracy picks 0.6.
    scores = [0.1, 0.2, 0.25, 0.6, 0.7, 0.8, 0.9, 1.0, 0.3, 0.4]
    human = [P] * 8 + [F, F]
    assert _by_accuracy(scores, human) == 0.1
    assert best_threshold(scores, human, default=0.5) == 0.6


@pytest.mark.parametrize(
    ("default", "chosen"),
    [
        (0.75, 1.0),  # 0.5 and 1.0 are both 0.25 away: the higher one (0.75 itself is worse)
        (0.9, 1.0),  # the closest
        (0.0, 0.5),  # the closest
        (0.7, 0.5),  # the closest
    ],
)
def test_best_threshold_ties(default: float, chosen: float) -> None:
    # fails 0.25, 0.75; passes 0.5, 1.0:
    #   t = 0.25: TPR 2/2 (0.5, 1.0), TNR 0/2          -> BA 0.5
    #   t = 0.5:  TPR 2/2,            TNR 1/2 (0.25)   -> BA 0.75
    #   t = 0.75: TPR 1/2 (1.0),      TNR 1/2 (0.25)   -> BA 0.5
    #   t = 1.0:  TPR 1/2 (1.0),      TNR 2/2          -> BA 0.75
    # 0.5 and 1.0 tie at 0.75.
    scores = [0.25, 0.5, 0.75, 1.0]
    human = [F, P, F, P]
    assert best_threshold(scores, human, default=default) == chosen


@pytest.mark.parametrize(
    ("scores", "human"),
    [([], []), ([0.2, 0.9], [P, P]), ([0.2, 0.9, 0.4], [F, F, F])],
    ids=["no items", "all pass", "all fail"],
)
def test_best_threshold_keeps_the_default(scores: list[float], human: list[str]) -> None:
    assert best_threshold(scores, human, default=0.7) == 0.7


@pytest.mark.parametrize(
    ("scores", "human", "match"),
    [
        ([0.2, 0.9], [P], "lengths differ"),
        ([0.2, math.nan], [P, F], "finite"),
        ([0.2, math.inf], [P, F], "finite"),
        ([0.2, 0.9], [P, U], "unknown verdict 'unsure'"),
    ],
)
def test_best_threshold_rejects(scores: list[float], human: list[str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        best_threshold(scores, human, default=0.5)


@pytest.mark.parametrize(
    ("labels", "verdict"),
    [
        ([], None),  # nothing to go on
        ([U, U], None),  # only unsure
        ([P], P),
        ([F, U, U], F),  # unsure is ignored
        ([P, F], None),  # a tie
        ([P, F, U], None),  # a tie once unsure is ignored
        ([P, P, F], P),
        ([P, F, F, U], F),
    ],
)
def test_majority_label(labels: list[str], verdict: str | None) -> None:
    assert majority_label(labels) == verdict


def test_majority_label_rejects() -> None:
    with pytest.raises(ValueError, match="unknown verdict 'skip': use pass, fail or unsure"):
        majority_label([P, "skip"])


def _num(rate: Rate) -> tuple[int, int, float | None]:
    return rate.successes, rate.n, rate.value


def _val(rate: Rate) -> float:
    assert rate.value is not None
    return rate.value


def _by_accuracy(scores: Sequence[float], human: Sequence[str]) -> float:
    """The threshold plain accuracy would pick (the lowest among ties)."""

    def accuracy(t: float) -> int:
        return sum((s >= t) == (h == P) for s, h in zip(scores, human, strict=True))

    return max(sorted(set(scores)), key=accuracy)
