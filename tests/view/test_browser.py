"""``coalmine view`` in a real headless Chromium (selenium): what a user clicks, types and sees.

The bundled example (examples/sdlc) is copied, run through the real CLI (a canary run, an eval
run, then an eval run after one suite line was edited so a passing case fails), and its store is
served on an ephemeral port inside the test process. One browser serves the whole module.

Two tests keep bugs this suite found fixed: ``/compare?new=`` preselects that run, and a label
POST from Chromium carries the page's Origin (under ``no-referrer`` it sent ``Origin: null``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from coalmine.store.browse import CaseFilter, RunFilter, eval_cases, list_runs
from coalmine.store.evals import case_attempts
from coalmine.store.runs import Store
from tests.helpers.browser import click, headless_chromium, navigate, texts
from tests.helpers.viewer import serving

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "sdlc"
PAYLOAD = (
    "<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED2'\">"
    "</script><b>bold</b>"
)
EXPECTED = '"severity": "high"'
"""What the edited case is made to expect (its output says ``"severity": "normal"``)."""


# -- the store: the example, run three times through the real CLI -------------------------------


def coalmine(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m coalmine ARGS --root ROOT``; exit 1 is a FAIL among the results, not an error."""
    proc = subprocess.run(
        [sys.executable, "-m", "coalmine", *args, "--root", str(root), "--display", "plain"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc


def run_ids(store_path: Path) -> list[str]:
    store = Store.open_readonly(store_path)
    try:
        return [r.id for r in list_runs(store, RunFilter())]
    finally:
        store.close()


def new_run(root: Path, store_path: Path, *args: str) -> str:
    """Run ``coalmine ARGS`` and return the id of the one run it added to the store."""
    before = set(run_ids(store_path)) if store_path.exists() else set()
    coalmine(root, *args)
    [added] = set(run_ids(store_path)) - before
    return added


def verdicts(store_path: Path, run_id: str) -> dict[str, str]:
    store = Store.open_readonly(store_path)
    try:
        page = eval_cases(store, run_id, CaseFilter(), limit=1000, offset=0)
        return {c.case_id: c.verdict for c in page.rows}
    finally:
        store.close()


def stored_output(store_path: Path, run_id: str, suite: str, case_id: str) -> str:
    store = Store.open_readonly(store_path)
    try:
        [attempt] = case_attempts(store, run_id, suite, case_id)
        output = attempt.record["output"]
        assert isinstance(output, str)
        return output
    finally:
        store.close()


@dataclass(frozen=True)
class Example:
    root: Path
    store: Path
    canary: str
    base: str
    """The first eval run."""
    new: str
    """The eval run after the edit."""
    edited: str
    """The case that passed in ``base`` and fails in ``new`` (its expected value: EXPECTED)."""
    failing: str
    """A case that fails in ``base`` already (the example's near miss)."""


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Example:
    root = tmp_path_factory.mktemp("view") / "sdlc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".coalmine", "results"))
    store = root / ".coalmine" / "coalmine.db"
    canary = new_run(root, store, "canary", "run")
    base = new_run(root, store, "eval", "run")
    first = verdicts(store, base)
    passing = sorted(c for c, v in first.items() if v == "PASS")
    failing = sorted(c for c, v in first.items() if v == "FAIL")
    assert passing and failing, first
    edited = passing[0]
    # The edit: the case now expects a severity its answer does not give, checked by `contains`.
    suite = root / "harness" / "evals" / "triage.jsonl"
    lines = suite.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        case = json.loads(line)
        if case["id"] == edited:
            case["expected"] = EXPECTED
            case["graders"] = [*case.get("graders", []), {"type": "contains"}]
            lines[i] = json.dumps(case)
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    new = new_run(root, store, "eval", "run")
    assert verdicts(store, new)[edited] == "FAIL"
    return Example(root, store, canary, base, new, edited, failing[0])


# -- the server and the browser -----------------------------------------------------------------


@pytest.fixture(scope="module")
def url(example: Example) -> Iterator[str]:
    with serving(example.store, example.root) as base:
        yield base


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    with headless_chromium() as browser:
        yield browser


def case_rows(driver: WebDriver) -> list[tuple[str, str]]:
    """(case id, verdict) of each row of the run page's table, top to bottom."""
    rows = driver.find_elements(By.CSS_SELECTOR, "table#cases tr.case")
    return [
        (r.get_attribute("data-case") or "", r.get_attribute("data-verdict") or "") for r in rows
    ]


def press(driver: WebDriver, key: str) -> None:
    """Type ``key`` on the page (not into a field), as the labelling shortcuts expect."""
    navigate(driver, lambda: driver.find_element(By.TAG_NAME, "body").send_keys(key))


def submit_filters(driver: WebDriver) -> None:
    click(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))


# -- the tests ----------------------------------------------------------------------------------


def test_the_runs_page_lists_the_canary_run_and_both_eval_runs(
    driver: WebDriver, url: str, example: Example
) -> None:
    driver.get(url + "/")
    assert driver.title == "Runs · coalmine"
    rows = driver.find_elements(By.CSS_SELECTOR, "table#runs tr.run")
    kinds = {r.get_attribute("data-run"): r.get_attribute("data-kind") for r in rows}
    assert kinds == {example.canary: "canary", example.base: "eval", example.new: "eval"}
    assert Counter(kinds.values()) == {"eval": 2, "canary": 1}
    # newest first, and each run links to its page
    assert [r.get_attribute("data-run") for r in rows][0] == example.new
    click(driver, rows[0].find_element(By.CSS_SELECTOR, "a"))
    assert driver.current_url.endswith(f"/run/{example.new}")
    assert driver.find_element(By.CSS_SELECTOR, "h1").text.startswith("Eval run")


def test_a_failing_case_shows_its_output_its_expected_value_and_the_diff(
    driver: WebDriver, url: str, example: Example
) -> None:
    driver.get(f"{url}/run/{example.new}")
    failing = {c for c, v in case_rows(driver) if v == "FAIL"}
    assert failing == {example.edited, example.failing}
    row = driver.find_element(By.CSS_SELECTOR, f'tr.case[data-case="{example.edited}"]')
    click(driver, row.find_element(By.CSS_SELECTOR, "a"))
    assert "/case?" in driver.current_url
    assert example.edited in driver.find_element(By.CSS_SELECTOR, "h1").text
    assert "FAIL" in driver.find_element(By.CSS_SELECTOR, "h1").text
    output = stored_output(example.store, example.new, "triage", example.edited)
    assert '"severity": "normal"' in output
    assert driver.find_element(By.CSS_SELECTOR, "pre.output").text == output
    assert driver.find_element(By.CSS_SELECTOR, "pre.expected").text == EXPECTED
    # the diff: what only the expected value has is deleted, what only the output has inserted
    diff = driver.find_element(By.CSS_SELECTOR, "pre.diff")
    assert "high" in " ".join(texts(driver, "pre.diff del"))
    assert "normal" in " ".join(texts(driver, "pre.diff ins"))
    assert "severity" in diff.text
    graders = {
        g.get_attribute("data-grader"): g.find_elements(By.CSS_SELECTOR, "td")[2].text
        for g in driver.find_elements(By.CSS_SELECTOR, "table.graders tr[data-grader]")
    }
    assert graders.get("contains") == "no", graders
    assert graders.get("recall@k") == "yes", graders

    # the near miss has no expected value: its output alone, and no diff
    driver.get(f"{url}/run/{example.base}")
    row = driver.find_element(By.CSS_SELECTOR, f'tr.case[data-case="{example.failing}"]')
    assert row.get_attribute("data-verdict") == "FAIL"
    click(driver, row.find_element(By.CSS_SELECTOR, "a"))
    assert "/case?" in driver.current_url
    near_miss = stored_output(example.store, example.base, "triage", example.failing)
    assert driver.find_element(By.CSS_SELECTOR, "pre.output").text == near_miss
    assert driver.find_elements(By.CSS_SELECTOR, "pre.expected, pre.diff") == []
    assert "recall@2 is 0" in driver.find_element(By.CSS_SELECTOR, "ul.failures").text


def test_the_run_page_filters_and_sorts_on_the_server(
    driver: WebDriver, url: str, example: Example
) -> None:
    driver.get(f"{url}/run/{example.new}")
    assert len(case_rows(driver)) == 6
    Select(driver.find_element(By.NAME, "verdict")).select_by_visible_text("FAIL")
    submit_filters(driver)
    assert "verdict=FAIL" in driver.current_url
    rows = case_rows(driver)
    assert rows and {v for _, v in rows} == {"FAIL"}
    assert {c for c, _ in rows} == {example.edited, example.failing}
    assert driver.find_element(By.ID, "matching").text.startswith("2 of 6")

    Select(driver.find_element(By.NAME, "verdict")).select_by_visible_text("any")
    box = driver.find_element(By.NAME, "q")
    box.clear()
    box.send_keys("refund")
    submit_filters(driver)
    assert "q=refund" in driver.current_url
    assert case_rows(driver) == [("refund-twice", "PASS")]

    box = driver.find_element(By.NAME, "q")
    box.clear()
    submit_filters(driver)
    click(driver, driver.find_element(By.CSS_SELECTOR, 'th[data-key="score"] a'))
    head = driver.find_element(By.CSS_SELECTOR, 'th[data-key="score"]')
    assert head.get_attribute("aria-sort") == "ascending"
    scores = [float(s) for s in texts(driver, "table#cases tr.case td.num:nth-of-type(5)")]
    assert len(scores) == 6
    assert scores[0] <= scores[-1]
    assert scores == sorted(scores)
    assert scores[0] < scores[-1]  # the failing cases score below the passing ones

    click(driver, driver.find_element(By.CSS_SELECTOR, 'th[data-key="score"] a'))
    assert (
        driver.find_element(By.CSS_SELECTOR, 'th[data-key="score"]').get_attribute("aria-sort")
        == "descending"
    )
    down = [float(s) for s in texts(driver, "table#cases tr.case td.num:nth-of-type(5)")]
    assert down == sorted(scores, reverse=True)


def test_comparing_the_eval_runs_finds_the_regression(
    driver: WebDriver, url: str, example: Example
) -> None:
    driver.get(f"{url}/compare")
    Select(driver.find_element(By.NAME, "base")).select_by_value(example.base)
    Select(driver.find_element(By.NAME, "new")).select_by_value(example.new)
    click(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
    assert f"base={example.base}" in driver.current_url
    assert driver.find_element(By.ID, "regressions").text == "1"
    assert driver.find_element(By.ID, "fixes").text == "0"
    assert driver.find_element(By.ID, "shared").text == "6"
    [change] = driver.find_elements(By.CSS_SELECTOR, 'section.change[data-change="regression"]')
    assert change.get_attribute("data-case") == example.edited
    assert "PASS" in change.text and "FAIL" in change.text
    output = stored_output(example.store, example.new, "triage", example.edited)
    assert change.find_element(By.CSS_SELECTOR, "pre.output.new").text == output
    assert change.find_element(By.CSS_SELECTOR, "pre.output.base").text == stored_output(
        example.store, example.base, "triage", example.edited
    )
    assert driver.find_element(By.ID, "verdict-test").text


def test_compare_with_from_an_older_run_preselects_that_run(
    driver: WebDriver, url: str, example: Example
) -> None:
    driver.get(f"{url}/run/{example.base}")
    click(driver, driver.find_element(By.LINK_TEXT, "compare with…"))
    chosen = Select(driver.find_element(By.NAME, "new")).first_selected_option
    assert chosen.get_attribute("value") == example.base


def test_a_label_given_in_the_browser_is_accepted_as_the_app_serves_it(
    driver: WebDriver, url: str, example: Example
) -> None:
    driver.get(f"{url}/label/{example.new}?file=labels/as-served.jsonl&labeller=cat&rubric=r")
    assert driver.find_elements(By.CSS_SELECTOR, "section#item")
    press(driver, "p")
    assert "cross-origin write refused" not in driver.page_source
    assert driver.find_element(By.ID, "label-counts").text.startswith("1 labelled by cat")


def test_labelling_with_the_keyboard_writes_the_labels_file(
    driver: WebDriver, example: Example
) -> None:
    rubric = "The runbooks retrieved fix the reported bug."
    with serving(example.store, example.root) as url:
        label_three_and_check(driver, url, example, rubric)


def label_three_and_check(driver: WebDriver, url: str, example: Example, rubric: str) -> None:
    driver.get(f"{url}/label/{example.new}")
    driver.find_element(By.NAME, "file").send_keys("labels/browser.jsonl")
    driver.find_element(By.NAME, "labeller").send_keys("ann")
    driver.find_element(By.NAME, "rubric").send_keys(rubric)
    click(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
    assert driver.find_element(By.ID, "label-counts").text.startswith("0 labelled by ann")

    given: dict[str, str] = {}
    for key, verdict in (("p", "pass"), ("f", "fail"), ("u", "unsure")):
        item = driver.find_element(By.CSS_SELECTOR, "section#item")
        item_id = item.get_attribute("data-item") or ""
        assert item_id and item_id not in given
        assert driver.find_element(By.CSS_SELECTOR, "pre.rubric").text == rubric
        press(driver, key)
        given[item_id] = verdict

    labels = example.root / "labels" / "browser.jsonl"
    lines = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines()]
    by_ann = {
        line["id"]: label["verdict"]
        for line in lines
        for label in line["labels"]
        if label["labeller"] == "ann"
    }
    assert by_ann == given
    assert len(lines) == 3
    for line in lines:
        assert line["rubric"] == rubric
        assert line["prompt"] and line["output"]

    driver.refresh()
    counts = driver.find_element(By.ID, "label-counts").text
    assert counts.startswith("3 labelled by ann"), counts
    assert "3 to go" in counts
    assert (
        driver.find_element(By.CSS_SELECTOR, "section#item").get_attribute("data-item") not in given
    )

    # another labeller is asked about the same items again, ann's first one first
    query = {"file": "labels/browser.jsonl", "labeller": "bob", "rubric": rubric}
    driver.get(f"{url}/label/{example.new}?{urllib.parse.urlencode(query)}")
    assert driver.find_element(By.ID, "label-counts").text.startswith("0 labelled by bob")
    item = driver.find_element(By.CSS_SELECTOR, "section#item")
    assert item.get_attribute("data-item") == next(iter(given))
    assert "someone else's label" in item.text


# -- markup an agent wrote ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def xss(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """A project whose one case's prompt (so its echoed output) is markup; two eval runs."""
    root = tmp_path_factory.mktemp("xss")
    (root / "coalmine.yaml").write_text("agents:\n  echo: {provider: echo}\n", encoding="utf-8")
    suite = root / "harness" / "evals" / "xss.jsonl"
    suite.parent.mkdir(parents=True)
    store = root / ".coalmine" / "coalmine.db"
    runs = []
    for value in ("bold", "nope"):  # passes, then fails: a regression to compare
        case = {
            "id": "xss",
            "prompt": PAYLOAD,
            "graders": [{"type": "contains", "config": {"value": value}}],
        }
        suite.write_text(json.dumps(case) + "\n", encoding="utf-8")
        runs.append(new_run(root, store, "eval", "run"))
    assert verdicts(store, runs[1]) == {"xss": "FAIL"}
    with serving(store, root) as base:
        yield base, runs[0], runs[1]


def test_markup_in_an_output_is_shown_as_text_never_run(
    driver: WebDriver, xss: tuple[str, str, str]
) -> None:
    url, first, second = xss
    pages = {
        "runs": (f"{url}/", False),
        "run": (f"{url}/run/{second}", False),
        "case": (f"{url}/run/{second}/case?suite=xss&id=xss", True),
        "compare": (f"{url}/compare?base={first}&new={second}", True),
        "label": (f"{url}/label/{second}?file=labels/x.jsonl&labeller=ann&rubric=safe", True),
    }
    for name, (page, shows_output) in pages.items():
        driver.get(page)
        assert "PWNED" not in driver.title, name
        assert driver.title.endswith("· coalmine"), (name, driver.title)
        assert driver.find_elements(By.CSS_SELECTOR, "pre.output b") == [], name
        assert driver.find_elements(By.TAG_NAME, "b") == [], name
        assert driver.find_elements(By.CSS_SELECTOR, "img") == [], name
        if shows_output:
            outputs = texts(driver, "pre.output")
            assert outputs, name
            assert all(PAYLOAD in o for o in outputs), (name, outputs)
    # the run page shows the case and why it failed, as text
    driver.get(pages["run"][0])
    assert case_rows(driver) == [("xss", "FAIL")]
    assert "missing 'nope'" in driver.find_element(By.CSS_SELECTOR, "td.why").text
    assert "PWNED" not in driver.title


# -- the guard ----------------------------------------------------------------------------------


def test_a_request_for_another_host_is_refused(url: str) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url + "/", timeout=10) as ok:
        assert ok.status == 200
    port = urllib.parse.urlsplit(url).port
    for host in ("evil.example", f"evil.example:{port}"):  # the second: a DNS rebinding
        request = urllib.request.Request(url + "/", headers={"Host": host})
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(request, timeout=10)
        assert refused.value.code == 421, host
        assert "only to its own address" in refused.value.read().decode()
        refused.value.close()
