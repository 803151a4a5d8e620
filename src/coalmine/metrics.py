"""Retrieval and tool-call metrics: pure functions over plain data.

`retrieval_metrics` scores one query's ranked run against its graded judgements (qrels) the
way trec_eval 9 does, so a number here can be checked against the reference tool. The
conventions, read from usnistgov/trec_eval and confirmed against pytrec-eval-terrier 0.5.11:

- Ranking (`form_res_rels.c`, `comp_sim_docno`): score descending, ties broken by doc id
  descending with `strcmp`, i.e. by UTF-8 bytes ("a" before "B", since 0x61 > 0x42). The
  run's own order and its rank column are ignored. trec_eval keeps scores as C `float`
  (`TEXT_RESULTS.sim` in `trec_format.h`), so scores that are equal in single precision tie:
  1.0 and 1.0 + 1e-9 tie there, and so they do here under `ties="trec"`.
- Relevant means grade >= 1 (`relevance_level`); a retrieved doc missing from qrels is
  non-relevant. A negative grade means "in the pool but unjudged": not relevant, no gain.
- `precision@k` (`m_P.c`) divides by k even when fewer than k docs were retrieved;
  `recall@k` divides by the number of relevant docs in qrels; `hit_rate@k` is `success.k`.
- `map` (`m_map.c`) and `map@k` (`m_map_cut.c`) sum precision at each relevant retrieved
  rank and divide by the number of relevant docs in qrels, retrieved or not.
- `mrr` (`m_recip_rank.c`) is 1 / rank of the first relevant doc, 0 if none is retrieved.
- `ndcg@k` (`m_ndcg_cut.c`): gain is the grade itself, the doc at rank r is discounted by
  log2(r + 1), and the ideal DCG sorts every judged grade (retrieved or not) descending and
  cuts it at k. A value is left at 0 when the ideal DCG is 0.

Beyond trec_eval: `ndcg_exp@k` uses gain 2^g - 1 (trec_eval's `ndcg_cut` run on qrels whose
grades were mapped to 2^g - 1), and `mrr@k` is `mrr` where the first relevant doc is within
k, else 0. Where we differ on purpose: a query with no relevant doc is undefined, and every
value is `None` (trec_eval prints 0 for it), so suite means can skip it and count it. A run
that names a doc twice is an error, as in trec_eval.

`tool_call_metrics` compares an agent's tool calls with the expected ones as multisets (a
repeated call can match only one expected call), with arguments compared as JSON values.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypedDict

from coalmine._util.jsonpath import json_equal

Ties = Literal["trec", "input"]

DEFAULT_CUTOFFS: tuple[int, ...] = (1, 3, 5, 10)

_TIE_MODES: frozenset[str] = frozenset({"trec", "input"})
# Metric families in output order; the ones named here also appear without a cut-off.
_FAMILIES = ("precision", "recall", "hit_rate", "mrr", "ndcg", "ndcg_exp", "map")
_UNCUT = frozenset({"mrr", "map"})


# -- retrieval ---------------------------------------------------------------------------


class _Ranked(NamedTuple):
    doc: str
    score: float
    key: float  # the score as the ranking compares it


def retrieval_metrics(
    qrels: Mapping[str, int],
    run: Sequence[tuple[str, float]],
    *,
    ks: Iterable[int] = DEFAULT_CUTOFFS,
    ties: Ties = "trec",
) -> dict[str, float | None]:
    """Score one query's run against its judgements, as trec_eval does.

    Args:
        qrels: Grade per judged doc id; grade >= 1 is relevant.
        run: Retrieved `(doc id, score)` pairs, in any order; higher scores rank first.
        ks: Cut-offs, each a positive integer.
        ties: `"trec"` breaks score ties by doc id, descending bytes, comparing scores in
            single precision like trec_eval; `"input"` keeps tied docs in the run's order.

    Returns:
        `precision@k, recall@k, hit_rate@k, mrr, mrr@k, ndcg@k, ndcg_exp@k, map, map@k` for
        each k; every value is `None` when qrels holds no relevant doc.

    Raises:
        ValueError: A cut-off is not positive, `ties` is unknown, a doc id repeats or a
            score is NaN.
    """
    cutoffs = _check_cutoffs(ks)
    ranked = _rank(run, ties=ties)
    num_rel = sum(1 for grade in qrels.values() if grade >= 1)
    if num_rel == 0:
        return {key: None for key, _, _ in _metric_keys(cutoffs)}

    # Prefix sums: index i holds the value over the top i docs.
    hits, precision_sum, dcg, dcg_exp = [0], [0.0], [0.0], [0.0]
    first_hit: int | None = None
    for rank, item in enumerate(ranked, start=1):
        grade = qrels.get(item.doc, 0)
        relevant = grade >= 1
        if relevant and first_hit is None:
            first_hit = rank
        hits.append(hits[-1] + int(relevant))
        precision_sum.append(precision_sum[-1] + (hits[-1] / rank if relevant else 0.0))
        dcg.append(dcg[-1] + _discounted(_linear_gain(grade), rank))
        dcg_exp.append(dcg_exp[-1] + _discounted(_exp_gain(grade), rank))
    ideal, ideal_exp = [0.0], [0.0]
    for rank, grade in enumerate(sorted(qrels.values(), reverse=True), start=1):
        ideal.append(ideal[-1] + _discounted(_linear_gain(grade), rank))
        ideal_exp.append(ideal_exp[-1] + _discounted(_exp_gain(grade), rank))

    def at(prefix: list[int] | list[float], k: int) -> float:
        return prefix[min(k, len(prefix) - 1)]

    def normalized(gains: list[float], ideal_gains: list[float], k: int) -> float:
        best = at(ideal_gains, k)
        return at(gains, k) / best if best > 0 else 0.0

    measures: dict[str, Callable[[int], float]] = {
        "precision": lambda k: at(hits, k) / k,
        "recall": lambda k: at(hits, k) / num_rel,
        "hit_rate": lambda k: 1.0 if at(hits, k) else 0.0,
        "mrr": lambda k: 1 / first_hit if first_hit is not None and first_hit <= k else 0.0,
        "ndcg": lambda k: normalized(dcg, ideal, k),
        "ndcg_exp": lambda k: normalized(dcg_exp, ideal_exp, k),
        "map": lambda k: at(precision_sum, k) / num_rel,
    }
    return {
        key: measures[family](len(ranked) if k is None else k)
        for key, family, k in _metric_keys(cutoffs)
    }


def tie_warnings(
    run: Sequence[tuple[str, float]],
    *,
    ks: Iterable[int] = DEFAULT_CUTOFFS,
    ties: Ties = "trec",
) -> list[str]:
    """Say where docs with equal scores sit on both sides of a cut-off.

    There the tie-break, not the scores, decides which docs count at that k.

    Args:
        run: Retrieved `(doc id, score)` pairs, as for `retrieval_metrics`.
        ks: Cut-offs to check.
        ties: How ties are broken, as for `retrieval_metrics`; `"trec"` also compares
            scores in single precision.

    Returns:
        One message per cut-off that splits a tie, in cut-off order; empty when none does.
    """
    cutoffs = _check_cutoffs(ks)
    ranked = _rank(run, ties=ties)
    decider = "doc id, descending" if ties == "trec" else "their order in the run"
    messages = []
    for k in cutoffs:
        if k >= len(ranked) or ranked[k - 1].key != ranked[k].key:
            continue
        tied = [rank for rank, item in enumerate(ranked, start=1) if item.key == ranked[k].key]
        messages.append(
            f"cut-off {k} splits a tie: ranks {tied[0]}-{tied[-1]} share score"
            f" {ranked[k].score!r}, so {decider} decides which of them count at @{k};"
            f" give the run distinct scores to make the @{k} metrics meaningful"
        )
    return messages


def _metric_keys(cutoffs: Sequence[int]) -> Iterator[tuple[str, str, int | None]]:
    """Yield (key, family, cut-off) in output order; cut-off None means the whole run."""
    for family in _FAMILIES:
        if family in _UNCUT:
            yield family, family, None
        for k in cutoffs:
            yield f"{family}@{k}", family, k


def _check_cutoffs(ks: Iterable[int]) -> list[int]:
    given = list(ks)
    bad = [k for k in given if isinstance(k, bool) or not isinstance(k, int) or k < 1]
    if bad or not given:
        raise ValueError(f"cut-offs must be positive integers, got {given!r}")
    return sorted(set(given))


def _rank(run: Sequence[tuple[str, float]], *, ties: Ties) -> list[_Ranked]:
    if ties not in _TIE_MODES:
        raise ValueError(f"ties must be 'trec' or 'input', not {ties!r}")
    seen: set[str] = set()
    for doc, score in run:
        if doc in seen:
            raise ValueError(f"doc id {doc!r} appears twice in the run; keep one entry per doc")
        if math.isnan(score):
            raise ValueError(f"doc id {doc!r} has score NaN; give it a number")
        seen.add(doc)
    if ties == "input":
        items = [_Ranked(doc, score, float(score)) for doc, score in run]
        # Python's sort is stable even with reverse=True, so tied docs keep the run's order.
        return sorted(items, key=lambda item: item.key, reverse=True)
    items = [_Ranked(doc, score, _as_float32(score)) for doc, score in run]
    return sorted(items, key=lambda item: (item.key, _id_bytes(item.doc)), reverse=True)


def _as_float32(score: float) -> float:
    """Round a score to C float, as trec_eval stores it."""
    try:
        packed = struct.pack("<f", score)
    except OverflowError:  # beyond float range; C gives infinity
        return math.copysign(math.inf, score)
    return float(struct.unpack("<f", packed)[0])


def _id_bytes(doc: str) -> bytes:
    return doc.encode("utf-8", "surrogatepass")


def _linear_gain(grade: int) -> float:
    return float(grade) if grade > 0 else 0.0


def _exp_gain(grade: int) -> float:
    return 2.0**grade - 1.0 if grade > 0 else 0.0


def _discounted(gain: float, rank: int) -> float:
    return gain / math.log2(rank + 1) if gain > 0 else 0.0


# -- tool calls --------------------------------------------------------------------------


# TypedDicts rather than dataclasses: the contract for these results is a plain dict.
class SetScores(TypedDict):
    """Multiset agreement between expected and actual calls."""

    tp: int
    precision: float
    recall: float
    f1: float


class ToolCallMetrics(TypedDict):
    """The result of `tool_call_metrics`."""

    name_only: SetScores
    name_args: SetScores
    exact_match_ordered: bool
    exact_match_unordered: bool
    in_order: bool
    forbidden_violations: int
    forbidden_pass: bool


class _Call(NamedTuple):
    name: str
    args: Any


def tool_call_metrics(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    *,
    forbidden: Iterable[str] = (),
) -> ToolCallMetrics:
    """Compare the tool calls an agent made with the ones expected.

    Names compare exactly and arguments by `json_equal`. Calls count as multisets: each call
    matches at most one call on the other side, so a retried call is a false positive.
    Precision is 1 when nothing was called, recall is 1 when nothing was expected, and F1 is
    0 when both are 0.

    Args:
        expected: Calls as `{"name": str, "args": {...}}`; a call without `args` has `{}`.
        actual: The calls the agent made, in order, in the same shape.
        forbidden: Tool names that must not be called; every such call is a violation.

    Returns:
        Scores by name only and by name and arguments, the exact-match and ordering
        booleans, and the forbidden-call count with its pass flag.

    Raises:
        ValueError: A call has no string `name`.
        TypeError: An argument value is not a JSON value.
    """
    want = [_read_call(call, side="expected", index=i) for i, call in enumerate(expected)]
    got = [_read_call(call, side="actual", index=i) for i, call in enumerate(actual)]
    banned = set(forbidden)
    violations = sum(1 for call in got if call.name in banned)
    name_args_tp = _count_matches(want, got, same=_same_call)
    # Subsequence test: each expected call is sought after the previous one's match.
    remaining = iter(got)
    in_order = all(any(_same_call(call, made) for made in remaining) for call in want)
    return {
        "name_only": _set_scores(
            _count_matches(want, got, same=lambda a, b: a.name == b.name),
            expected=len(want),
            actual=len(got),
        ),
        "name_args": _set_scores(name_args_tp, expected=len(want), actual=len(got)),
        "exact_match_ordered": len(want) == len(got)
        and all(_same_call(a, b) for a, b in zip(want, got, strict=True)),
        "exact_match_unordered": name_args_tp == len(want) == len(got),
        "in_order": in_order,
        "forbidden_violations": violations,
        "forbidden_pass": violations == 0,
    }


def _read_call(call: Mapping[str, Any], *, side: str, index: int) -> _Call:
    name = call.get("name")
    if not isinstance(name, str):
        raise ValueError(f"{side} call {index} has no string 'name': {dict(call)!r}")
    return _Call(name, call.get("args", {}))


def _same_call(a: _Call, b: _Call) -> bool:
    return a.name == b.name and json_equal(a.args, b.args)


def _count_matches(
    expected: Sequence[_Call], actual: Sequence[_Call], *, same: Callable[[_Call, _Call], bool]
) -> int:
    """Count expected calls matched one-to-one by actual calls.

    Greedy matching is maximal here because `same` is an equivalence relation.
    """
    unused = list(actual)
    matched = 0
    for call in expected:
        for i, candidate in enumerate(unused):
            if same(call, candidate):
                del unused[i]
                matched += 1
                break
    return matched


def _set_scores(tp: int, *, expected: int, actual: int) -> SetScores:
    precision = tp / actual if actual else 1.0
    recall = tp / expected if expected else 1.0
    total = precision + recall
    return {
        "tp": tp,
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / total if total else 0.0,
    }
