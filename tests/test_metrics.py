"""Retrieval and tool-call metrics against hand-computed values (and trec_eval when present)."""

from __future__ import annotations

import random
from math import log2
from typing import Any

import pytest

from coalmine.metrics import (
    SetScores,
    json_equal,
    retrieval_metrics,
    tie_warnings,
    tool_call_metrics,
)

# -- retrieval: one query worked through by hand --------------------------------------------

# Relevant: d1 (3), d2 (2), d4 (1), so 3 relevant docs; d3 is judged non-relevant and d5 is
# unjudged. The run is listed out of order on purpose: ranking is by score.
QRELS = {"d1": 3, "d2": 2, "d3": 0, "d4": 1}
RUN = [("d4", 0.5), ("d3", 0.9), ("d2", 0.6), ("d1", 0.8), ("d5", 0.7)]
# Ranked: 1 d3 (0), 2 d1 (3), 3 d5 (-), 4 d2 (2), 5 d4 (1); relevant at ranks 2, 4, 5.
DCG_LINEAR_5 = 3 / log2(3) + 2 / log2(5) + 1 / log2(6)  # 1.8928 + 0.8614 + 0.3869 = 3.1410
IDCG_LINEAR_3 = 3 + 2 / log2(3) + 1 / log2(4)  # grades 3, 2, 1 at ranks 1-3: 4.7619
DCG_EXP_5 = 7 / log2(3) + 3 / log2(5) + 1 / log2(6)  # gains 2^3-1, 2^2-1, 2^1-1: 6.0954
IDCG_EXP_3 = 7 + 3 / log2(3) + 1 / log2(4)  # 9.3928
AP_SUM = 1 / 2 + 2 / 4 + 3 / 5  # precision at ranks 2, 4 and 5: 1.6

EXPECTED = {
    # hits in the top k: k=1 -> 0, k=3 -> 1 (d1), k=5 -> 3, k=10 -> 3 (the run has 5 docs)
    "precision@1": 0 / 1,
    "precision@3": 1 / 3,
    "precision@5": 3 / 5,
    "precision@10": 3 / 10,  # divides by k, not by the 5 docs retrieved
    "recall@1": 0 / 3,
    "recall@3": 1 / 3,
    "recall@5": 3 / 3,
    "recall@10": 3 / 3,
    "hit_rate@1": 0.0,
    "hit_rate@3": 1.0,
    "hit_rate@5": 1.0,
    "hit_rate@10": 1.0,
    # first relevant doc at rank 2
    "mrr": 1 / 2,
    "mrr@1": 0.0,
    "mrr@3": 1 / 2,
    "mrr@5": 1 / 2,
    "mrr@10": 1 / 2,
    "ndcg@1": 0 / 3,  # d3 has no gain; ideal DCG@1 is grade 3
    "ndcg@3": (3 / log2(3)) / IDCG_LINEAR_3,  # 1.8928 / 4.7619 = 0.3975
    "ndcg@5": DCG_LINEAR_5 / IDCG_LINEAR_3,  # 3.1410 / 4.7619 = 0.6596
    "ndcg@10": DCG_LINEAR_5 / IDCG_LINEAR_3,
    "ndcg_exp@1": 0 / 7,
    "ndcg_exp@3": (7 / log2(3)) / IDCG_EXP_3,  # 4.4165 / 9.3928 = 0.4702
    "ndcg_exp@5": DCG_EXP_5 / IDCG_EXP_3,  # 6.0954 / 9.3928 = 0.6489
    "ndcg_exp@10": DCG_EXP_5 / IDCG_EXP_3,
    "map": AP_SUM / 3,  # 0.5333
    "map@1": 0 / 3,
    "map@3": (1 / 2) / 3,  # 0.1667
    "map@5": AP_SUM / 3,
    "map@10": AP_SUM / 3,
}


def test_every_retrieval_key_has_its_hand_computed_value() -> None:
    assert retrieval_metrics(QRELS, RUN) == pytest.approx(EXPECTED, abs=1e-12)


def test_retrieval_keys_come_in_family_order_for_each_cutoff() -> None:
    assert list(retrieval_metrics(QRELS, RUN, ks=(3, 1))) == [
        "precision@1", "precision@3", "recall@1", "recall@3", "hit_rate@1", "hit_rate@3",
        "mrr", "mrr@1", "mrr@3", "ndcg@1", "ndcg@3", "ndcg_exp@1", "ndcg_exp@3",
        "map", "map@1", "map@3",
    ]  # fmt: skip


