"""Each shard's part of a limit: ``split_count``, ``shard_config`` and ``most_shards``.

The configs are real ``coalmine.yaml`` files loaded as a run loads them, so the judge that is
also an agent is the same object as that agent, as it is in a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine.config import Config
from coalmine.engine.history import require_project_config
from coalmine.engine.limits import most_shards, shard_config, split_count


def load(root: Path, data: dict[str, Any]) -> Config:
    root.mkdir(parents=True, exist_ok=True)
    (root / "coalmine.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return require_project_config(root)


def openai(**policy: Any) -> dict[str, Any]:
    return {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", **policy}


@pytest.mark.parametrize(
    ("total", "count", "parts"),
    [
        (7, 3, [3, 2, 2]),  # 7 // 3 = 2, and the first 7 % 3 = 1 shard takes one more
        (10, 4, [3, 3, 2, 2]),
        (8, 2, [4, 4]),
        (16, 1, [16]),
        (2, 3, [1, 1, 0]),  # fewer than the shards: the last gets none
        (0, 2, [0, 0]),
    ],
)
def test_split_count_gives_the_first_shards_the_remainder(
    total: int, count: int, parts: list[int]
) -> None:
    assert [split_count(total, i, count) for i in range(count)] == parts


def test_split_count_parts_sum_to_the_total_and_differ_by_one_at_most() -> None:
    for total in range(60):
        for count in range(1, 9):
            parts = [split_count(total, i, count) for i in range(count)]
            assert sum(parts) == total, (total, count, parts)
            assert max(parts) - min(parts) <= 1, (total, count, parts)
            assert parts == sorted(parts, reverse=True), (total, count, parts)


def test_shard_config_cuts_every_limit_so_the_shards_together_hold_it(tmp_path: Path) -> None:
    config = load(
        tmp_path / "proj",
        {
            "agents": {
                "Bot": openai(max_concurrency=7, requests_per_minute=60, tokens_per_minute=9000),
                "Rpm": openai(requests_per_minute=60),
                "Free": openai(),
            },
            "judge": "none",
        },
    )
    shards = [shard_config(config, i, 3) for i in range(3)]
    bots = [s.agents["Bot"].policy for s in shards]
    assert [p.max_concurrency for p in bots] == [3, 2, 2]
    assert [p.requests_per_minute for p in bots] == [20.0, 20.0, 20.0]
    assert [p.tokens_per_minute for p in bots] == [3000.0, 3000.0, 3000.0]
    assert [s.agents["Rpm"].policy.max_concurrency for s in shards] == [None, None, None]
    # an agent without limits is left as it was; the original config is not touched
    assert all(s.agents["Free"] is config.agents["Free"] for s in shards)
    assert config.agents["Bot"].policy.max_concurrency == 7
    assert config.agents["Bot"].policy.requests_per_minute == 60
    # the other settings of a cut agent stay
    assert shards[1].agents["Bot"].settings == config.agents["Bot"].settings
    assert shards[1].agents["Bot"].policy.retries == config.agents["Bot"].policy.retries


def test_requests_per_minute_over_four_shards_is_a_quarter_each(tmp_path: Path) -> None:
    config = load(
        tmp_path / "proj", {"agents": {"Bot": openai(requests_per_minute=60)}, "judge": "none"}
    )
    assert [shard_config(config, i, 4).agents["Bot"].policy.requests_per_minute
            for i in range(4)] == [15.0, 15.0, 15.0, 15.0]  # fmt: skip


def test_one_shard_keeps_the_whole_limit(tmp_path: Path) -> None:
    config = load(
        tmp_path / "proj",
        {"agents": {"Bot": openai(max_concurrency=5, requests_per_minute=90)}, "judge": "none"},
    )
    policy = shard_config(config, 0, 1).agents["Bot"].policy
    assert (policy.max_concurrency, policy.requests_per_minute) == (5, 90.0)


def test_a_judge_that_is_an_agent_stays_that_agent_after_the_cut(tmp_path: Path) -> None:
    config = load(
        tmp_path / "proj",
        {"agents": {"Bot": openai(max_concurrency=5, requests_per_minute=30)}, "judge": "Bot"},
    )
    assert config.judge is config.agents["Bot"]  # as loaded
    for index, share in [(0, 3), (1, 2)]:
        cut = shard_config(config, index, 2)
        assert cut.judge is cut.agents["Bot"]  # its calls share the agent's part, not a copy
        assert cut.judge.policy.max_concurrency == share
        assert cut.judge.policy.requests_per_minute == 15.0


def test_an_inline_judge_is_cut_on_its_own(tmp_path: Path) -> None:
    config = load(
        tmp_path / "proj",
        {
            "agents": {"Bot": openai(max_concurrency=4)},
            "judge": openai(max_concurrency=6, tokens_per_minute=1000),
        },
    )
    assert config.judge is not None and config.judge.name not in config.agents
    cuts = [shard_config(config, i, 4) for i in range(4)]
    judges = [c.judge for c in cuts]
    assert all(j is not None for j in judges)
    assert [j.policy.max_concurrency for j in judges if j] == [2, 2, 1, 1]
    assert [j.policy.tokens_per_minute for j in judges if j] == [250.0] * 4
    assert [c.agents["Bot"].policy.max_concurrency for c in cuts] == [1, 1, 1, 1]
    assert all(c.judge is not c.agents["Bot"] for c in cuts)


def test_a_config_without_a_judge_keeps_none(tmp_path: Path) -> None:
    config = load(
        tmp_path / "proj", {"agents": {"Bot": openai(max_concurrency=2)}, "judge": "none"}
    )
    assert shard_config(config, 1, 2).judge is None


def test_most_shards_is_the_smallest_max_concurrency(tmp_path: Path) -> None:
    config = load(
        tmp_path / "proj",
        {
            "agents": {
                "Wide": openai(max_concurrency=12),
                "Narrow": openai(max_concurrency=3),
                "Rpm": openai(requests_per_minute=10),
                "Free": openai(),
            },
            "judge": "none",
        },
    )
    a = config.agents
    assert most_shards([a["Wide"], a["Narrow"], a["Rpm"], None]) == 3
    assert most_shards([a["Wide"], a["Free"]]) == 12
    # a rate limit alone does not bound the shards (it is split evenly); nothing bounds none
    assert most_shards([a["Rpm"], a["Free"], None]) is None
    assert most_shards([]) is None
