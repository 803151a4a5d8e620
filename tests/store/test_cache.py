"""The response cache: keys over everything that shapes an answer, explained misses, no crashes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coalmine.results import AgentOutput
from coalmine.store.cache import CacheKey, ResponseCache
from coalmine.store.runs import Store

IDENTITY: dict[str, Any] = {
    "provider": "openai",
    "model": "gpt-agent",
    "base_url": "http://127.0.0.1:8000/v1",
    "system": "You are a reviewer.",
    "temperature": 0.0,
}
KEY = CacheKey(IDENTITY, "Review this diff", 0)
ANSWER = AgentOutput(
    text="Found: injection ☕\r\nline two",
    model="gpt-agent-2026-01",
    usage={"prompt_tokens": 12, "completion_tokens": 7},
    warnings=["invalid UTF-8 was replaced"],
)
UNREADABLE = "the cached entry is unreadable"
DAMAGED = "the cached answer's text is missing or damaged"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / ".coalmine" / "coalmine.db")
    yield opened
    opened.close()


@pytest.fixture
def cache(store: Store) -> ResponseCache:
    return ResponseCache(store)


def with_identity(**changes: Any) -> dict[str, Any]:
    return IDENTITY | changes


@pytest.mark.parametrize(
    "other",
    [
        CacheKey(with_identity(model="gpt-other"), "Review this diff", 0),
        CacheKey(with_identity(base_url="http://127.0.0.1:9000/v1"), "Review this diff", 0),
        CacheKey(with_identity(system="You are terse."), "Review this diff", 0),
        CacheKey(with_identity(temperature=0.2), "Review this diff", 0),
        CacheKey(with_identity(seed=1), "Review this diff", 0),
        CacheKey(IDENTITY, "Review this diff ", 0),
        CacheKey(IDENTITY, "Review this diff", 1),
    ],
    ids=["model", "base_url", "system", "temperature", "new-field", "prompt", "repeat"],
)
def test_every_component_changes_the_key(other: CacheKey) -> None:
    assert other.key != KEY.key
    assert other.key.startswith("sha256:")


def test_the_key_does_not_depend_on_identity_order() -> None:
    reordered = dict(reversed(list(IDENTITY.items())))
    assert CacheKey(reordered, "Review this diff", 0).key == KEY.key


def test_scope_changes_with_the_identity_only() -> None:
    assert CacheKey(IDENTITY, "another prompt", 3).scope == KEY.scope
    assert CacheKey(with_identity(temperature=0.2), "Review this diff", 0).scope != KEY.scope


def test_put_then_get_keeps_the_whole_answer(cache: ResponseCache) -> None:
    cache.put(KEY, ANSWER)
    found = cache.get(KEY)
    assert found.reason == "hit"
    assert found.output == ANSWER
    assert found.output is not None and found.output.text == "Found: injection ☕\r\nline two"


def test_the_row_keeps_the_text_only_as_an_artifact(store: Store, cache: ResponseCache) -> None:
    cache.put(KEY, ANSWER)
    output, artifact = store.conn.execute(
        "SELECT output, text_artifact FROM response_cache"
    ).fetchone()
    assert "injection" not in output
    assert store.artifacts.get(artifact) == ANSWER.text


def test_putting_again_replaces_the_answer(cache: ResponseCache, store: Store) -> None:
    cache.put(KEY, ANSWER)
    cache.put(KEY, AgentOutput(text="a newer answer"))
    assert store.conn.execute("SELECT COUNT(*) FROM response_cache").fetchone()[0] == 1
    found = cache.get(KEY)
    assert found.output == AgentOutput(text="a newer answer")


def test_misses_say_why(cache: ResponseCache) -> None:
    first = cache.get(KEY)
    assert first.output is None
    assert first.reason == "nothing is cached for this agent and settings yet"

    cache.put(CacheKey(IDENTITY, "Another prompt", 0), ANSWER)
    second = cache.get(KEY)
    assert second.output is None
    assert second.reason == "the prompt is new or changed (1 other answer of this agent cached)"

    cache.put(CacheKey(with_identity(temperature=0.2), "Review this diff", 0), ANSWER)
    third = cache.get(KEY)
    assert third.output is None
    assert third.reason == "cached for the same prompt with identity.temperature: 0.2 → 0.0"


def test_a_miss_names_every_difference_of_the_nearest_entry(cache: ResponseCache) -> None:
    # Two entries for the same prompt: one differs in model and repeat, one in repeat only.
    cache.put(CacheKey(with_identity(model="gpt-old"), "Review this diff", 1), ANSWER)
    cache.put(CacheKey(IDENTITY, "Review this diff", 1), ANSWER)
    assert cache.get(KEY).reason == "cached for the same prompt with repeat: 1 → 0"
    far = CacheKey(with_identity(model="gpt-new"), "Review this diff", 0)
    assert cache.get(far).reason == (
        'cached for the same prompt with identity.model: "gpt-old" → "gpt-new"; repeat: 1 → 0'
    )


def damage(store: Store, name: str) -> None:
    """Spoil a stored text wherever it lives (the blobs table, or a file for large ones)."""
    if store.conn.execute("UPDATE blobs SET text = 'garbage' WHERE name = ?", (name,)).rowcount:
        return
    store.artifacts.path_of(name).write_text("garbage", encoding="utf-8")


def forget(store: Store, name: str) -> None:
    store.conn.execute("DELETE FROM blobs WHERE name = ?", (name,))
    store.artifacts.path_of(name).unlink(missing_ok=True)


@pytest.mark.parametrize("size", [10, 10_000], ids=["inline", "file"])
def test_a_damaged_answer_is_a_miss(store: Store, cache: ResponseCache, size: int) -> None:
    answer = ANSWER.model_copy(update={"text": "x" * size})
    cache.put(KEY, answer)
    (artifact,) = store.conn.execute("SELECT text_artifact FROM response_cache").fetchone()
    damage(store, artifact)
    damaged = cache.get(KEY)
    assert damaged.output is None
    assert damaged.reason == DAMAGED
    forget(store, artifact)
    assert cache.get(KEY).reason == DAMAGED


@pytest.mark.parametrize("size", [10, 10_000], ids=["inline", "file"])
def test_caching_again_repairs_a_damaged_answer(
    store: Store, cache: ResponseCache, size: int
) -> None:
    answer = ANSWER.model_copy(update={"text": "x" * size})
    cache.put(KEY, answer)
    (artifact,) = store.conn.execute("SELECT text_artifact FROM response_cache").fetchone()
    damage(store, artifact)
    cache.put(KEY, answer)  # what the runner does after the miss: the agent answered again
    assert cache.get(KEY).reason == "hit"


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("output", "garbage", UNREADABLE),
        ("output", "{not json", UNREADABLE),
        ("output", '{"model": "x"}', UNREADABLE),  # valid JSON, but no text field
        ("output", "[]", UNREADABLE),
        ("text_artifact", "md5:0123", DAMAGED),  # a hash scheme this coalmine does not know
        ("text_artifact", "sha256:" + "0" * 64, DAMAGED),
    ],
)
def test_an_unreadable_row_is_a_miss_never_an_error(
    store: Store, cache: ResponseCache, column: str, value: str, reason: str
) -> None:
    cache.put(KEY, ANSWER)
    store.conn.execute(f"UPDATE response_cache SET {column} = ?", (value,))
    found = cache.get(KEY)
    assert found.output is None
    assert found.reason == reason


def test_garbage_components_do_not_break_explaining(store: Store, cache: ResponseCache) -> None:
    cache.put(CacheKey(with_identity(temperature=0.2), "Review this diff", 0), ANSWER)
    store.conn.execute("UPDATE response_cache SET components = 'garbage'")
    found = cache.get(KEY)
    assert found.output is None
    assert found.reason == "nothing is cached for this agent and settings yet"


def test_two_stores_on_one_file_share_the_cache(tmp_path: Path) -> None:
    path = tmp_path / ".coalmine" / "coalmine.db"
    first, second = Store.open(path), Store.open(path)
    try:
        ResponseCache(first).put(KEY, ANSWER)
        assert ResponseCache(second).get(KEY).output == ANSWER
        other = CacheKey(IDENTITY, "Second prompt", 0)
        ResponseCache(second).put(other, AgentOutput(text="second"))
        assert ResponseCache(first).get(other).output == AgentOutput(text="second")
    finally:
        first.close()
        second.close()


def test_a_structured_answer_comes_back_with_its_data(cache: ResponseCache) -> None:
    answer = AgentOutput(text='{"a":[1,null]}', data={"a": [1, None]}, cost=0.5)
    cache.put(KEY, answer)
    back = cache.get(KEY).output
    assert back == answer and back is not None and back.data == {"a": [1, None]}
