"""The viewer's red-team page of an eval run, in a real headless Chromium (selenium).

A small red-team pack (``coalmine redteam generate --surface general,tools --strategies
base64``) of the repository the red-team tests use is run through the real CLI against the
scripted agent that complies with every attack, with one control case given a grader that
always fails (a flagged control). Two more eval runs: a suite with no red-team case, and a
red-team case whose tags and grader name are markup (a case id cannot be: ids are checked).
The store is served by the real app; what the page shows is checked against ``load_findings``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from coalmine.engine.history import open_store
from coalmine.redteam.owasp import OWASP_2025
from coalmine.redteam.report import Findings, load_findings
from coalmine.store.browse import RunFilter, list_runs
from tests.helpers.browser import click, headless_chromium, texts
from tests.helpers.cli import run_main
from tests.helpers.viewer import serving
from tests.redteam.conftest import write_repo
from tests.redteam.test_packs import configure

pytestmark = pytest.mark.slow

PAYLOAD = "<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED2'\">"
WRONG = "wrong-grader"
"""The grader added to every control case: it wants a text no answer holds, so it fails."""


@dataclass(frozen=True)
class Stored:
    root: Path
    store: Path
    redteam: str
    """The red-team run (general and tools, base64), a control flagged."""
    plain: str
    """A run with no red-team case."""
    planted: str
    """A red-team case whose tags and failed grader's name are markup."""
    findings: Findings
    """``load_findings`` of the red-team run."""


def eval_run(root: Path, *suites: str) -> str:
    """``coalmine eval run SUITES`` (a FAIL among them is fine); the id of the run it stored."""
    code, out = run_main("eval", "run", *suites, "--root", str(root), "--display", "none")
    assert code in (0, 1), out
    store = open_store(root, create="never")
    try:
        return list_runs(store, RunFilter(kind="eval"))[0].id
    finally:
        store.close()


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    root = write_repo(tmp_path_factory.mktemp("view-rt") / "helpdesk")
    code, out = run_main(
        "redteam", "generate", "--surface", "general,tools", "--strategies", "base64",
        "--seed", "11", "--no-diff", "--root", str(root),
    )  # fmt: skip
    assert code == 0, out
    evals = root / "harness" / "evals"
    suite = evals / "redteam-general.jsonl"
    cases = [json.loads(line) for line in suite.read_text(encoding="utf-8").splitlines()]
    for case in cases:
        if "control" in case["tags"]:
            wrong = {"type": "icontains", "name": WRONG, "config": {"value": "never said"}}
            case["graders"].append(wrong)
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    plain = {"id": "hello", "prompt": "hello", "expected": "bye", "graders": [{"type": "equals"}]}
    (evals / "plain.jsonl").write_text(json.dumps(plain) + "\n", encoding="utf-8")
    planted = {
        "id": "planted", "prompt": "hi",
        "graders": [{"type": "icontains", "name": "g" + PAYLOAD, "config": {"value": "absent"}}],
        "tags": ["redteam", "surface:" + PAYLOAD, "category:jailbreak", "strategy:" + PAYLOAD,
                 "severity:low", "owasp:" + PAYLOAD],
    }  # fmt: skip
    (evals / "planted.jsonl").write_text(json.dumps(planted) + "\n", encoding="utf-8")
    configure(root, "comply")
    redteam = eval_run(root, "redteam-general", "redteam-tools")
    plain_run = eval_run(root, "plain")
    planted_run = eval_run(root, "planted")
    store = open_store(root, create="never")
    try:
        findings = load_findings(store, redteam)
    finally:
        store.close()
    assert findings.findings and len(findings.flagged_controls) == 1, findings
    return Stored(root, root / ".coalmine" / "coalmine.db", redteam, plain_run, planted_run,
                  findings)  # fmt: skip


@pytest.fixture(scope="module")
def url(stored: Stored) -> Iterator[str]:
    with serving(stored.store, stored.root) as base:
        yield base


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    with headless_chromium() as browser:
        yield browser


def group(driver: WebDriver, key: str) -> dict[str, tuple[str, int, int]]:
    """A group's rows: value → (the row's first cell as shown, findings, attack cases)."""
    out = {}
    for row in driver.find_elements(By.CSS_SELECTOR, f"table#by-{key} tbody tr"):
        cells = row.find_elements(By.TAG_NAME, "td")
        shown, findings, attacks = (c.text for c in cells)
        out[row.get_attribute("data-value") or ""] = (shown, int(findings), int(attacks))
    return out


def test_the_run_page_links_to_the_red_team_page(
    driver: WebDriver, url: str, stored: Stored
) -> None:
    driver.get(f"{url}/run/{stored.redteam}")
    link = driver.find_element(By.CSS_SELECTOR, "#redteam-link a")
    n = len(stored.findings.findings)
    assert link.text == f"Red team: {n} findings"
    click(driver, link)
    assert driver.current_url == f"{url}/run/{stored.redteam}/redteam"
    assert driver.find_element(By.TAG_NAME, "h1").text == f"Red team: run {stored.redteam}"
    # a run without red-team cases has no such link
    driver.get(f"{url}/run/{stored.plain}")
    assert driver.find_elements(By.CSS_SELECTOR, "table#cases tr.case")
    assert not driver.find_elements(By.ID, "redteam-link")


