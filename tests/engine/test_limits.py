"""Limits per agent: concurrency and rate across every case, and the retry back-off."""

from __future__ import annotations

import random

import anyio
import pytest

from coalmine.engine.limits import RateGate, backoff_delay
from tests.helpers.openai_server import FakeOpenAI, Reply
from tests.helpers.project import Project


def test_backoff_is_full_jitter_under_a_doubling_ceiling() -> None:
    rng = random.Random(7)
    # attempt 1: ceiling min(60, 1·2^0) = 1; attempt 4: min(60, 1·2^3) = 8; attempt 9: cap 60
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (4, 8.0), (9, 60.0)]:
        delays = [backoff_delay(attempt, base=1.0, cap=60.0, rng=rng) for _ in range(200)]
        assert 0.0 <= min(delays) and max(delays) <= ceiling
        assert max(delays) > ceiling * 0.8  # the whole range is used (jitter, not a constant)


def test_retry_after_wins_up_to_the_cap() -> None:
    assert backoff_delay(1, base=1.0, cap=60.0, retry_after=7.5) == 7.5
    assert backoff_delay(1, base=1.0, cap=5.0, retry_after=7.5) == 5.0


def test_rate_gate_spaces_starts_and_pauses_after_a_429() -> None:
    now = [100.0]
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(round(seconds, 6))

    async def scenario() -> None:
        gate = RateGate(120, clock=lambda: now[0], sleep=fake_sleep)  # one start every 0.5 s
        await gate.wait()  # starts at once
        await gate.wait()  # reserved the slot at 100.5
        gate.pause(3.0)  # a 429: nobody starts before 103.0
        await gate.wait()

    anyio.run(scenario)
    assert slept == [0.5, 3.0]


def test_max_concurrency_holds_across_200_cases(
    project: Project, openai_server: FakeOpenAI
) -> None:
    openai_server.default = lambda received: Reply(text="SQL injection found", delay=0.03)
    project.config(
        {
            "agents": {
                "QA Coordinator": {
                    "provider": "openai",
                    "model": "m",
                    "base_url": openai_server.base_url,
                    "max_concurrency": 8,
                }
            },
            "judge": "none",
        }
    )
    for i in range(200):
        project.canary(f"qa-{i:03d}-case")
    proc = project.run_cli("canary", "run", "--jobs", "32", "--display", "none", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(openai_server.requests) == 200
    assert openai_server.max_in_flight <= 8  # the server's own count
    assert openai_server.max_in_flight >= 6  # and the limit was actually used


@pytest.mark.parametrize("rpm", [600])
def test_requests_per_minute_paces_the_starts(
    project: Project, openai_server: FakeOpenAI, rpm: int
) -> None:
    project.config(
        {
            "agents": {
                "QA Coordinator": {
                    "provider": "openai",
                    "model": "m",
                    "base_url": openai_server.base_url,
                    "requests_per_minute": rpm,
                }
            },
            "judge": "none",
        }
    )
    for i in range(6):
        project.canary(f"qa-{i:03d}-case")
    openai_server.default = lambda received: Reply(text="SQL injection found")
    proc = project.run_cli("canary", "run", "--jobs", "6", "--display", "none")
    assert proc.returncode == 0, proc.stderr
    times = sorted(r.received_at for r in openai_server.requests)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # 600/min is one start every 0.1 s. The first request reaches the server late (the HTTP
    # client is built on the first call), so it may arrive with the second; the rest are paced.
    assert min(gaps[1:]) >= 0.08, gaps
    assert times[-1] - times[0] >= 0.4 - 0.02, gaps


def test_tokens_per_minute_waits_for_the_window_to_free_up() -> None:
    now = [0.0]
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(round(seconds, 6))

    async def scenario() -> None:
        gate = RateGate(None, tokens_per_minute=1000, clock=lambda: now[0], sleep=fake_sleep)
        await gate.wait()  # nothing used yet: starts at once
        gate.used(600)  # at t=0
        now[0] = 10.0
        await gate.wait()  # 600 < 1000: starts at once
        gate.used(500)  # at t=10: the last minute now holds 1100 >= 1000
        now[0] = 20.0
        await gate.wait()  # waits until the t=0 call leaves the window: 60 - 20 = 40 s

    anyio.run(scenario)
    assert slept == [40.0]