def test_linear_and_exponential_ndcg_differ_on_graded_qrels() -> None:
    # Grades 3, 2, 0; the run puts them worst first: c (0), b (2), a (3).
    metrics = retrieval_metrics(
        {"a": 3, "b": 2, "c": 0}, [("c", 3.0), ("b", 2.0), ("a", 1.0)], ks=(1, 2, 3)
    )
    # linear: DCG@3 = 0 + 2/log2(3) + 3/log2(4) = 2.7619; IDCG@3 = 3 + 2/log2(3) = 4.2619
    assert metrics["ndcg@1"] == 0.0
    assert metrics["ndcg@2"] == pytest.approx((2 / log2(3)) / (3 + 2 / log2(3)))  # 0.2961
    assert metrics["ndcg@3"] == pytest.approx((2 / log2(3) + 3 / 2) / (3 + 2 / log2(3)))  # 0.6480
    # exponential: gains 7 and 3; DCG@3 = 3/log2(3) + 7/2 = 5.3928; IDCG@3 = 7 + 3/log2(3) = 8.8928
    assert metrics["ndcg_exp@2"] == pytest.approx((3 / log2(3)) / (7 + 3 / log2(3)))  # 0.2128
    assert metrics["ndcg_exp@3"] == pytest.approx(
        (3 / log2(3) + 7 / 2) / (7 + 3 / log2(3))
    )  # 0.6064
    assert metrics["ndcg@3"] != pytest.approx(metrics["ndcg_exp@3"])


def test_ideal_dcg_counts_relevant_docs_the_run_missed() -> None:
    # a is found at rank 1, b is never retrieved: DCG = 1, IDCG = 1 + 1/log2(3) = 1.6309.
    metrics = retrieval_metrics({"a": 1, "b": 1}, [("a", 1.0)], ks=(5,))
    assert metrics["ndcg@5"] == pytest.approx(1 / (1 + 1 / log2(3)))  # 0.6131, not 1.0
    assert metrics["map"] == pytest.approx(1 / 2)  # precision 1 at rank 1, over 2 relevant


def test_precision_divides_by_k_when_the_run_is_shorter() -> None:
    metrics = retrieval_metrics({"a": 1, "b": 1, "c": 1}, [("a", 1.0)])
    assert metrics["precision@1"] == 1.0
    assert metrics["precision@3"] == pytest.approx(1 / 3)
    assert metrics["precision@5"] == pytest.approx(1 / 5)
    assert metrics["precision@10"] == pytest.approx(1 / 10)
    assert metrics["recall@10"] == pytest.approx(1 / 3)
    assert metrics["map"] == pytest.approx(1 / 3)  # divides by the 3 relevant, not the 1 found


