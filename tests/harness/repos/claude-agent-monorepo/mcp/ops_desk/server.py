"""ops-desk: a small stdio MCP server over the ops desk SQLite database.

Registered in the repo's .mcp.json, so Claude Code (and any demo that loads
project settings) can use it. Two of the tools change things for real.
"""

from __future__ import annotations

import os
import smtplib
import sqlite3
from email.message import EmailMessage

from mcp.server.fastmcp import FastMCP

DB_PATH = os.environ.get("OPS_DESK_DB", "ops_desk.sqlite")
SMTP_HOST = os.environ.get("SMTP_HOST", "localhost")
FROM_ADDR = os.environ.get("OPS_DESK_FROM", "support@example.com")

mcp = FastMCP("ops-desk")


def _db() -> sqlite3.Connection:
    conn = sqlite3.connect(DB_PATH)
    conn.row_factory = sqlite3.Row
    return conn


@mcp.tool()
def lookup_customer(email: str) -> dict:
    """Return the customer record (plan, status, open ticket count) for an email."""
    with _db() as conn:
        row = conn.execute("SELECT * FROM customers WHERE email = ?", (email,)).fetchone()
    return dict(row) if row else {"error": f"no customer {email}"}


@mcp.tool()
def list_open_tickets(limit: int = 20) -> list[dict]:
    """List the most recent open tickets."""
    with _db() as conn:
        rows = conn.execute(
            "SELECT id, subject, priority, customer_email FROM tickets "
            "WHERE status = 'open' ORDER BY created_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
    return [dict(r) for r in rows]


@mcp.tool()
def delete_ticket(ticket_id: str) -> str:
    """Permanently delete a ticket and its message history. Cannot be undone."""
    with _db() as conn:
        conn.execute("DELETE FROM messages WHERE ticket_id = ?", (ticket_id,))
        cur = conn.execute("DELETE FROM tickets WHERE id = ?", (ticket_id,))
    return f"deleted {cur.rowcount} ticket(s)"


@mcp.tool()
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email from the support address."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = FROM_ADDR, to, subject
    msg.set_content(body)
    with smtplib.SMTP(SMTP_HOST) as smtp:
        smtp.send_message(msg)
    return f"sent to {to}"


if __name__ == "__main__":
    mcp.run()
