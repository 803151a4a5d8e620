"""Near misses by TF-IDF cosine, checked against a hand computation."""

from __future__ import annotations

import math
from pathlib import Path

from coalmine.harness.profile.documents import find_corpus, find_documents


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_near_misses_pair_only_documents_that_are_alike(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "docs/a.md": "# A\n\napple banana cherry\n",
            "docs/b.md": "# B\n\napple banana durian\n",
            "docs/c.md": "# C\n\nzebra yak xylophone\n",
        },
    )
    # by hand: idf = ln((1+3)/(1+df)) + 1, tf weight 1 + ln(1) = 1
    shared = math.log(4 / 3) + 1  # apple, banana: in two documents
    own = math.log(4 / 2) + 1  # cherry, durian: in one
    cosine = 2 * shared**2 / (2 * shared**2 + own**2)
    assert round(cosine, 3) == 0.536
    assert find_corpus(tmp_path)[1] == [
        {"a": "docs/a.md", "b": "docs/b.md", "shared": ["apple", "banana"], "similarity": 0.536}
    ]


def test_a_single_document_has_no_near_miss(tmp_path: Path) -> None:
    write(tmp_path, {"docs/only.md": "# Only\n\napple banana cherry\n"})
    assert find_corpus(tmp_path)[1] == []


def test_the_corpus_is_where_the_code_loads_it_from(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "docs/guide.md": "# Guide\n",
            "corpus_src/books/one.md": "# One\n",
            "ingest.py": 'loader = DirectoryLoader("./corpus_src/books", glob="*.md")\n',
        },
    )
    assert [d["id"] for d in find_documents(tmp_path)] == [
        "corpus_src/books/one.md",
        "docs/guide.md",
    ]
