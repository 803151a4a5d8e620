"""Agents and their handoffs."""

from __future__ import annotations

import os

from agents import Agent
from agents.extensions.handoff_prompt import RECOMMENDED_PROMPT_PREFIX

from orderdesk.context import SupportContext
from orderdesk.tools import check_shipping_status, issue_refund, lookup_order, send_customer_email

MODEL = os.environ.get("ORDERDESK_MODEL", "gpt-4.1-mini")

orders_agent = Agent[SupportContext](
    name="Orders Agent",
    handoff_description="Answers questions about an order's status and shipping.",
    instructions=(
        f"{RECOMMENDED_PROMPT_PREFIX}\n"
        "You handle order and shipping questions. Always look the order up before answering. "
        "If the customer wants money back, hand off to the Refunds Agent."
    ),
    tools=[lookup_order, check_shipping_status],
    model=MODEL,
)

refunds_agent = Agent[SupportContext](
    name="Refunds Agent",
    handoff_description="Issues refunds for delivered or damaged orders, within policy.",
    instructions=(
        f"{RECOMMENDED_PROMPT_PREFIX}\n"
        "Policy: refunds only within 30 days of delivery and never above the amount left to refund. "
        "Confirm the order and amount, call issue_refund, then email the customer a confirmation."
    ),
    tools=[lookup_order, issue_refund, send_customer_email],
    model=MODEL,
)

triage_agent = Agent[SupportContext](
    name="Triage Agent",
    instructions=(
        f"{RECOMMENDED_PROMPT_PREFIX}\n"
        "You are the first point of contact for the shop's support desk. Work out what the "
        "customer needs and hand off to the right agent. Answer simple greetings yourself."
    ),
    handoffs=[orders_agent, refunds_agent],
    model=MODEL,
)

orders_agent.handoffs.append(triage_agent)
refunds_agent.handoffs.append(triage_agent)
