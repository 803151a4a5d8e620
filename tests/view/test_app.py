"""``coalmine view`` over HTTP: its pages, its filters and its guards, on a real server.

The store is made by real eval runs (the echo agent answers with its prompt), and the server
listens on a real socket on 127.0.0.1; requests go through urllib as a browser's would.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from coalmine.compare import compare_runs
from coalmine.engine.history import eval_run_record
from coalmine.errors import StoreError
from coalmine.store.browse import compare_attempts, compare_eval_runs
from coalmine.store.runs import Store
from coalmine.view.app import ViewConfig, sparkline
from tests.helpers.cli import run_main
from tests.helpers.viewer import serving

XSS = "<script>document.title='PWNED'</script><img src=x onerror=\"alert(1)\"></script>"


def case(case_id: str, prompt: str, want: str, tags: list[str] | None = None) -> str:
    line = {"id": case_id, "prompt": prompt, "expected": want, "graders": [{"type": "equals"}]}
    if tags:
        line["tags"] = tags
    return json.dumps(line)


def write_suite(root: Path, lines: list[str]) -> None:
    (root / "harness" / "evals").mkdir(parents=True, exist_ok=True)
    (root / "coalmine.yaml").write_text("agents:\n  echo: {provider: echo}\n", encoding="utf-8")
    (root / "harness" / "evals" / "capitals.jsonl").write_text("\n".join(lines) + "\n")


def lines(flip: bool = False) -> list[str]:
    out = [case(f"c{i:02d}", f"city {i}", f"city {i}", ["even" if i % 2 == 0 else "odd"])
           for i in range(60)]  # fmt: skip
    out.append(case("spain", "Barcelona", "Madrid"))
    out.append(case("xss", XSS, "safe"))
    if flip:
        out[3] = case("c03", "town 3", "city 3", ["odd"])  # a regression: it answers "town 3"
    return out


@dataclass
class Served:
    root: Path
    url: str
    port: int
    config: ViewConfig
    runs: list[str]

    def get(self, path: str, *, host: str | None = None) -> tuple[int, str, dict[str, str]]:
        request = urllib.request.Request(self.url + path.lstrip("/"))
        if host is not None:
            request.add_header("Host", host)
        return _send(request)

    def post(
        self, path: str, form: dict[str, str], *, origin: str | None = None
    ) -> tuple[int, str, dict[str, str]]:
        data = urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(self.url + path.lstrip("/"), data=data, method="POST")
        if origin is not None:
            request.add_header("Origin", origin)
        return _send(request)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _send(request: urllib.request.Request) -> tuple[int, str, dict[str, str]]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("project")
    write_suite(root, lines())
    run_main("eval", "run", "--root", str(root), "--display", "none")
    write_suite(root, lines(flip=True))
    run_main("eval", "run", "--root", str(root), "--display", "none")
    store = Store.open(root / ".coalmine" / "coalmine.db")
    try:
        runs = [r.id for r in reversed(store.list_runs(kind="eval"))]
    finally:
        store.close()
    config = ViewConfig(store_path=root / ".coalmine" / "coalmine.db", root=root, port=0)
    with serving(config.store_path, root) as url:
        port = int(url.rsplit(":", 1)[1])
        yield Served(root, url + "/", port, config, runs)


def rows(page: str) -> list[tuple[str, str]]:
    return re.findall(r'<tr class="case" data-case="([^"]+)" data-verdict="([A-Z]+)">', page)


def test_the_runs_page_lists_both_runs_with_their_tallies_and_the_suite_trend(
    served: Served,
) -> None:
    code, page, headers = served.get("/")
    assert code == 200
    listed = re.findall(r'<tr class="run" data-run="([0-9A-Z]+)" data-kind="eval">', page)
    assert listed == served.runs[::-1]  # newest first
    assert '<td class="num">61/62</td>' not in page  # the xss and spain cases fail
    assert (
        page.count('<td class="num">60/62</td>') == 1
        and page.count('<td class="num">59/62</td>') == 1
    )
    assert '<tr data-suite="capitals"><td><code>capitals</code></td><td><svg class="trend"' in page
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert headers["X-Frame-Options"] == "DENY"


def test_a_run_page_filters_sorts_and_pages_on_the_server(served: Served) -> None:
    run = served.runs[1]
    code, page, _ = served.get(f"/run/{run}")
    assert code == 200 and "<h1>Eval run <code>" in page
    assert len(rows(page)) == 50 and "62 of 62 attempts match · page 1 of 2" in page
    assert "capitals fails its gate (no case may fail on a grader that may block)" in page
    _, page, _ = served.get(f"/run/{run}?page=2")
    assert [r[0] for r in rows(page)] == [f"c{i}" for i in range(50, 60)] + ["spain", "xss"]
    _, page, _ = served.get(f"/run/{run}?verdict=FAIL")
    assert rows(page) == [("c03", "FAIL"), ("spain", "FAIL"), ("xss", "FAIL")]
    _, page, _ = served.get(f"/run/{run}?q=barcelona")  # text in the output, any case
    assert rows(page) == [("spain", "FAIL")]
    _, page, _ = served.get(f"/run/{run}?tag=odd&verdict=FAIL")
    assert rows(page) == [("c03", "FAIL")]
    _, page, _ = served.get(f"/run/{run}?grader=equals&sort=-case")
    assert [r[0] for r in rows(page)] == ["xss", "spain", "c03"]
    _, page, _ = served.get(f"/run/{run}?sort=score")
    assert [r[1] for r in rows(page)][:3] == ["FAIL", "FAIL", "FAIL"]
    _, page, _ = served.get(f"/run/{run}?q=%25")  # LIKE's wildcard is a plain character
    assert rows(page) == []


def test_a_case_page_shows_output_expected_and_their_diff_escaped(served: Served) -> None:
    run = served.runs[0]
    code, page, _ = served.get(f"/run/{run}/case?suite=capitals&id=spain")
    assert code == 200
    assert '<pre class="expected">Madrid</pre>' in page
    assert '<pre class="output">Barcelona</pre>' in page
    assert '<pre class="diff"><del>Madrid</del><ins>Barcelona</ins></pre>' in page
    assert "equals failed: output differs from the value at character 0" in page
    _, page, _ = served.get(f"/run/{run}/case?suite=capitals&id=xss")
    assert XSS not in page and "&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;" in page
    code, page, _ = served.get(f"/run/{run}/case?suite=capitals&id=nope")
    assert code == 404 and "has no case capitals/nope" in page


def test_compare_finds_the_regression_and_diffs_the_outputs(served: Served) -> None:
    base, new = served.runs
    code, page, _ = served.get(f"/compare?base={base}&new={new}")
    assert code == 200
    assert '<dd id="regressions" class="v-FAIL">1</dd>' in page
    assert '<section class="change" data-case="c03" data-change="regression">' in page
    assert "1 case went from PASS to not-PASS and 0 the other way" in page


def test_each_way_to_compare_agrees_with_the_comparison_of_the_run_records(served: Served) -> None:
    base, new = served.runs
    store = Store.open(served.config.store_path)
    try:
        fast = compare_eval_runs(store, base, new, limit=10, offset=0)  # the kept verdicts
        sql = compare_attempts(store, base, new, limit=10, offset=0)  # the attempts, paired
        slow = compare_runs(
            eval_run_record(store, store.get_run(base)), eval_run_record(store, store.get_run(new))
        )
    finally:
        store.close()
    assert sql == fast
    assert fast.shared == len(slow.shared) == 62
    assert (fast.regressions, fast.fixes) == (len(slow.regressions), len(slow.fixes)) == (1, 0)
    assert sorted(fast.deltas) == sorted(
        c.composite_delta for c in slow.shared if c.composite_delta is not None
    )
    assert [c.case_id for c in fast.changed] == ["c03"]


def test_a_host_that_is_not_the_servers_is_refused(served: Served) -> None:
    code, _, _ = served.get("/", host="evil.example")
    assert code == 421
    code, _, _ = served.get("/", host=f"evil.example:{served.port}")
    assert code == 421
    code, _, _ = served.get("/", host=f"localhost:{served.port}")
    assert code == 200


def test_labels_need_the_csrf_token_and_land_in_the_file(served: Served) -> None:
    run = served.runs[0]
    query = "file=labels/mine.jsonl&labeller=ann&rubric=the+city+is+named"
    code, page, _ = served.get(f"/label/{run}?{query}")
    assert code == 200
    token = re.search(r'name="csrf" value="([^"]+)"', page)
    item = re.search(r'<section id="item" data-item="([^"]+)">', page)
    assert token is not None and item is not None
    form = {"file": "labels/mine.jsonl", "labeller": "ann", "rubric": "the city is named",
            "item": item.group(1), "verdict": "fail", "note": "wrong city"}  # fmt: skip
    code, _, _ = served.post(f"/label/{run}", form)
    assert code == 403  # no token
    code, _, _ = served.post(f"/label/{run}", {**form, "csrf": "guess"})
    assert code == 403
    code, _, _ = served.post(
        f"/label/{run}", {**form, "csrf": token.group(1)}, origin="http://evil.example"
    )
    assert code == 403
    path = served.root / "labels" / "mine.jsonl"
    assert not path.exists()
    code, _, headers = served.post(f"/label/{run}", {**form, "csrf": token.group(1)})
    assert code == 303 and headers["Location"].startswith(f"/label/{run}?file=labels")
    [line] = path.read_text().splitlines()
    item_line = json.loads(line)
    assert item_line["id"] == item.group(1) and item_line["rubric"] == "the city is named"
    assert item_line["labels"] == [{"labeller": "ann", "verdict": "fail", "note": "wrong city"}]
    _, page, _ = served.get(f"/label/{run}?{query}")
    assert "1 labelled by ann · 61 to go" in page


def test_a_labels_file_outside_the_project_is_refused(served: Served) -> None:
    run = served.runs[0]
    for given in ("../outside.jsonl", "/tmp/x.jsonl", "labels/notes.txt"):
        code, page, _ = served.get(f"/label/{run}?file={urllib.parse.quote(given)}&labeller=ann")
        assert code == 400, given
        assert "must be a .jsonl path inside" in page
    assert not (served.root.parent / "outside.jsonl").exists()


def test_unknown_runs_and_the_progress_of_a_run(served: Served) -> None:
    code, page, _ = served.get("/run/NOPE")
    assert code == 404 and "no run matches &#39;NOPE&#39;" in page and "Traceback" not in page
    code, body, _ = served.get(f"/run/{served.runs[0]}/progress")
    assert code == 200 and json.loads(body) == {"status": "finished", "stored": 62}


def test_the_store_is_opened_read_only(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="there is no run store"):
        Store.open_readonly(tmp_path / "none.db")
    assert not (tmp_path / "none.db").exists()
    code, output = run_main("view", "--root", str(tmp_path), "--port", "0")
    assert code == 2 and "there is no run store at" in output and "Traceback" not in output
    assert "`coalmine canary run` or `coalmine eval run` makes one" in output


def test_the_trend_line_puts_each_score_on_the_chart() -> None:
    # 3 scores over width 120: x at 0, 60, 120; y = 24 - 2 - score·20
    svg = str(sparkline([0.0, 0.5, 1.0]))
    assert 'points="0.0,22.0 60.0,12.0 120.0,2.0"' in svg
    assert str(sparkline([])) == ""


def test_a_changed_case_is_diffed_when_the_compare_page_asks(served: Served) -> None:
    base, new = served.runs
    _, page, _ = served.get(f"/compare?base={base}&new={new}")
    src = re.search(r'<details class="lazy-diff" data-src="([^"]+)">', page)
    assert src is not None
    code, part, _ = served.get(src.group(1).replace("&amp;", "&"))
    assert code == 200 and part.strip() == "<del>city</del><ins>town</ins> 3"
    code, part, _ = served.get(f"/compare/diff?base={base}&new={new}&suite=capitals&id=spain")
    assert code == 200 and part.strip() == "Barcelona"  # the same output in both runs
    code, part, _ = served.get(f"/compare/diff?base={base}&new={new}&suite=capitals&id=xss")
    assert code == 200 and "<script>" not in part and "&lt;script&gt;" in part


def test_odd_parameters_get_a_page_not_a_traceback(served: Served) -> None:
    run = served.runs[0]
    for path in (f"/run/{run}?page=99999999999999999999999", f"/run/{run}?sort=-nonsense",
                 f"/run/{run}?verdict=maybe", "/compare?base=NOPE&new=NOPE",
                 f"/run/{run}/case", f"/label/{run}?file=x.jsonl"):  # fmt: skip
        code, page, _ = served.get(path)
        assert code in (200, 400, 404), path
        assert "Traceback" not in page, path


def test_only_a_recent_running_run_keeps_the_runs_page_live() -> None:
    from datetime import UTC, datetime, timedelta

    from coalmine.view.pages import _recent

    now = datetime.now(UTC)
    assert _recent((now - timedelta(hours=1)).isoformat())
    assert not _recent((now - timedelta(hours=7)).isoformat())  # killed long ago: still "running"


def test_compare_resolves_latest_by_kind_and_refuses_two_kinds(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    write_suite(root, lines())
    run_main("eval", "run", "--root", str(root), "--display", "none")
    for day, verdict in (("13", "PASS"), ("14", "FAIL")):
        result = {"id": "qa-001-x", "phase": "qa", "title": "t", "agent": "QA",
                  "verdict": verdict, "composite_score": 1.0 if verdict == "PASS" else 0.0,
                  "duration_seconds": 1.0}  # fmt: skip
        data = {"run_id": f"canary-run-2026-04-{day}", "timestamp": f"2026-04-{day}T07:30:00Z",
                "summary": {"total": 1, "passed": int(verdict == "PASS"),
                            "failed": int(verdict != "PASS"), "composite_score": 0.0},
                "results": [result]}  # fmt: skip
        path = tmp_path / f"canary-run-2026-04-{day}.json"
        path.write_text(json.dumps(data))
        assert run_main("runs", "import", str(path), "--root", str(root))[0] == 0
    store = Store.open(root / ".coalmine" / "coalmine.db")
    try:
        [eval_run] = [r.id for r in store.list_runs(kind="eval")]
    finally:
        store.close()
    with serving(root / ".coalmine" / "coalmine.db", root) as url:
        # latest is the newest canary run, not the eval run that started after it
        code, page, _ = _send(
            urllib.request.Request(f"{url}/compare?base=canary-run-2026-04-13&new=latest")
        )
        assert code == 200, page
        assert '<section class="change" data-case="qa-001-x" data-change="regression">' in page
        code, page, _ = _send(
            urllib.request.Request(f"{url}/compare?base={eval_run}&new=canary-run-2026-04-14")
        )
        assert code == 400 and "compare two runs of one kind" in page
