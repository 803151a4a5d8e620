"""Offline checks of the agent wiring (no model calls). Run: uv run pytest tests/agent_checks.py"""

from orderdesk.triage import orders_agent, refunds_agent, triage_agent


def test_triage_hands_off_to_specialists() -> None:
    names = {a.name for a in triage_agent.handoffs}
    assert names == {"Orders Agent", "Refunds Agent"}


def test_refund_tool_only_on_refunds_agent() -> None:
    assert "issue_refund" in {t.name for t in refunds_agent.tools}
    assert "issue_refund" not in {t.name for t in orders_agent.tools}
