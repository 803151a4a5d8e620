"""The web-app kit's gates run for real: Playwright in Debian's Chromium against a tiny app.

The app is a small Node server (``server.js``) that renders ``pages/<route>.js`` afresh on
every request, so a test changes a page by rewriting its file. It is adopted through the real
CLI (``coalmine init --apply --kit web-app``), which finds its routes in ``pages/``, and then
``bash gates/web-smoke.sh smoke|a11y|visual`` runs the generated specs against it.

Needs Node.js, Debian's Chromium (``apt-get install -y chromium``) and a ``node_modules`` with
the pinned Playwright and axe, named by ``COALMINE_PLAYWRIGHT_MODULES`` (``.ci/run`` installs
them aside). Without them the tests skip, except in CI, where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.helpers.cli import run_main

pytestmark = [
    pytest.mark.slow,  # a browser: each gate run takes a few seconds
    pytest.mark.xdist_group("web-app-browser"),  # one app server and one adopted repo for all
    pytest.mark.timeout(300),
]

PLAYWRIGHT = "1.64.1"
"""The @playwright/test that .ci/run installs: built for Chromium 156, Debian 12's."""
AXE = "4.14.1"
MODULES_VAR = "COALMINE_PLAYWRIGHT_MODULES"
INSTALL = (
    f"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix /tmp/coalmine-pw "
    f"@playwright/test@{PLAYWRIGHT} @axe-core/playwright@{AXE} && "
    f"export {MODULES_VAR}=/tmp/coalmine-pw/node_modules"
)
CHROMIUM_BINARY = Path("/usr/lib/chromium/chromium")
"""Debian's Chromium itself (``/usr/bin/chromium`` is a shell wrapper that adds flags)."""

ROUTES = ["/", "/console", "/photo"]
SERVER = """\
// A tiny app: GET /name renders pages/name.js (pages/index.js for /), read on every request.
const http = require("http");
const path = require("path");

const server = http.createServer((request, response) => {
  const route = new URL(request.url, "http://127.0.0.1").pathname;
  const file = path.join(__dirname, "pages", `${route === "/" ? "index" : route.slice(1)}.js`);
  let html;
  try {
    delete require.cache[require.resolve(file)];
    html = require(file)();
  } catch {
    response.writeHead(404, { "content-type": "text/plain" }).end(`no page ${route}\\n`);
    return;
  }
  response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
});
server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log(`listening on ${server.address().port}`);
});
"""
PIXEL = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='40' height='40'%3E"
    "%3Crect width='40' height='40' fill='%23369'/%3E%3C/svg%3E"
)
CONSOLE_ERROR = '<script>console.error("boom: the widget failed to start");</script>'
IMAGE_WITHOUT_ALT = f'<img src="{PIXEL}" width="40" height="40">'
RED_BANNER = '<p style="background:#b00;color:#fff;padding:48px">Sale: everything must go!</p>'


def page(title: str, body: str) -> str:
    """A page module of the app: valid, accessible HTML around ``body``."""
    html = (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"</head>\n<body><main><h1>{title}</h1>{body}</main></body></html>\n"
    )
    return f"module.exports = () => {json.dumps(html)};\n"


def need(message: str) -> NoReturn:
    """Skip for lack of a tool, except in CI, which must run these tests."""
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI must run the browser tests)")
    pytest.skip(message)


@dataclass(frozen=True)
class Tools:
    modules: Path
    chromium: str


