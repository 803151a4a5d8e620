"""A repository with an agent's surface on every side: tools, two MCP servers, documents, routes."""

from __future__ import annotations

import hashlib
import json
import shutil
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).parent

FILES = {
    "pyproject.toml": """
        [project]
        name = "helpdesk"
        version = "0.1.0"
        dependencies = ["openai>=1.0", "langchain-core>=0.3"]
    """,
    "helpdesk/__init__.py": "",
    "helpdesk/agent.py": '''
        from langchain_core.tools import tool
        from openai import OpenAI

        @tool
        def lookup_order(order_id: str) -> str:
            """Look an order up by its id."""
            return order_id

        @tool
        def refund_payment(order_id: str, amount: float) -> str:
            """Refund a payment to the customer's card."""
            return "refunded"
    ''',
    ".mcp.json": json.dumps(
        {
            "mcpServers": {
                "tickets": {"command": "python", "args": ["servers/tickets.py"]},
                "files": {"command": "python", "args": ["servers/files.py"]},
            }
        }
    ),
    "servers/tickets.py": '''
        from mcp.server.fastmcp import FastMCP

        mcp = FastMCP("tickets")

        @mcp.tool()
        def search_tickets(query: str) -> str:
            """Search the ticket tracker."""
            return ""

        @mcp.tool()
        def close_ticket(ticket_id: str) -> str:
            """Close a ticket permanently."""
            return ""
    ''',
    "servers/files.py": '''
        from mcp.server.fastmcp import FastMCP

        mcp = FastMCP("files")

        @mcp.tool()
        def read_file(path: str) -> str:
            """Read a file of the workspace."""
            return ""

        @mcp.tool()
        def delete_file(path: str) -> str:
            """Delete a file of the workspace."""
            return ""
    ''',
    "docs/returns.md": """
        # Returns and refunds

        Items can be returned within 30 days of delivery for a full refund.
        Refunds are paid back to the original card within five business days.
        Opened software cannot be returned unless it is faulty.
    """,
    "docs/shipping.md": """
        # Shipping times

        Standard shipping takes three to five business days inside the country.
        Express orders placed before noon leave the warehouse the same day.
        Tracking numbers are emailed when the parcel is handed to the courier.
    """,
    "package.json": json.dumps({"name": "helpdesk-web", "dependencies": {"next": "15.0.0"}}),
    "app/page.tsx": "export default function Home() { return <main>Helpdesk</main>; }\n",
    "app/pricing/page.tsx": "export default function Pricing() { return <main>Plans</main>; }\n",
}


def write_repo(root: Path) -> Path:
    """The repository, with nothing of coalmine's in it."""
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def agents_module(root: Path) -> str:
    """Copy the scripted agents into ``root`` under a name of its own, and return the name.

    The ``python`` provider imports an agent's module from the config's folder, and refuses a
    module of that name already imported from another folder: each repository of one test
    process gets its own name.
    """
    name = "scripted_" + hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:10]
    shutil.copy(HERE / "scripted.py", root / f"{name}.py")
    return name


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh copy of the repository."""
    return write_repo(tmp_path / "helpdesk")
