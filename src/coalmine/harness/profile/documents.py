"""The documents a retriever searches: where they are, their real titles, key passages, look-alikes.

- **Where**: the folders the code loads (``DirectoryLoader("data/books")``,
  ``SimpleDirectoryReader(input_dir=…)``, ``DATA_PATH = "…"``) come first, then the usual
  top-level folders (:data:`DOC_FOLDERS`), else the README.
- **Title**: front matter's ``title:``, a metadata ``Title:`` line (an e-book header), the first
  heading, else the first line of text — never a line of a licence or copyright block, never
  the file's name unless the file has no text at all.
- **Passages**: the document's key sentences (the ones whose words are most particular to it
  across the corpus, TF-IDF), in their order, from its body (after any licence header).
- **Near misses**: pairs of documents whose words are genuinely alike (TF-IDF cosine at least
  :data:`NEAR_MISS_SIMILARITY`), each document with its closest one, with the words they share.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import TypedDict

from coalmine.harness.profile.scan import read_text, walk

__all__ = [
    "DOC_FOLDERS",
    "MAX_DOCS",
    "Doc",
    "NearMiss",
    "find_corpus",
    "find_documents",
    "near_misses",
]

MAX_DOCS = 12
EXCERPT_CHARS = 400
PASSAGES = 3
NEAR_MISS_SIMILARITY = 0.1
MAX_NEAR_MISSES = 6
DOC_FOLDERS = ("docs", "doc", "knowledge", "corpus", "data", "content")
"""Top-level folders whose text documents become the corpus when the code names none."""
DOC_SUFFIXES = (".md", ".mdx", ".txt", ".rst")


class Doc(TypedDict):
    """A document of the corpus."""

    id: str
    title: str
    excerpt: str
    """Its key passages joined, at most :data:`EXCERPT_CHARS`."""
    passages: list[str]
    """Its key sentences, in document order."""


class NearMiss(TypedDict):
    """Two look-alike documents."""

    a: str
    b: str
    shared: list[str]
    similarity: float


_LICENCE = re.compile(
    r"(?i)licen[cs]e|copyright|\(c\)\s*\d|©|spdx-|all rights reserved|project gutenberg|"
    r"gutenberg\.org|permission is hereby granted|without warranty|terms of use|\bebook\b"
)
_TITLE_FIELD = re.compile(r"(?im)^[ \t]*title[ \t]*:[ \t]*(.+?)[ \t]*$")
_HEADING = re.compile(r"#{1,6}\s+(.+?)\s*#*\s*$")
_START_MARK = re.compile(r"(?im)^\*{3}\s*start of (?:the|this) project gutenberg.*$")
_END_MARK = re.compile(r"(?im)^\*{3}\s*end of (?:the|this) project gutenberg")
_SENTENCE = re.compile(r"[^.!?]*[.!?]+(?:[\"'’”)]*)")
_WORD = re.compile(r"[a-z][a-z'’-]{2,}")
_STOP = frozenset(
    "the and for with from into your how what why when about this that these those have has had "
    "was were are not but you she her his him they them their there then than said very all "
    "any can could would should will one out who its our off over some such only just also "
    "been being more most much upon which while where here little like".split()
)
_LOADERS = re.compile(
    r"\b(?:DirectoryLoader|SimpleDirectoryReader|PyPDFDirectoryLoader|ObsidianLoader|"
    r"NotionDirectoryLoader|ReadTheDocsLoader)\(\s*(?:\w+\s*=\s*)?[fr]?['\"]([^'\"]+)['\"]"
    r"|\b(?:input_dir|directory|data_dir|docs_dir)\s*=\s*[fr]?['\"]([^'\"]+)['\"]"
    r"|^[ \t]*(?:[A-Z_]*(?:DATA|DOCS?|DOCUMENTS?|CORPUS|KNOWLEDGE|BOOKS?)[A-Z_]*"
    r"(?:PATH|DIR|FOLDER|ROOT))\s*(?::\s*\w+\s*)?=\s*[fr]?['\"]([^'\"]+)['\"]",
    re.M,
)


def find_documents(root: Path) -> list[Doc]:
    """The corpus of the repository at ``root``: at most :data:`MAX_DOCS` documents."""
    return find_corpus(root)[0]


def find_corpus(root: Path) -> tuple[list[Doc], list[NearMiss]]:
    """The documents and their look-alike pairs, each document read and parsed once."""
    texts: dict[str, str] = {}
    for folder in [*_loaded_folders(root), *DOC_FOLDERS]:
        base = root / folder
        if not base.is_dir() or len(texts) >= MAX_DOCS:
            continue
        for rel, path in sorted(walk(base)):
            doc_id = (PurePosixPath(folder) / rel).as_posix()
            if rel.endswith(DOC_SUFFIXES) and len(texts) < MAX_DOCS and doc_id not in texts:
                texts[doc_id] = read_text(path) or ""
    if not texts:
        readme = next((p for p in sorted(root.glob("README*")) if p.is_file()), None)
        if readme is not None:
            texts[readme.name] = read_text(str(readme)) or ""
    parsed = {doc_id: _parse(doc_id, text) for doc_id, text in texts.items()}
    idf = _idf([body for _, body in parsed.values()])
    docs = []
    for doc_id, (title, body) in parsed.items():
        passages = _key_sentences(body, idf)
        excerpt = " ".join(passages)
        if len(excerpt) > EXCERPT_CHARS:
            excerpt = excerpt[:EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"
        docs.append(Doc(id=doc_id, title=title, excerpt=excerpt, passages=passages))
    return docs, near_misses({doc_id: body for doc_id, (_, body) in parsed.items()})


def near_misses(bodies: dict[str, str]) -> list[NearMiss]:
    """Look-alike pairs of documents (id → body): each one's closest other one, if close enough."""
    idf = _idf(list(bodies.values()))
    vectors = {doc_id: _tfidf(body, idf) for doc_id, body in bodies.items()}
    found: dict[tuple[str, str], NearMiss] = {}
    for a, va in vectors.items():
        best = max(
            ((_cosine(va, vb), b) for b, vb in vectors.items() if b != a),
            default=(0.0, ""),
        )
        similarity, b = best
        if similarity < NEAR_MISS_SIMILARITY:
            continue
        key = (min(a, b), max(a, b))
        shared = sorted(va.keys() & vectors[b].keys(), key=lambda w: (-va[w] * vectors[b][w], w))
        found[key] = NearMiss(
            a=key[0], b=key[1], shared=shared[:5], similarity=round(similarity, 3)
        )
    return sorted(found.values(), key=lambda n: -n["similarity"])[:MAX_NEAR_MISSES]