@pytest.fixture(scope="module")
def tools() -> Tools:
    if shutil.which("node") is None or shutil.which("npx") is None:
        need("Node.js is not installed; install it with: apt-get install -y nodejs npm")
    chromium = os.environ.get("COALMINE_CHROMIUM") or (
        str(CHROMIUM_BINARY) if CHROMIUM_BINARY.exists() else shutil.which("chromium")
    )
    if not chromium:
        need("Debian's Chromium is not installed; install it with: apt-get install -y chromium")
    value = os.environ.get(MODULES_VAR)
    if not value:
        need(f"set {MODULES_VAR} to a node_modules with Playwright and axe, e.g.: {INSTALL}")
    modules = Path(value)
    for package in ("@playwright/test", "@axe-core/playwright"):
        if not (modules / package / "package.json").is_file():
            pytest.fail(f"{MODULES_VAR}={modules} has no {package}; install it with: {INSTALL}")
    installed = json.loads((modules / "@playwright/test/package.json").read_text("utf-8"))
    assert installed["version"] == PLAYWRIGHT, f"{MODULES_VAR} has another Playwright: {INSTALL}"
    return Tools(modules, chromium)


@dataclass(frozen=True)
class App:
    root: Path
    url: str

    def write(self, name: str, title: str, body: str) -> None:
        (self.root / "pages" / f"{name}.js").write_text(page(title, body), encoding="utf-8")

    def reset(self) -> None:
        """The app as each test starts: /console logs an error, /photo's image has no alt."""
        self.write("index", "Home", "<p>Welcome to the tiny app.</p>")
        self.write("console", "Console", f"<p>Loaded.</p>{CONSOLE_ERROR}")
        self.write("photo", "Photo", IMAGE_WITHOUT_ALT)
        shutil.rmtree(self.root / "harness/web/__screenshots__", ignore_errors=True)


