"""Retrieval graders (precision@k … map@k) against hand-computed values."""

from __future__ import annotations

import json
from math import log2
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

import coalmine.graders.retrieval  # noqa: F401  (registers the graders before builtins list it)
from coalmine.errors import GradeError
from coalmine.graders.base import GradeContext, registry
from coalmine.graders.retrieval import RetrievalGrade

NAMES = [
    "precision@k",
    "recall@k",
    "hit_rate@k",
    "mrr",
    "mrr@k",
    "ndcg@k",
    "ndcg_exp@k",
    "map",
    "map@k",
]

# Relevant: d1 (3), d2 (2), d4 (1), so 3 relevant docs; d3 is judged non-relevant and d5 is
# unjudged. Listed out of order on purpose: ranking is by score.
QRELS = {"d1": 3, "d2": 2, "d3": 0, "d4": 1}
SCORED = [
    {"id": "d4", "score": 0.5},
    {"id": "d3", "score": 0.9},
    {"id": "d2", "score": 0.6},
    {"id": "d1", "score": 0.8},
    {"id": "d5", "score": 0.7},
]
# Ranked: 1 d3 (0), 2 d1 (3), 3 d5 (-), 4 d2 (2), 5 d4 (1); relevant at ranks 2, 4 and 5.
RANKED = ["d3", "d1", "d5", "d2", "d4"]

# At k = 3 only d1 (rank 2) is a hit.
HAND_K3 = {
    "precision@k": 1 / 3,
    "recall@k": 1 / 3,
    "hit_rate@k": 1.0,
    "mrr": 1 / 2,  # first relevant doc at rank 2
    "mrr@k": 1 / 2,
    # DCG@3 = 3/log2(3); IDCG@3 = grades 3, 2, 1 at ranks 1-3 = 3 + 2/log2(3) + 1/2
    "ndcg@k": (3 / log2(3)) / (3 + 2 / log2(3) + 1 / 2),
    # gains 2^g - 1: DCG@3 = 7/log2(3); IDCG@3 = 7 + 3/log2(3) + 1/2
    "ndcg_exp@k": (7 / log2(3)) / (7 + 3 / log2(3) + 1 / 2),
    "map": (1 / 2 + 2 / 4 + 3 / 5) / 3,  # precision at ranks 2, 4, 5 over 3 relevant: 0.5333
    "map@k": (1 / 2) / 3,  # only rank 2 is within k
}


def grade(
    name: str, config: dict[str, Any], output: str, relevant: Any = QRELS, **inputs: Any
) -> RetrievalGrade:
    """Validate ``config`` as the loader does, then grade ``output`` through the registry."""
    item = registry.get(name)
    parsed = item.config.model_validate(config)
    if relevant is not None:
        inputs["relevant"] = relevant
    ctx = GradeContext(case_id="c1", prompt="p", inputs=inputs)
    result = anyio.run(item.grade, parsed, output, ctx)
    assert isinstance(result, RetrievalGrade)
    return result


def k3(name: str, **config: Any) -> dict[str, Any]:
    """``k: 3`` for the graders that take a cut-off."""
    return config if name in ("mrr", "map") else {"k": 3, **config}


def out(retrieved: Any, key: str = "retrieved") -> str:
    return json.dumps({key: retrieved})


# ---------------------------------------------------------------- registry and config


def test_every_metric_is_registered_with_its_static_threshold() -> None:
    for name in NAMES:
        item = registry.get(name)
        assert item.name == name
        assert item.threshold == (1.0 if name == "hit_rate@k" else 0.5)
        assert item.needs_judge is False


