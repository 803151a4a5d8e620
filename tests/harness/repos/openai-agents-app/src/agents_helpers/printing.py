"""Pretty-print the items of a finished run."""

from __future__ import annotations

from agents import HandoffOutputItem, ItemHelpers, MessageOutputItem, RunResult, ToolCallItem, ToolCallOutputItem
from rich.console import Console

console = Console(stderr=True)


def print_run(result: RunResult) -> None:
    for item in result.new_items:
        name = item.agent.name
        if isinstance(item, MessageOutputItem):
            console.print(f"[bold]{name}[/]: {ItemHelpers.text_message_output(item)}")
        elif isinstance(item, HandoffOutputItem):
            console.print(f"[cyan]handoff[/] {item.source_agent.name} -> {item.target_agent.name}")
        elif isinstance(item, ToolCallItem):
            console.print(f"[yellow]{name}[/] calls {getattr(item.raw_item, 'name', 'tool')}")
        elif isinstance(item, ToolCallOutputItem):
            console.print(f"[dim]  -> {item.output}[/]")
    console.print(f"[dim]last agent: {result.last_agent.name}[/]")