@pytest.fixture(scope="module")
def adopted(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    """The tiny app with the web-app kit adopted, served on 127.0.0.1 for the whole module."""
    root = tmp_path_factory.mktemp("web-app") / "repo"
    (root / "pages").mkdir(parents=True)
    (root / "package.json").write_text(
        json.dumps({"name": "tiny-app", "private": True, "scripts": {"dev": "node server.js"}}),
        encoding="utf-8",
    )
    (root / "server.js").write_text(SERVER, encoding="utf-8")
    app = App(root, "")
    app.reset()

    code, out = run_main("init", "--apply", "--no-diff", "--kit", "web-app", "--root", str(root))
    assert code == 0, out
    assert "create    gates/web-smoke.sh  (web-app)" in out
    smoke = (root / "harness/web/smoke.spec.ts").read_text("utf-8")
    assert "".join(f"\n  {json.dumps(r)}," for r in ROUTES) in smoke  # the routes were found
    (root / "node_modules").symlink_to(tools.modules, target_is_directory=True)

    server = subprocess.Popen(
        ["node", "server.js"],
        cwd=root,
        env={**os.environ, "PORT": "0"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        started = re.fullmatch(r"listening on (\d+)\n", server.stdout.readline())
        assert started, "the app server did not start"
        yield App(root, f"http://127.0.0.1:{started[1]}")
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()


@pytest.fixture
def app(adopted: App) -> App:
    adopted.reset()
    return adopted


@dataclass(frozen=True)
class GateRun:
    returncode: int
    output: str
    report: dict[str, Any]

    def specs(self) -> dict[str, dict[str, Any]]:
        """Playwright's JSON report: each test by title."""
        return {
            spec["title"]: spec
            for suite in self.report.get("suites", [])
            for spec in suite.get("specs", [])
        }

    def passed(self) -> dict[str, bool]:
        return {title: spec["ok"] for title, spec in self.specs().items()}

    def metrics(self, title: str) -> dict[str, Any]:
        """The ``metrics`` annotation a spec records for the test ``title``."""
        [test] = self.specs()[title]["tests"]
        [found] = [a for a in test["annotations"] if a["type"] == "metrics"]
        return dict(json.loads(found["description"]))


def gate(app: App, tools: Tools, *args: str) -> GateRun:
    """``bash gates/web-smoke.sh ARGS`` against the app, in Debian's Chromium."""
    report = app.root / ".coalmine/playwright/report.json"
    report.unlink(missing_ok=True)
    env = {
        **os.environ,
        "COALMINE_WEB_URL": app.url,
        "COALMINE_CHROMIUM": tools.chromium,
        "PLAYWRIGHT_JSON_OUTPUT_NAME": str(report),
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        "FORCE_COLOR": "0",
    }
    proc = subprocess.run(
        ["bash", "gates/web-smoke.sh", *args, "--reporter=list,json"],
        cwd=app.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert report.is_file(), f"Playwright wrote no report:\n{output}"
    return GateRun(proc.returncode, output, json.loads(report.read_text("utf-8")))


def test_smoke_fails_on_the_route_that_logs_a_console_error_and_passes_once_fixed(
    app: App, tools: Tools
) -> None:
    broken = gate(app, tools, "smoke")
    assert broken.returncode == 1, broken.output
    assert broken.passed() == {
        "route / loads cleanly": True,
        "route /console loads cleanly": False,
        "route /photo loads cleanly": True,
    }, broken.output
    assert "Error: console errors on /console" in broken.output
    assert "boom: the widget failed to start" in broken.output
    assert broken.metrics("route /console loads cleanly")["consoleErrors"] == 1
    assert broken.metrics("route / loads cleanly")["consoleErrors"] == 0

    app.write("console", "Console", "<p>Loaded.</p><script>console.log('started');</script>")
    fixed = gate(app, tools, "smoke")
    assert fixed.returncode == 0, fixed.output
    assert set(fixed.passed().values()) == {True} and len(fixed.passed()) == len(ROUTES)
    assert "3 passed" in fixed.output
    for route in ROUTES:
        metrics = fixed.metrics(f"route {route} loads cleanly")
        assert (metrics["consoleErrors"], metrics["networkFailures"]) == (0, 0), metrics
        assert 0 < metrics["loadMs"] <= 3000, metrics


def test_a11y_reports_the_missing_alt_text_by_severity(app: App, tools: Tools) -> None:
    title = "route /photo has no serious accessibility violations"
    broken = gate(app, tools, "a11y")
    assert broken.returncode == 1, broken.output
    assert [t for t, ok in broken.passed().items() if not ok] == [title], broken.output
    assert "serious or critical violations on /photo" in broken.output
    assert "critical image-alt: Images must have alternative text (1 element)" in broken.output
    assert broken.metrics(title)["violations"] == {
        "minor": 0, "moderate": 0, "serious": 0, "critical": 1,
    }  # fmt: skip
    clean = broken.metrics("route / has no serious accessibility violations")
    assert set(clean["violations"].values()) == {0}

    app.write("photo", "Photo", IMAGE_WITHOUT_ALT.replace("<img ", '<img alt="A blue square" '))
    fixed = gate(app, tools, "a11y")
    assert fixed.returncode == 0, fixed.output
    assert set(fixed.metrics(title)["violations"].values()) == {0}


def test_visual_records_baselines_then_passes_and_fails_when_a_page_changes(
    app: App, tools: Tools
) -> None:
    baselines = app.root / "harness/web/__screenshots__/linux"
    recorded = gate(app, tools, "visual", "--update-snapshots")
    assert recorded.returncode == 0, recorded.output
    assert sorted(p.name for p in baselines.iterdir()) == ["console.png", "home.png", "photo.png"]

    same = gate(app, tools, "visual")
    assert same.returncode == 0, same.output
    assert "3 passed" in same.output

    app.write("photo", "Photo", IMAGE_WITHOUT_ALT + RED_BANNER)
    changed = gate(app, tools, "visual")
    assert changed.returncode == 1, changed.output
    assert changed.passed() == {
        "route / looks as approved": True,
        "route /console looks as approved": True,
        "route /photo looks as approved": False,
    }, changed.output
    assert re.search(
        r"\d+ pixels \(ratio [\d.]+ of all image pixels\) are different", changed.output
    )
    assert "photo-diff.png" in changed.output
