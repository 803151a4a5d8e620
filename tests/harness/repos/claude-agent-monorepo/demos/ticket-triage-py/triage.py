#!/usr/bin/env python3
"""Triage one support ticket with Claude and three in-process tools.

    python triage.py T-1042 "Customer says exports fail since Tuesday"
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    TextBlock,
    create_sdk_mcp_server,
    tool,
)

# Demo data; the real thing would call the helpdesk API.
TICKETS: dict[str, dict[str, Any]] = {
    "T-1042": {"customer": "ana@example.com", "subject": "CSV export fails", "priority": "p3"},
    "T-1043": {"customer": "li@example.com", "subject": "Invoice shows wrong VAT", "priority": "p2"},
}
OUTBOX: list[dict[str, str]] = []


def _text(s: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": s}]}


@tool("lookup_ticket", "Fetch a support ticket by id", {"ticket_id": str})
async def lookup_ticket(args: dict[str, Any]) -> dict[str, Any]:
    ticket = TICKETS.get(args["ticket_id"])
    if ticket is None:
        return {**_text(f"no ticket {args['ticket_id']}"), "is_error": True}
    return _text(json.dumps(ticket))


@tool("set_priority", "Set ticket priority (p1 = outage ... p4 = question)", {"ticket_id": str, "priority": str})
async def set_priority(args: dict[str, Any]) -> dict[str, Any]:
    if args["priority"] not in {"p1", "p2", "p3", "p4"}:
        return {**_text("priority must be p1-p4"), "is_error": True}
    TICKETS[args["ticket_id"]]["priority"] = args["priority"]
    return _text(f"{args['ticket_id']} -> {args['priority']}")


@tool("send_customer_reply", "Email a reply to the customer who opened the ticket", {"ticket_id": str, "body": str})
async def send_customer_reply(args: dict[str, Any]) -> dict[str, Any]:
    ticket = TICKETS[args["ticket_id"]]
    # TODO: swap the outbox for the SMTP relay once ops signs off
    OUTBOX.append({"to": ticket["customer"], "body": args["body"]})
    return _text(f"reply queued to {ticket['customer']}")


helpdesk = create_sdk_mcp_server(
    name="helpdesk",
    version="0.1.0",
    tools=[lookup_ticket, set_priority, send_customer_reply],
)

SYSTEM_PROMPT = (
    "You triage support tickets. Look the ticket up, set a priority, and draft a "
    "short, polite reply. Only send the reply if the user explicitly asks you to."
)


async def triage(ticket_id: str, note: str) -> str:
    options = ClaudeAgentOptions(
        system_prompt=SYSTEM_PROMPT,
        mcp_servers={"helpdesk": helpdesk},
        # send_customer_reply is deliberately NOT pre-approved
        allowed_tools=["mcp__helpdesk__lookup_ticket", "mcp__helpdesk__set_priority"],
        max_turns=8,
    )
    answer: list[str] = []
    async with ClaudeSDKClient(options=options) as client:
        await client.query(f"Ticket {ticket_id}: {note}")
        async for message in client.receive_response():
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, TextBlock):
                        answer.append(block.text)
            elif isinstance(message, ResultMessage) and message.total_cost_usd:
                print(f"[cost ${message.total_cost_usd:.4f}]")
    return "\n".join(answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("ticket_id")
    parser.add_argument("note", nargs="?", default="Please triage this ticket.")
    args = parser.parse_args()
    print(asyncio.run(triage(args.ticket_id, args.note)))


if __name__ == "__main__":
    main()
