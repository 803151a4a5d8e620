"""The ``echo`` provider: the answer is the prompt, as promptfoo's ``echo`` answers."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from coalmine.config import load_config
from coalmine.providers.base import AgentRequest, CallContext, build_provider, provider_settings
from coalmine.providers.echo import EchoProvider, EchoSettings
from coalmine.results import AgentOutput

TRICKY = "---\r\nÜnïcødé 🚀\t  trailing  \n\n{{ not a template }} ${HOME}"


def test_the_answer_is_the_prompt_with_zero_tokens(tmp_path: Path) -> None:
    (tmp_path / "coalmine.yaml").write_text("agents:\n  Mirror: {provider: echo}\n")
    config = load_config(tmp_path, providers=provider_settings(), environ={})
    provider = build_provider(config.agents["Mirror"])

    async def main() -> AgentOutput:
        return await provider.call(AgentRequest(TRICKY, CallContext("c", "Mirror")))

    output = anyio.run(main)

    assert isinstance(provider, EchoProvider)
    assert output.text == TRICKY
    assert output.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert (output.model, output.tool_calls, output.warnings) == (None, [], [])


def test_echo_takes_no_settings() -> None:
    with pytest.raises(ValidationError):
        EchoSettings.model_validate({"model": "x"})
