import os

from react_agent.configuration import Context
from react_agent.utils import get_message_text
from langchain_core.messages import AIMessage


def test_context_defaults() -> None:
    ctx = Context()
    assert ctx.model.startswith("openai/")
    assert ctx.max_search_results == 5


def test_context_reads_env(monkeypatch) -> None:
    monkeypatch.setitem(os.environ, "MODEL", "openai/gpt-4.1-mini")
    assert Context().model == "openai/gpt-4.1-mini"


def test_get_message_text_handles_blocks() -> None:
    msg = AIMessage(content=[{"type": "text", "text": "hello "}, "world"])
    assert get_message_text(msg) == "hello world"
