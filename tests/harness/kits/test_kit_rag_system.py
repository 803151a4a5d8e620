"""The rag-system kit: suites built from the repository's documents, run on a stand-in retriever.

Known-item recall, near misses and faithfulness, each run for real by `coalmine eval run`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.kit_project import (
    context,
    eval_run,
    failures,
    gate_env,
    last_result,
    load_bundled,
    render_into,
    run_gate,
    suite_problems,
    write_agent,
)

SUITES = ("retrieval-recall", "structural-near-misses", "context-faithfulness")

DOCS = [
    {"id": "docs/install-linux.md", "title": "Install on Linux"},
    {"id": "docs/install-windows.md", "title": "Install on Windows"},
    {"id": "docs/faq.md", "title": "FAQ"},
    {"id": "docs/keys/rotate.md", "title": "Rotating API keys"},
    {"id": "docs/keys/create.md", "title": "Creating API keys"},
]

# Ranks the document whose title is the query first; answers questions in a sentence.
# With NEAR_MISS_FIRST, a look-alike document (a shared title word) outranks the right one,
# and questions are refused.
RETRIEVER = """
    import json, re, sys

    NEAR_MISS_FIRST = {near_miss_first}
    corpus = json.load(open("corpus.json"))  # title -> doc id
    prompt = sys.stdin.read()
    search = re.search(r"Search the documents for: (.*)", prompt)
    if search:
        query = search.group(1).strip()
        words = set(query.lower().split()) - {{"on"}}
        right = [corpus[query]] if query in corpus else []
        near = [i for t, i in corpus.items() if i not in right and words & set(t.lower().split())]
        rest = [i for i in corpus.values() if i not in right and i not in near]
        ranked = near + right + rest if NEAR_MISS_FIRST else right + near + rest
        print(json.dumps({{"retrieved": ranked}}))
    elif NEAR_MISS_FIRST:
        print("I cannot find that in the documents.")
    else:
        title = re.search(r'What does "(.*)" say', prompt).group(1)
        print(f"{{title}} explains the steps in order, with an example of each.")