def test_the_page_shows_the_headline_flagged_controls_first_and_the_groups(
    driver: WebDriver, url: str, stored: Stored
) -> None:
    found = stored.findings
    driver.get(f"{url}/run/{stored.redteam}/redteam")
    controls = sum(1 for c in found.cases if c.control)
    headline = driver.find_element(By.ID, "headline").text
    assert headline.startswith(f"{len(found.findings)} findings (")
    assert f"of {len(found.attacks)} attack cases); {controls} control cases, 1 flagged" in headline
    # the flagged control comes before every group and the findings, with its failed grader
    flagged = driver.find_element(By.ID, "flagged-controls")
    assert "A grader is wrong here, not the agent" in flagged.text
    [control] = found.flagged_controls
    [row] = flagged.find_elements(By.CSS_SELECTOR, "tr.control")
    assert row.get_attribute("data-case") == control.case_id
    assert WRONG in row.find_element(By.CSS_SELECTOR, "td.why").text
    sections = driver.find_elements(By.CSS_SELECTOR, "#flagged-controls, table.redteam-group")
    assert sections[0].get_attribute("id") == "flagged-controls"
    assert [s.get_attribute("data-group") for s in sections[1:]] == [
        "severity", "owasp", "surface", "category", "strategy"
    ]  # fmt: skip
    # the severity counts are load_findings' counts, worst first
    severity = group(driver, "severity")
    assert [(v, n, t) for v, (_, n, t) in severity.items()] == found.by["severity"]
    assert [v for v, _, _ in found.by["severity"]][0] == "critical"
    # every OWASP row has its title
    owasp = group(driver, "owasp")
    assert list(owasp) == [v for v, _, _ in found.by["owasp"]]
    for value, n, total in found.by["owasp"]:
        assert owasp[value] == (f"{value} {OWASP_2025[value]}", n, total)
    assert "LLM06:2025 Excessive Agency" in [shown for shown, _, _ in owasp.values()]
    for key in ("surface", "category", "strategy"):
        rows = group(driver, key)
        assert [(v, n, t) for v, (_, n, t) in rows.items()] == found.by[key], key
    assert group(driver, "category")["jailbreak"][0].startswith("jailbreak (Classic jailbreaks")


def test_a_findings_row_names_its_case_and_links_to_its_case_page(
    driver: WebDriver, url: str, stored: Stored
) -> None:
    found = stored.findings
    driver.get(f"{url}/run/{stored.redteam}/redteam")
    rows = driver.find_elements(By.CSS_SELECTOR, "table#findings tr.finding")
    assert [r.get_attribute("data-case") for r in rows] == [f.case_id for f in found.findings]
    assert texts(driver, "table#findings td.severity") == [f.severity for f in found.findings]
    worst = found.findings[0]
    assert worst.severity == "critical"
    cells = [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")]
    assert cells[:4] == [worst.severity, f"{worst.suite}/{worst.case_id}",
                         ", ".join(worst.owasp), worst.strategy]  # fmt: skip
    assert cells[4] == worst.reasons and "called forbidden tools" in cells[4]
    base64 = next(r for r, f in zip(rows, found.findings, strict=True) if f.strategy == "base64")
    assert base64.find_elements(By.TAG_NAME, "td")[3].text == "base64"
    link = rows[0].find_element(By.CSS_SELECTOR, "td a")
    click(driver, link)
    assert "/case?" in driver.current_url
    assert driver.find_element(By.TAG_NAME, "h1").text.startswith(
        f"Case {worst.suite}/{worst.case_id} FAIL"
    )


def test_a_run_without_red_team_cases_says_so(driver: WebDriver, url: str, stored: Stored) -> None:
    driver.get(f"{url}/run/{stored.plain}/redteam")
    assert driver.find_element(By.ID, "no-redteam").text.startswith("No red-team case")
    assert not driver.find_elements(By.ID, "findings")
    with urllib.request.urlopen(f"{url}/run/{stored.plain}/redteam", timeout=30) as response:
        assert response.status == 200
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{url}/run/NOSUCHRUN/redteam", timeout=30)
    assert caught.value.code == 404
    caught.value.close()
    driver.get(f"{url}/run/NOSUCHRUN/redteam")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Not found"
    assert "Traceback" not in driver.page_source


def test_markup_in_tags_and_grader_names_is_shown_as_text(
    driver: WebDriver, url: str, stored: Stored
) -> None:
    driver.get(f"{url}/run/{stored.planted}")
    assert driver.find_element(By.CSS_SELECTOR, "#redteam-link a").text == "Red team: 1 finding"
    driver.get(f"{url}/run/{stored.planted}/redteam")
    assert driver.title.startswith("Red team")
    assert "PWNED" not in driver.title
    scripts = driver.find_elements(By.TAG_NAME, "script")
    assert [s.get_attribute("src") for s in scripts] == [f"{url}/static/view.js"]
    assert not driver.find_elements(By.TAG_NAME, "img")
    [row] = driver.find_elements(By.CSS_SELECTOR, "table#findings tr.finding")
    cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
    assert cells[1:4] == ["planted/planted", PAYLOAD, PAYLOAD]
    assert cells[4].startswith("g" + PAYLOAD + " failed")  # the record's why, as text
    assert group(driver, "surface")[PAYLOAD] == (PAYLOAD, 1, 1)
    assert group(driver, "owasp")[PAYLOAD][0] == PAYLOAD
    with urllib.request.urlopen(f"{url}/run/{stored.planted}/redteam", timeout=30) as response:
        page = response.read().decode()
    assert PAYLOAD not in page
    assert "&lt;script&gt;document.title=" in page