def test_mrr_at_k_is_zero_when_the_first_relevant_doc_is_below_k() -> None:
    run = [("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0)]  # d, the only relevant, is 4th
    metrics = retrieval_metrics({"d": 1}, run, ks=(3, 4, 5))
    assert metrics["mrr"] == 0.25
    assert metrics["mrr@3"] == 0.0
    assert metrics["mrr@4"] == 0.25
    assert metrics["mrr@5"] == 0.25


@pytest.mark.parametrize("qrels", [{}, {"a": 0, "b": 0}, {"a": -1}])
def test_a_query_without_relevant_docs_is_undefined(qrels: dict[str, int]) -> None:
    metrics = retrieval_metrics(qrels, [("a", 1.0)])
    assert set(metrics) == set(EXPECTED)
    assert set(metrics.values()) == {None}


def test_an_empty_run_scores_zero() -> None:
    metrics = retrieval_metrics({"a": 1}, [])
    assert set(metrics) == set(EXPECTED)
    assert set(metrics.values()) == {0.0}
    assert None not in metrics.values()


# -- retrieval: ties -----------------------------------------------------------------------


def test_trec_ties_rank_the_higher_doc_id_first() -> None:
    # a and b tie; trec_eval ranks b first (doc id descending), so relevant a is 2nd.
    metrics = retrieval_metrics({"a": 1, "b": 0}, [("a", 0.5), ("b", 0.5)], ks=(1,))
    assert metrics["precision@1"] == 0.0
    assert metrics["mrr"] == 0.5


def test_trec_ties_compare_bytes_so_lowercase_beats_uppercase() -> None:
    # "a" is byte 0x61 and "B" is 0x42, so "a" ranks first; a case-blind order would pick B.
    metrics = retrieval_metrics({"B": 1, "a": 0}, [("B", 0.5), ("a", 0.5)], ks=(1,))
    assert metrics["mrr"] == 0.5


def test_trec_ties_compare_scores_in_single_precision() -> None:
    # 1.0 + 1e-9 rounds to 1.0 as a C float, so trec_eval sees a tie and ranks b first.
    run = [("a", 1.0 + 1e-9), ("b", 1.0)]
    assert retrieval_metrics({"b": 1}, run, ks=(1,))["mrr"] == 1.0
    # 1e-6 survives single precision, so a stays first.
    assert retrieval_metrics({"b": 1}, [("a", 1.0 + 1e-6), ("b", 1.0)], ks=(1,))["mrr"] == 0.5


def test_input_ties_keep_the_runs_order_and_exact_scores() -> None:
    qrels = {"a": 1, "b": 0}
    metrics = retrieval_metrics(qrels, [("a", 0.5), ("b", 0.5)], ks=(1,), ties="input")
    assert metrics["mrr"] == 1.0  # a was listed first
    swapped = retrieval_metrics(qrels, [("b", 0.5), ("a", 0.5)], ks=(1,), ties="input")
    assert swapped["mrr"] == 0.5
    # Scores still rank first: c outscores both, and 1.0 + 1e-9 is not a tie here.
    run = [("b", 0.5), ("a", 0.5), ("c", 0.9)]
    assert retrieval_metrics({"c": 1}, run, ties="input")["mrr"] == 1.0
    close = [("b", 1.0), ("a", 1.0 + 1e-9)]
    assert retrieval_metrics(qrels, close, ks=(1,), ties="input")["mrr"] == 1.0


def test_tie_warnings_name_the_cutoff_a_tie_straddles() -> None:
    run = [("a", 0.9), ("b", 0.5), ("c", 0.5), ("d", 0.1)]  # b and c tie at ranks 2-3
    warnings = tie_warnings(run, ks=(1, 2, 3))
    assert len(warnings) == 1
    assert warnings[0].startswith("cut-off 2 splits a tie: ranks 2-3 share score 0.5")
    assert "doc id, descending" in warnings[0]
    assert "order in the run" in tie_warnings(run, ks=(2,), ties="input")[0]


def test_tie_warnings_one_per_cutoff_inside_a_wide_tie() -> None:
    run = [("a", 0.5), ("b", 0.5), ("c", 0.5), ("d", 0.5)]
    warnings = tie_warnings(run, ks=(1, 3, 5))  # 5 is beyond the run: nothing to split
    assert [w.split(":")[0] for w in warnings] == [
        "cut-off 1 splits a tie",
        "cut-off 3 splits a tie",
    ]
    assert all("ranks 1-4" in w for w in warnings)


def test_tie_warnings_stay_quiet_without_a_straddle() -> None:
    assert tie_warnings([("a", 0.9), ("b", 0.5), ("c", 0.5)], ks=(1, 3)) == []
    assert tie_warnings([], ks=(1,)) == []
    # Equal in single precision only: a tie for trec, not for input.
    close = [("a", 1.0 + 1e-9), ("b", 1.0)]
    assert len(tie_warnings(close, ks=(1,))) == 1
    assert tie_warnings(close, ks=(1,), ties="input") == []


@pytest.mark.parametrize(
    ("run", "kwargs", "message"),
    [
        ([("a", 1.0)], {"ks": (0, 5)}, "positive integers"),
        ([("a", 1.0)], {"ks": ()}, "positive integers"),
        ([("a", 1.0)], {"ties": "random"}, "ties must be"),
        ([("a", 1.0), ("a", 0.5)], {}, "'a' appears twice"),
        ([("a", float("nan"))], {}, "NaN"),
    ],
)
def test_bad_retrieval_input_is_rejected(
    run: list[tuple[str, float]], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        retrieval_metrics({"a": 1}, run, **kwargs)


# -- retrieval: trec_eval as an oracle, when pytrec-eval-terrier is installed ---------------

ORACLE_KS = (1, 2, 3, 5, 10)
DOC_IDS = ["a", "B", "b", "d1", "d10", "d2", "Z", "é", "zz"]
SCORES = [0.1, 0.25, 0.5, 0.5, 1.0, 1.0 + 1e-9, 2.0]  # repeats and near-repeats force ties


def random_case(rng: random.Random) -> tuple[dict[str, int], list[tuple[str, float]]]:
    qrels = {
        doc: rng.choice([-1, 0, 0, 1, 1, 2, 3]) for doc in rng.sample(DOC_IDS, rng.randint(1, 7))
    }
    run = [(doc, rng.choice(SCORES)) for doc in rng.sample(DOC_IDS, rng.randint(0, 9))]
    return qrels, run


def test_retrieval_metrics_equal_trec_eval_on_random_tied_runs() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    cuts = ",".join(map(str, ORACLE_KS))
    measures = {f"P.{cuts}", f"recall.{cuts}", f"success.{cuts}", "recip_rank", "map",
                f"map_cut.{cuts}", f"ndcg_cut.{cuts}"}  # fmt: skip

    def trec_eval(qrels: dict[str, int], run: dict[str, float]) -> dict[str, float]:
        evaluator = pytrec_eval.RelevanceEvaluator({"q": qrels}, measures)
        scores: dict[str, float] = evaluator.evaluate({"q": run})["q"]
        return scores

    rng = random.Random(5)
    checked = 0
    for _ in range(300):
        qrels, run = random_case(rng)
        ours = retrieval_metrics(qrels, run, ks=ORACLE_KS)
        if all(grade < 1 for grade in qrels.values()):
            assert set(ours.values()) == {None}
            continue
        trec = trec_eval(qrels, dict(run))
        # ndcg_exp is trec_eval's ndcg_cut on grades mapped to 2^g - 1
        trec_exp = trec_eval({doc: 2**g - 1 if g > 0 else g for doc, g in qrels.items()}, dict(run))
        expected = {"mrr": trec["recip_rank"], "map": trec["map"]}
        for k in ORACLE_KS:
            expected |= {
                f"precision@{k}": trec[f"P_{k}"],
                f"recall@{k}": trec[f"recall_{k}"],
                f"hit_rate@{k}": trec[f"success_{k}"],
                f"ndcg@{k}": trec[f"ndcg_cut_{k}"],
                f"ndcg_exp@{k}": trec_exp[f"ndcg_cut_{k}"],
                f"map@{k}": trec[f"map_cut_{k}"],
            }
        actual = {key: ours[key] for key in expected}
        assert actual == pytest.approx(expected, abs=1e-12), f"qrels={qrels} run={run}"
        checked += 1
    assert checked > 150


# -- tool calls ----------------------------------------------------------------------------


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def test_every_tool_call_key_has_its_hand_computed_value() -> None:
    expected = [call("search", q="x"), call("open", id=1), call("open", id=2)]
    actual = [call("search", q="x"), call("open", id=2), call("open", id=3), call("search", q="x")]
    assert tool_call_metrics(expected, actual, forbidden=("delete",)) == {
        # names: expected {search: 1, open: 2}, actual {search: 2, open: 2} -> tp = 1 + 2 = 3
        # P = 3/4, R = 3/3, F1 = 2 * 0.75 * 1 / 1.75 = 6/7
        "name_only": {"tp": 3, "precision": 3 / 4, "recall": 1.0, "f1": pytest.approx(6 / 7)},
        # with args: search(x) and open(2) match; open(1), open(3) and the 2nd search do not
        # P = 2/4, R = 2/3, F1 = 2 * (1/2)(2/3) / (1/2 + 2/3) = (2/3) / (7/6) = 4/7
        "name_args": {
            "tp": 2,
            "precision": 2 / 4,
            "recall": pytest.approx(2 / 3),
            "f1": pytest.approx(4 / 7),
        },
        "exact_match_ordered": False,
        "exact_match_unordered": False,
        "in_order": False,  # open(id=1) was never called
        "forbidden_violations": 0,
        "forbidden_pass": True,
    }


def test_a_retried_call_is_a_false_positive() -> None:
    metrics = tool_call_metrics([call("search", q="x")], [call("search", q="x")] * 2)
    # tp = 1 (each call matches once); P = 1/2, R = 1/1, F1 = 2 * 0.5 * 1 / 1.5 = 2/3
    for scores in (metrics["name_only"], metrics["name_args"]):
        assert scores == {"tp": 1, "precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3)}
    assert metrics["exact_match_unordered"] is False
    assert metrics["exact_match_ordered"] is False
    assert metrics["in_order"] is True


def test_one_call_cannot_satisfy_two_expected_calls() -> None:
    metrics = tool_call_metrics([call("search", q="x")] * 2, [call("search", q="x")])
    # tp = 1; P = 1/1, R = 1/2, F1 = 2 * 1 * 0.5 / 1.5 = 2/3
    for scores in (metrics["name_only"], metrics["name_args"]):
        assert scores == {"tp": 1, "precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3)}
    assert metrics["in_order"] is False


def test_both_empty_is_a_perfect_score() -> None:
    metrics = tool_call_metrics([], [])
    perfect: SetScores = {"tp": 0, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert metrics["name_only"] == perfect
    assert metrics["name_args"] == perfect
    assert metrics["exact_match_ordered"] is True
    assert metrics["exact_match_unordered"] is True
    assert metrics["in_order"] is True
    assert metrics["forbidden_pass"] is True


def test_nothing_called_has_precision_one_and_recall_zero() -> None:
    metrics = tool_call_metrics([call("search")], [])
    assert metrics["name_args"] == {"tp": 0, "precision": 1.0, "recall": 0.0, "f1": 0.0}
    assert metrics["in_order"] is False


def test_nothing_expected_has_recall_one_and_precision_zero() -> None:
    metrics = tool_call_metrics([], [call("search")])
    assert metrics["name_only"] == {"tp": 0, "precision": 0.0, "recall": 1.0, "f1": 0.0}
    assert metrics["in_order"] is True  # the empty sequence is a subsequence of anything


def test_right_name_wrong_args_scores_by_name_only() -> None:
    metrics = tool_call_metrics([call("get", id="5")], [call("get", id=5)])
    assert metrics["name_only"] == {"tp": 1, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    # P = R = 0, so F1 is 0 rather than 0/0
    assert metrics["name_args"] == {"tp": 0, "precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_names_compare_exactly() -> None:
    assert tool_call_metrics([call("Search")], [call("search")])["name_only"]["tp"] == 0


def test_args_compare_as_json() -> None:
    weather = tool_call_metrics([call("weather", temp=75)], [call("weather", temp=75.0)])
    assert weather["name_args"]["tp"] == 1
    missing = tool_call_metrics([call("f", x=None)], [call("f")])
    assert missing["name_args"]["tp"] == 0
    # a call without "args" has none: it equals an explicit empty mapping
    assert tool_call_metrics([{"name": "ping"}], [call("ping")])["exact_match_ordered"] is True


def test_unordered_exact_match_ignores_order_but_in_order_does_not() -> None:
    metrics = tool_call_metrics([call("a"), call("b")], [call("b"), call("a")])
    assert metrics["exact_match_unordered"] is True
    assert metrics["exact_match_ordered"] is False
    assert metrics["in_order"] is False
    ordered = tool_call_metrics([call("a"), call("b")], [call("a"), call("b")])
    assert ordered["exact_match_ordered"] is True


def test_in_order_accepts_expected_calls_as_a_subsequence() -> None:
    actual = [call("a"), call("b", n=1), call("c")]
    assert tool_call_metrics([call("a"), call("c")], actual)["in_order"] is True
    assert tool_call_metrics([call("c"), call("a")], actual)["in_order"] is False
    assert tool_call_metrics([call("a"), call("b", n=2)], actual)["in_order"] is False  # args
    assert tool_call_metrics([call("a"), call("a")], actual)["in_order"] is False  # one a only


def test_forbidden_calls_count_every_duplicate() -> None:
    metrics = tool_call_metrics([], [call("rm"), call("rm"), call("ls")], forbidden=("rm", "dd"))
    assert metrics["forbidden_violations"] == 2
    assert metrics["forbidden_pass"] is False


def test_a_call_without_a_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="actual call 1 has no string 'name'"):
        tool_call_metrics([], [call("ok"), {"args": {}}])


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (75, 75.0, True),
        ("5", 5, False),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (True, True, True),
        (None, None, True),
        (None, 0, False),
        ({"a": None}, {}, False),  # null is not missing
        ({"a": 1, "b": {"c": [1, 2]}}, {"b": {"c": [1, 2]}, "a": 1}, True),  # key order ignored
        ({"a": [{"x": 1, "y": True}]}, {"a": [{"y": True, "x": 1.0}]}, True),
        ([1, 2], [2, 1], False),  # arrays are ordered
        ([1, 2], (1, 2), True),
        ([1], [1, 1], False),
        ([1], {"0": 1}, False),
        ("x", "x", True),
        ("x", "X", False),
    ],
)
def test_json_equal(a: object, b: object, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


def test_json_equal_rejects_values_json_cannot_hold() -> None:
    with pytest.raises(TypeError, match="set value"):
        json_equal({1}, {1})
