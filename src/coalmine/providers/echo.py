"""The ``echo`` provider: the answer is the prompt, exactly (promptfoo's ``echo``).

It calls nothing: no network, no process, no cost. As promptfoo's ``echo`` (0.121.20) it
reports zero tokens. It is the provider to check a suite's prompts and graders without an
agent, and the one promptfoo configs use for examples and tests.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from coalmine.providers.base import AgentRequest, provider
from coalmine.results import AgentOutput

ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


class EchoSettings(BaseModel):
    """An ``echo`` agent has no settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@provider("echo", settings=EchoSettings)
class EchoProvider:
    """Answers every prompt with the prompt itself."""

    def __init__(self, *, agent: str, settings: BaseModel, base_dir: Path):
        assert isinstance(settings, EchoSettings)
        self.agent = agent

    async def call(self, request: AgentRequest) -> AgentOutput:
        """Return the prompt, byte for byte, with zero tokens used."""
        return AgentOutput(text=request.prompt, usage=dict(ZERO_USAGE))

    async def aclose(self) -> None:
        """Nothing to release."""