"""


NEAR_MISSES = [  # as the profile's TF-IDF finds them (tests/harness/profile/test_documents.py)
    {"a": "docs/keys/create.md", "b": "docs/keys/rotate.md", "shared": ["api", "keys"],
     "similarity": 0.4},
    {"a": "docs/install-linux.md", "b": "docs/install-windows.md", "shared": ["install"],
     "similarity": 0.3},
]  # fmt: skip


def repo(
    root: Path,
    docs: list[dict[str, Any]],
    *,
    near_miss_first: bool = False,
    near_misses: list[dict[str, Any]] | None = None,
) -> Path:
    pairs = NEAR_MISSES if near_misses is None and docs == DOCS else (near_misses or [])
    render_into(root, "rag-system", context(docs=docs, near_misses=pairs))
    write_agent(root, RETRIEVER.format(near_miss_first=near_miss_first))
    corpus = {doc["title"]: doc["id"] for doc in docs}
    (root / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    return root


def cases(root: Path, suite: str) -> list[dict[str, Any]]:
    lines = (root / f"harness/evals/{suite}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_load_kit_accepts_the_kit_and_its_rules_name_its_suites() -> None:
    spec = load_bundled("rag-system").spec
    assert spec.applies_when == (
        "retrieval:embeddings",
        "retrieval:retriever",
        "retrieval:vector-db",
    )
    assert [(c.id, c.command, c.blocks) for c in spec.commands] == [
        ("rag-eval", "bash gates/retrieval-eval.sh", True)
    ]
    assert {rule.suite for rule in spec.evolution_rules if rule.watch} == set(SUITES)
    written = {Path(p).stem for p in spec.writes if p.startswith("harness/evals/")}
    assert written == set(SUITES)


def test_cases_come_from_the_documents(tmp_path: Path) -> None:
    root = repo(tmp_path / "repo", DOCS)
    assert suite_problems(root) == {suite: [] for suite in SUITES}
    recall = cases(root, "retrieval-recall")
    assert [(c["id"], c["vars"]["query"], c["relevant"]) for c in recall][:2] == [
        ("docs/install-linux.md", "Install on Linux", ["docs/install-linux.md"]),
        ("docs/install-windows.md", "Install on Windows", ["docs/install-windows.md"]),
    ]
    near = {
        c["id"]: (c["relevant"], c["metadata"]["shared_words"])
        for c in cases(root, "structural-near-misses")
    }
    assert near == {
        "docs/keys/rotate.md:vs:docs/keys/create.md": (  # grade 1 for the queried one
            {"docs/keys/rotate.md": 1, "docs/keys/create.md": 0}, ["api", "keys"],
        ),
        "docs/keys/create.md:vs:docs/keys/rotate.md": (
            {"docs/keys/create.md": 1, "docs/keys/rotate.md": 0}, ["api", "keys"],
        ),
        "docs/install-linux.md:vs:docs/install-windows.md": (
            {"docs/install-linux.md": 1, "docs/install-windows.md": 0}, ["install"],
        ),
        "docs/install-windows.md:vs:docs/install-linux.md": (
            {"docs/install-windows.md": 1, "docs/install-linux.md": 0}, ["install"],
        ),
    }  # fmt: skip
    faithful = cases(root, "context-faithfulness")
    assert faithful[2] == {
        "id": "docs/faq.md",
        "vars": {"title": "FAQ"},
        "context": "docs/faq.md",  # no passages known: its id, to be replaced
        "metadata": {"doc": "docs/faq.md"},
        "tags": ["faithfulness"],
    }
    meta = yaml.safe_load((root / "harness/evals/retrieval-recall.yaml").read_text())
    assert meta["agent"] == "app" and '{"retrieved"' in meta["prompt_template"]
    assert "blocking" not in meta


def test_odd_corpora_still_give_valid_suites(tmp_path: Path) -> None:
    corpora: dict[str, list[dict[str, str]]] = {
        "empty": [],
        "one": DOCS[:1],
        "unrelated": [{"id": "a.md", "title": "Alpha"}, {"id": "b.md", "title": "Beta"}],
        "awkward": [
            {"id": "docs/api keys.md", "title": 'Keys: "rotate" & revoke'},
            {"id": "docs/api-keys.md", "title": "Keys, created"},
            {"id": ".hidden/x.md", "title": "x"},
        ],
    }
    for name, docs in corpora.items():
        root = repo(tmp_path / name, docs)
        assert suite_problems(root) == {suite: [] for suite in SUITES}, name
    near = cases(tmp_path / "unrelated", "structural-near-misses")
    # nothing alike: no near miss is invented, each title must simply bring its document first
    assert [(c["id"], c["relevant"]) for c in near] == [
        ("a.md", {"a.md": 1}),
        ("b.md", {"b.md": 1}),
    ]
    [single] = cases(tmp_path / "one", "structural-near-misses")
    assert single["relevant"] == {"docs/install-linux.md": 1}
    assert single["metadata"]["near_miss"] is None
    one_yaml = (tmp_path / "one" / "harness/evals/structural-near-misses.yaml").read_text()
    assert "The corpus has ONE document (docs/install-linux.md)" in one_yaml
    awkward = [c["id"] for c in cases(tmp_path / "awkward", "retrieval-recall")]
    assert awkward == ["docs/api-keys.md", "docs/api-keys.md-2", "doc-.hidden/x.md"]
    for name in ("empty",):
        examples = cases(tmp_path / name, "structural-near-misses")
        assert all(c["id"].startswith("example-") for c in examples)
        meta = yaml.safe_load(
            (tmp_path / name / "harness/evals/structural-near-misses.yaml").read_text()
        )
        assert "blocking" not in meta  # examples block, as the gate that runs them does


def test_a_good_retriever_passes_every_suite(tmp_path: Path) -> None:
    root = repo(tmp_path / "repo", DOCS)
    assert eval_run(root, *SUITES) == 0, [last_result(root, s)["failures"] for s in SUITES]
    for suite in SUITES:
        result = last_result(root, suite)
        assert result["passed"] == result["cases"] > 0, suite
        assert result["badLines"] == result["errored"] == 0
    assert last_result(root, "retrieval-recall")["graders"]["mrr"]["mean"] == 1.0


def test_the_gate_fails_when_a_near_miss_outranks_the_right_document(tmp_path: Path) -> None:
    root = repo(tmp_path / "repo", DOCS, near_miss_first=True)
    gate = run_gate(root, "retrieval-eval.sh", env=gate_env(tmp_path))
    assert gate.returncode == 1, gate.stdout + gate.stderr
    # recall alone would not notice: the right document is still second
    assert last_result(root, "retrieval-recall")["passed"] == len(DOCS)
    near = failures(last_result(root, "structural-near-misses"))
    assert len(near) == 4
    assert "hit_rate@1 is 0" in near["docs/install-linux.md:vs:docs/install-windows.md"]
    faithful = failures(last_result(root, "context-faithfulness"))
    assert set(faithful) == {doc["id"] for doc in DOCS}
    assert "not-is-refusal failed" in faithful["docs/faq.md"]


def test_example_suites_block_like_the_gate_that_runs_them(tmp_path: Path) -> None:
    root = repo(tmp_path / "repo", [])
    # the retriever does not know the example documents: the blocking gate fails until the
    # examples are replaced (the suites do not say `blocking: false` behind the gate's back)
    assert eval_run(root, *SUITES) == 1
    for suite in SUITES:
        result = last_result(root, suite)
        examples = 2 if suite == "structural-near-misses" else 3
        assert result["cases"] == examples and result["badLines"] == result["errored"] == 0
        assert result["blocking"] is True
    assert last_result(root, "retrieval-recall")["failed"] == 3
