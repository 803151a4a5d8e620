"""The web-app kit: Playwright specs for the routes found, and gates/web-smoke.sh run for real."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.gate_sandbox import Sandbox, make_context, render

ROUTES = ["/", "/about", "/blog/posts"]
SPECS = ["harness/web/smoke.spec.ts", "harness/web/a11y.spec.ts", "harness/web/visual.spec.ts"]
CONFIG = "harness/web/playwright.config.ts"


def spec_routes(text: str) -> list[str]:
    """The ROUTES array of a spec, read as JSON (it is written one string a line)."""
    found = re.search(r"const ROUTES: string\[\] = \[(.*?)\];", text, re.S)
    assert found, "no ROUTES array"
    return list(json.loads("[" + found[1].strip().rstrip(",") + "]"))


def make_sandbox(tmp_path: Path, **facts: object) -> Sandbox:
    box = Sandbox(tmp_path, "web-app", make_context(facts=facts))
    (box.root / "node_modules/@playwright/test").mkdir(parents=True)
    (box.root / "node_modules/@axe-core/playwright").mkdir(parents=True)
    return box


def test_specs_visit_every_route_and_use_playwright() -> None:
    files = render("web-app", make_context(facts={"routes": ROUTES, "dev_command": "npm run dev"}))
    assert list(files) == [*SPECS, CONFIG, "gates/web-smoke.sh"]
    for path in SPECS:
        text = files[path].text
        assert text.startswith("// Owned by coalmine kit web-app (see harness/manifest.json)")
        assert 'from "@playwright/test";' in text
        assert spec_routes(text) == ROUTES
    smoke, a11y, visual = (files[p].text for p in SPECS)
    assert "consoleErrors" in smoke and "networkFailures" in smoke and "ROUTE_BUDGET_MS" in smoke
    assert 'import AxeBuilder from "@axe-core/playwright";' in a11y
    assert 'FAILING_IMPACTS = ["serious", "critical"]' in a11y
    assert "toHaveScreenshot(" in visual and "maxDiffPixelRatio" in visual


def test_config_starts_the_dev_server_and_reads_base_url() -> None:
    files = render("web-app", make_context(facts={"routes": ROUTES, "dev_command": "pnpm dev"}))
    config = files[CONFIG].text
    assert 'process.env.COALMINE_WEB_URL ?? "http://127.0.0.1:3000"' in config
    assert 'command: "pnpm dev",' in config and 'cwd: "../.."' in config
    assert 'testDir: "."' in config


def test_config_takes_the_browser_from_coalmine_chromium() -> None:
    config = render("web-app", make_context())[CONFIG].text
    assert (
        "// COALMINE_CHROMIUM=/usr/lib/chromium/chromium runs the tests in that Chromium" in config
    )
    assert "const chromium = process.env.COALMINE_CHROMIUM || undefined;" in config
    assert "launchOptions: chromium ? { executablePath: chromium } : {}," in config


def test_sveltekit_routes_default_to_vites_port() -> None:
    signals = {"web-ui:routes": [{"path": "src/routes/+page.svelte", "line": None}]}
    files = render("web-app", make_context(facts={"routes": ["/"]}, signals=signals))
    assert '?? "http://127.0.0.1:5173"' in files[CONFIG].text


def test_empty_facts_still_give_working_files() -> None:
    files = render("web-app", make_context())
    for path in SPECS:
        assert spec_routes(files[path].text) == ["/"]
    config = files[CONFIG].text
    assert "webServer:" not in config.replace("// webServer:", "")
    assert "export default defineConfig({" in config and config.rstrip().endswith("});")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), ["harness/web/smoke.spec.ts"]),
        (("a11y",), ["harness/web/a11y.spec.ts"]),
        (("visual", "--update-snapshots"), ["harness/web/visual.spec.ts", "--update-snapshots"]),
        (("all", "--workers=1"), ["--workers=1"]),
    ],
)
def test_web_smoke_runs_playwright_with_the_config(
    tmp_path: Path, args: tuple[str, ...], expected: list[str]
) -> None:
    box = make_sandbox(tmp_path, routes=ROUTES)
    box.shim("npx")
    result = box.run("gates/web-smoke.sh", *args)
    assert result.returncode == 0, result.stderr
    [call] = box.calls("npx")
    assert call["argv"] == ["playwright", "test", "--config", CONFIG, *expected]


def test_web_smoke_fails_with_playwright(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    box.shim("npx", code=1)
    assert box.run("gates/web-smoke.sh").returncode == 1


def test_web_smoke_without_npx_gives_a_hint(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path, node_package_manager="pnpm")
    result = box.run("gates/web-smoke.sh")
    assert result.returncode == 127
    assert "pnpm add --save-dev @playwright/test" in result.stderr


def test_web_smoke_without_playwright_installed_gives_a_hint(tmp_path: Path) -> None:
    box = Sandbox(tmp_path, "web-app", make_context(facts={"node_package_manager": "yarn"}))
    box.shim("npx")
    result = box.run("gates/web-smoke.sh")
    assert result.returncode == 127
    assert "@playwright/test is not installed" in result.stderr
    assert "yarn add --dev @playwright/test" in result.stderr
    assert box.calls() == []


def test_web_smoke_documents_coalmine_chromium_and_checks_it(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    assert "#   COALMINE_CHROMIUM   a Chromium executable" in box.files["gates/web-smoke.sh"].text
    box.shim("npx")
    result = box.run("gates/web-smoke.sh", env={"COALMINE_CHROMIUM": "/no/such/chromium"})
    assert result.returncode == 127
    assert "COALMINE_CHROMIUM=/no/such/chromium is not an executable" in result.stderr
    assert box.calls() == []
    chromium = box.bin / "chromium"
    chromium.write_text("#!/bin/sh\n", encoding="utf-8")
    chromium.chmod(0o755)
    assert box.run("gates/web-smoke.sh", env={"COALMINE_CHROMIUM": str(chromium)}).returncode == 0
    assert len(box.calls("npx")) == 1


def test_a11y_needs_axe(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    (box.root / "node_modules/@axe-core/playwright").rmdir()
    box.shim("npx")
    assert box.run("gates/web-smoke.sh", "smoke").returncode == 0
    result = box.run("gates/web-smoke.sh", "a11y")
    assert result.returncode == 127 and "@axe-core/playwright" in result.stderr
