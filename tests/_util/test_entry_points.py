"""Third-party plugins arrive through the ``coalmine`` entry-point group, lazily."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from coalmine._util import registry as registry_module
from coalmine.providers.base import registry as providers

PLUGIN = """
from pydantic import BaseModel
from coalmine import AgentOutput, provider

class EchoSettings(BaseModel):
    prefix: str = ""

@provider("demo-echo", settings=EchoSettings)
class Echo:
    def __init__(self, *, agent, settings, base_dir):
        self.agent, self.prefix = agent, settings.prefix

    async def call(self, request):
        return AgentOutput(text=self.prefix + request.prompt)

    async def aclose(self):
        pass
"""


def install(site: Path, name: str, module_source: str, entry: str) -> None:
    """A minimal installed distribution: a module and a dist-info with entry points."""
    (site / f"{name}.py").write_text(textwrap.dedent(module_source))
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[coalmine]\n{entry} = {name}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    registry_module.set_entry_points_enabled(True)
    monkeypatch.setattr(registry_module, "_entry_points_loaded", False)
    monkeypatch.setattr(providers, "_items", dict(providers._items))
    yield tmp_path


def test_a_provider_from_an_entry_point_is_found_on_first_lookup(site: Path) -> None:
    install(site, "coalmine_demo_plugin", PLUGIN, "demo")
    assert "demo-echo" not in providers._items  # nothing is imported before a lookup
    found = providers.find("demo-echo")
    assert found is not None and found.settings.__name__ == "EchoSettings"


def test_a_broken_plugin_is_a_warning_naming_it(site: Path) -> None:
    install(site, "coalmine_broken_plugin", "raise RuntimeError('boom')\n", "broken")
    with pytest.warns(RuntimeWarning, match="'broken'.*boom"):
        assert providers.find("no-such-provider") is None