def test_config_defaults() -> None:
    cut = registry.get("recall@k").config.model_validate({})
    assert cut.model_dump() == {"threshold": 0.5, "path": "retrieved", "ties": "trec", "k": 10}
    uncut = registry.get("mrr").config.model_validate({})
    assert uncut.model_dump() == {"threshold": 0.5, "path": "retrieved", "ties": "trec"}
    assert registry.get("hit_rate@k").config.model_validate({}).model_dump()["threshold"] == 1.0


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("mrr", {"k": 5}),  # the uncut metrics take no cut-off
        ("map", {"k": 5}),
        ("recall@k", {"k": 0}),
        ("recall@k", {"k": -1}),
        ("recall@k", {"k": "3"}),
        ("recall@k", {"k": True}),
        ("recall@k", {"k": 2.5}),
        ("ndcg@k", {"threshold": 1.5}),
        ("ndcg@k", {"threshold": -0.1}),
        ("precision@k", {"ties": "random"}),
        ("precision@k", {"path": ""}),
        ("precision@k", {"path": "a..b"}),
        ("precision@k", {"path": "$..docs"}),
        ("precision@k", {"cutoff": 3}),
    ],
)
def test_bad_config_is_rejected(name: str, config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        registry.get(name).config.model_validate(config)


def test_config_is_frozen() -> None:
    config = registry.get("recall@k").config.model_validate({"k": 3})
    with pytest.raises(ValidationError):
        config.k = 4  # type: ignore[attr-defined]


# ---------------------------------------------------------------- hand-computed values


@pytest.mark.parametrize("name", NAMES)
def test_scored_run_matches_the_hand_computed_value(name: str) -> None:
    result = grade(name, k3(name, threshold=0.0), out(SCORED))
    assert result.value == pytest.approx(HAND_K3[name])
    assert result.score == pytest.approx(HAND_K3[name])
    assert result.passed is True
    assert (result.retrieved, result.relevant) == (5, 3)
    assert result.k == (None if name in ("mrr", "map") else 3)
    assert result.warnings == []


@pytest.mark.parametrize("name", NAMES)
def test_id_list_in_rank_order_scores_the_same(name: str) -> None:
    result = grade(name, k3(name, threshold=0.0), out(RANKED))
    assert result.value == pytest.approx(HAND_K3[name])


@pytest.mark.parametrize("name", NAMES)
def test_objects_without_scores_rank_in_list_order(name: str) -> None:
    docs = [{"id": doc, "title": f"about {doc}"} for doc in RANKED]  # other keys are ignored
    result = grade(name, k3(name, threshold=0.0), out(docs))
    assert result.value == pytest.approx(HAND_K3[name])


def test_metric_names_carry_the_cut_off() -> None:
    assert grade("ndcg@k", {"k": 3}, out(RANKED)).metric == "ndcg@3"
    assert grade("mrr@k", {"k": 1}, out(RANKED)).metric == "mrr@1"
    assert grade("mrr", {}, out(RANKED)).metric == "mrr"


def test_threshold_decides_the_verdict() -> None:
    # recall@5 = 3/3; recall@3 = 1/3 (d1 only)
    assert grade("recall@k", {"k": 5}, out(RANKED)).passed is True
    low = grade("recall@k", {"k": 3}, out(RANKED))
    assert (low.score, low.passed) == (pytest.approx(1 / 3), False)
    assert grade("recall@k", {"k": 3, "threshold": 0.3}, out(RANKED)).passed is True
    # a value exactly at the threshold passes: P@10 = 3/10
    assert grade("precision@k", {"threshold": 0.3}, out(RANKED)).passed is True


def test_mrr_at_k_is_zero_when_the_first_hit_is_below_k() -> None:
    # first relevant doc at rank 2
    result = grade("mrr@k", {"k": 1}, out(RANKED))
    assert (result.score, result.passed) == (0.0, False)
    assert result.explain() == "mrr@1 is 0, below 0.5: no relevant doc in the top 1"


def test_hit_rate_is_zero_or_one() -> None:
    assert grade("hit_rate@k", {"k": 1}, out(RANKED)).score == 0.0
    assert grade("hit_rate@k", {"k": 2}, out(RANKED)).score == 1.0


def test_relevant_as_a_list_grades_each_id_one() -> None:
    # relevant d1 and d2 with grade 1; ranked d3, d1, d5, d2: hits at ranks 2 and 4
    relevant = ["d1", "d2"]
    assert grade("recall@k", {"k": 3}, out(RANKED), relevant).score == pytest.approx(1 / 2)
    map_value = (1 / 2 + 2 / 4) / 2
    assert grade("map", {}, out(RANKED), relevant).score == pytest.approx(map_value)
    # linear gain 1 each: DCG@4 = 1/log2(3) + 1/log2(5); IDCG@4 = 1 + 1/log2(3)
    ndcg = (1 / log2(3) + 1 / log2(5)) / (1 + 1 / log2(3))
    assert grade("ndcg@k", {"k": 4}, out(RANKED), relevant).score == pytest.approx(ndcg)
    # with linear gain 1, exponential gain 2^1 - 1 is the same
    assert grade("ndcg_exp@k", {"k": 4}, out(RANKED), relevant).score == pytest.approx(ndcg)


def test_an_empty_run_scores_zero() -> None:
    result = grade("recall@k", {}, out([]))
    assert (result.score, result.passed, result.retrieved) == (0.0, False, 0)
    assert result.explain() == "recall@10 is 0, below 0.5: 0 of 3 relevant docs in the top 10"
    assert grade("mrr", {}, out([])).explain() == "mrr is 0, below 0.5: no relevant doc retrieved"


def test_explain_is_empty_when_the_grade_passes() -> None:
    assert grade("recall@k", {"k": 5}, out(RANKED)).explain() == ""


def test_explain_of_a_failing_grade() -> None:
    result = grade("map", {}, out(["d3", "d5", "d9", "d4"]))
    # d4 (relevant) at rank 4: AP = (1/4) / 3
    assert result.score == pytest.approx(1 / 12)
    assert result.explain() == "map is 0.0833, below 0.5: 1 of 3 relevant docs retrieved"
    mrr = grade("mrr", {}, out(["d3", "d5", "d9", "d4"]))
    assert mrr.explain() == "mrr is 0.25, below 0.5: the first relevant doc is at rank 4"


# ---------------------------------------------------------------- ties


def test_ties_trec_breaks_by_doc_id_descending_and_input_keeps_the_list_order() -> None:
    tied = [{"id": "a", "score": 1}, {"id": "b", "score": 1}]
    relevant = ["a"]
    # trec ranks b (0x62) before a (0x61): the relevant doc is at rank 2
    assert grade("mrr", {}, out(tied), relevant).score == 0.5
    assert grade("mrr", {"ties": "input"}, out(tied), relevant).score == 1.0
    # a plain id list is ranked by its order, whatever ties says
    assert grade("mrr", {"ties": "trec"}, out(["a", "b"]), relevant).score == 1.0


def test_a_tie_across_the_cut_off_is_warned_about() -> None:
    run = [
        {"id": "d1", "score": 0.9},
        {"id": "d2", "score": 0.5},
        {"id": "d3", "score": 0.5},
        {"id": "d4", "score": 0.1},
    ]
    relevant = ["d1", "d2"]
    trec = grade("precision@k", {"k": 2}, out(run), relevant)
    # trec: d1, d3, d2, d4, so the top 2 hold one relevant doc
    assert trec.score == 0.5
    assert len(trec.warnings) == 1
    assert trec.warnings[0].startswith("cut-off 2 splits a tie: ranks 2-3 share score 0.5")
    assert "doc id, descending" in trec.warnings[0]
    given = grade("precision@k", {"k": 2, "ties": "input"}, out(run), relevant)
    assert given.score == 1.0
    assert "their order in the run" in given.warnings[0]
    # no tie at the cut-off, no warning; the uncut metrics never warn
    assert grade("precision@k", {"k": 3}, out(run), relevant).warnings == []
    assert grade("map", {}, out(run), relevant).warnings == []


def test_a_failing_grade_explains_its_warnings_too() -> None:
    run = [{"id": "x", "score": 1}, {"id": "d1", "score": 1}]
    result = grade("hit_rate@k", {"k": 1}, out(run), ["d1"])
    # trec: x before d1 (0x78 > 0x64)
    assert (result.score, result.passed) == (0.0, False)
    text = result.explain()
    assert text.startswith("hit_rate@1 is 0, below 1: 0 of 1 relevant docs in the top 1; ")
    assert "cut-off 1 splits a tie" in text


# ---------------------------------------------------------------- unreachable thresholds


def test_a_threshold_precision_cannot_reach_is_warned_about() -> None:
    # two relevant docs, k = 10: precision@10 is at most 0.2
    result = grade("precision@k", {}, out(["d1", "d2"]), ["d1", "d2"])
    assert (result.score, result.passed) == (0.2, False)
    assert result.warnings == [
        "threshold 0.5 is out of reach: with 2 relevant doc(s), precision@10 is at most 0.2"
    ]


def test_a_threshold_recall_and_map_cannot_reach_is_warned_about() -> None:
    relevant = ["a", "b", "c", "d"]
    recall = grade("recall@k", {"k": 2, "threshold": 0.8}, out(["a", "b"]), relevant)
    assert recall.score == 0.5
    assert recall.warnings == [
        "threshold 0.8 is out of reach: with 4 relevant doc(s), recall@2 is at most 0.5"
    ]
    map_at = grade("map@k", {"k": 2, "threshold": 0.8}, out(["a", "b"]), relevant)
    assert map_at.score == 0.5  # (1/1 + 2/2) / 4
    assert "map@2 is at most 0.5" in map_at.warnings[0]
    # within reach: no warning
    assert grade("recall@k", {"k": 4}, out(["a"]), relevant).warnings == []
    assert grade("ndcg@k", {"k": 2}, out(["a"]), relevant).warnings == []


# ---------------------------------------------------------------- reading the output


def test_path_config_dotted_and_jsonpath() -> None:
    nested = json.dumps({"result": {"docs": RANKED}})
    dotted = grade("recall@k", {"k": 5, "path": "result.docs"}, nested)
    assert dotted.score == 1.0
    bracket = grade("recall@k", {"k": 5, "path": "$.result['docs']"}, nested)
    assert bracket.score == 1.0
    whole = grade("recall@k", {"k": 5, "path": "$"}, json.dumps(RANKED))
    assert whole.score == 1.0
    indexed = json.dumps({"runs": [{"retrieved": ["x"]}, {"retrieved": RANKED}]})
    assert grade("recall@k", {"k": 5, "path": "runs.1.retrieved"}, indexed).score == 1.0


def test_json_inside_prose_is_found() -> None:
    text = f"Here is what I found:\n```json\n{out(RANKED)}\n```\nHope it helps."
    assert grade("recall@k", {"k": 5}, text).score == 1.0


def test_the_first_json_value_holding_the_path_is_used() -> None:
    # a citation [1] comes first and has no 'retrieved'; the object after it does
    text = f"As noted in [1], the sources are {out(RANKED)} and {out(['zz'])}."
    assert grade("recall@k", {"k": 5}, text).score == 1.0


@pytest.mark.parametrize("output", ["I could not find anything.", "", "{'retrieved': ['d1']}"])
def test_output_without_json_fails_with_a_problem(output: str) -> None:
    result = grade("recall@k", {}, output)
    assert (result.score, result.passed, result.value) == (0.0, False, None)
    assert (
        result.problem == "cannot read the retrieved docs: the output holds no JSON object or array"
    )
    assert result.explain() == result.problem


def test_a_missing_path_fails_with_a_problem() -> None:
    result = grade("mrr", {}, out(RANKED, key="docs"))
    assert (result.score, result.passed) == (0.0, False)
    assert result.explain() == (
        "cannot read the retrieved docs: path 'retrieved' is not in the output's JSON"
        " (no key 'retrieved'; keys there: 'docs')"
    )
    several = grade("mrr", {}, 'see {"a": 1} and {"b": 2}')
    assert "path 'retrieved' is not in any of the 2 JSON values (no key 'retrieved'" in (
        several.explain()
    )


@pytest.mark.parametrize(
    ("retrieved", "problem"),
    [
        ("d1", 'retrieved is "d1", not a list of doc ids or {id, score} objects'),
        ({"d1": 1}, 'retrieved is {"d1":1}, not a list of doc ids or {id, score} objects'),
        ([1, 2], "item 0 of retrieved is 1: give every item as a doc id string"),
        (["d1", {"id": "d2"}], 'item 0 of retrieved is "d1": give every item as a doc id'),
        ([{"doc": "d1"}], 'item 0 of retrieved is {"doc":"d1"}: give every item'),
        ([{"id": 7, "score": 1}], 'item 0 of retrieved is {"id":7,"score":1}: give every'),
        (
            [{"id": "d1", "score": 1}, {"id": "d2"}],
            "item 1 of retrieved has no 'score' while others have one",
        ),
        ([{"id": "d1", "score": "high"}], 'item 0 of retrieved has score "high", not a number'),
        ([{"id": "d1", "score": True}], "item 0 of retrieved has score true, not a number"),
        ([{"id": "d1", "score": None}], "item 0 of retrieved has score null, not a number"),
        (["d1", "d2", "d1"], "doc id 'd1' appears twice in the run"),
    ],
)
def test_a_malformed_list_fails_with_a_problem(retrieved: Any, problem: str) -> None:
    result = grade("ndcg@k", {}, out(retrieved))
    assert (result.score, result.passed, result.value) == (0.0, False, None)
    assert result.problem is not None
    assert result.problem.startswith("cannot read the retrieved docs: ")
    assert problem in result.problem


def test_a_score_too_large_for_a_float_fails_with_a_problem() -> None:
    output = '{"retrieved": [{"id": "d1", "score": 1' + "0" * 400 + "}]}"
    result = grade("ndcg@k", {}, output)
    assert result.problem == (
        "cannot read the retrieved docs: item 0 of retrieved has a score too large for a float"
    )


# ---------------------------------------------------------------- the case's judgements


@pytest.mark.parametrize("name", NAMES)
def test_missing_relevant_is_a_configuration_error(name: str) -> None:
    with pytest.raises(GradeError) as caught:
        grade(name, {}, out(RANKED), relevant=None)
    assert caught.value.config is True
    assert caught.value.grader == name
    assert "the case has no 'relevant' judgements" in str(caught.value)


@pytest.mark.parametrize(
    ("relevant", "what"),
    [
        ({"d1": "high"}, "grade of 'd1' is 'high', not an integer"),
        ({"d1": True}, "grade of 'd1' is True, not an integer"),
        ({"d1": 1.5}, "grade of 'd1' is 1.5, not an integer"),
        (["d1", 2], "2 is not a doc id string"),
        ("d1", "it is str"),
    ],
)
def test_malformed_relevant_is_a_configuration_error(relevant: Any, what: str) -> None:
    with pytest.raises(GradeError) as caught:
        grade("recall@k", {}, out(RANKED), relevant=relevant)
    assert caught.value.config is True
    assert f"the case's 'relevant' judgements are malformed ({what})" in str(caught.value)


@pytest.mark.parametrize("relevant", [[], {}, {"d1": 0, "d3": -1}])
@pytest.mark.parametrize("name", NAMES)
def test_no_relevant_doc_leaves_the_metric_undefined_and_skipped(name: str, relevant: Any) -> None:
    result = grade(name, {}, out(RANKED), relevant)
    assert (result.score, result.passed, result.value, result.skipped) == (None, None, None, True)
    assert result.reason is not None
    assert "is undefined: the case judges no doc relevant" in result.reason
    assert result.explain() == ""


def test_negative_grades_are_not_relevant_and_unjudged_docs_count_as_not_relevant() -> None:
    # d9 is unjudged, d3 is -1 ("unjudged" in trec_eval): neither counts
    result = grade("precision@k", {"k": 3}, out(["d9", "d3", "d1"]), {"d1": 1, "d3": -1})
    assert result.score == pytest.approx(1 / 3)
    assert result.relevant == 1