def _loaded_folders(root: Path) -> list[str]:
    """Folders the repository's code loads documents from (that exist), in order of mention."""
    folders: list[str] = []
    for rel, path in walk(root):
        if not rel.endswith((".py", ".ts", ".js", ".mjs")):
            continue
        for m in _LOADERS.finditer(read_text(path) or ""):
            value = next(v for v in m.groups() if v)
            folder = value.strip().removeprefix("./").rstrip("/")
            if folder and not folder.startswith(("/", "..")) and (root / folder).is_dir():
                if folder not in folders:
                    folders.append(folder)
    return folders


def _parse(doc_id: str, text: str) -> tuple[str, str]:
    """``(title, body)``: the real title, and the text after the title and any licence header."""
    start = _START_MARK.search(text)
    end = _END_MARK.search(text)
    header = text[: start.start()] if start else ""
    body = text
    if start is not None:
        stop = end.start() if end is not None and end.start() > start.end() else None
        body = text[start.end() : stop]
    lines = body.splitlines()
    title: str | None = None
    if lines and lines[0].strip() == "---":  # YAML front matter
        close = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
        if close is not None:
            field = _TITLE_FIELD.search("\n".join(lines[1:close]))
            title = field[1].strip("'\"") if field else None
            lines = lines[close + 1 :]
    if title is None and header:
        field = _TITLE_FIELD.search(header)
        title = field[1] if field else None
    paragraphs = _paragraphs(lines)
    skip = 0  # a licence or copyright header: the leading paragraphs that speak of one
    while skip < len(paragraphs) and _LICENCE.search(" ".join(paragraphs[skip])):
        skip += 1
    kept = paragraphs[skip:]
    if title is None:
        field = _TITLE_FIELD.search("\n".join(lines[:40]))
        title = field[1] if field and not _LICENCE.search(field[1]) else None
    if title is None:
        title = _heading(kept)
    if title is None:
        first = next((line.strip() for p in kept for line in p if line.strip()), "")
        title = first if 0 < len(first) <= 120 else None
    if title is None:
        title = PurePosixPath(doc_id).stem.replace("-", " ").replace("_", " ")
    title = re.sub(r"[*_`]+", "", title).strip()
    body_text = "\n\n".join("\n".join(p) for p in kept)
    if body_text.strip().startswith(title):
        body_text = body_text.strip()[len(title) :]
    return title, body_text


def _paragraphs(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def _heading(paragraphs: list[list[str]]) -> str | None:
    for paragraph in paragraphs[:20]:
        for i, line in enumerate(paragraph):
            m = _HEADING.match(line)
            if m:
                return m[1]
            if i + 1 < len(paragraph) and re.fullmatch(r"(=+|-+)\s*", paragraph[i + 1]):
                return line.strip()
    return None


def _words(text: str) -> list[str]:
    return [w.strip("'’-") for w in _WORD.findall(text.lower()) if w not in _STOP]


def _idf(bodies: list[str]) -> dict[str, float]:
    df: Counter[str] = Counter()
    for body in bodies:
        df.update(set(_words(body)))
    n = len(bodies)
    return {w: math.log((1 + n) / (1 + c)) + 1 for w, c in df.items()}


def _tfidf(body: str, idf: dict[str, float]) -> dict[str, float]:
    counts = Counter(_words(body))
    return {w: (1 + math.log(c)) * idf.get(w, 1.0) for w, c in counts.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(v * b[w] for w, v in a.items() if w in b)
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def _key_sentences(body: str, idf: dict[str, float]) -> list[str]:
    """The :data:`PASSAGES` sentences whose words are most particular to this document."""
    text = re.sub(r"[*_`]+", "", re.sub(r"^#+\s.*$", "", body, flags=re.M))
    sentences = [  # within a paragraph: a heading line ends no sentence of the next one
        s.strip()
        for paragraph in re.split(r"\n\s*\n", text)
        for s in _SENTENCE.findall(" ".join(paragraph.split()))
    ]
    weights = _tfidf(text, idf)
    scored = []
    for i, sentence in enumerate(sentences):
        words = _words(sentence)
        if not 6 <= len(sentence.split()) <= 60 or not words:
            continue
        score = sum(weights.get(w, 0.0) for w in set(words)) / math.sqrt(len(words))
        scored.append((score, i, sentence))
    best = sorted(scored, key=lambda t: (-t[0], t[1]))[:PASSAGES]
    return [s for _, _, s in sorted(best, key=lambda t: t[1])]
