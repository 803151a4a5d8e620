"""``coalmine view``: a local web app over the run store (aiohttp's server, Jinja templates).

It binds to 127.0.0.1 unless told otherwise, and guards what a local server must:

- **DNS rebinding.** A request whose ``Host`` is not the server's own address is refused, so a
  page on another site that resolves its name to 127.0.0.1 cannot read the store.
- **Cross-site writes.** The only write (a label) is a POST that carries the server's CSRF
  token, and its ``Origin``, when sent, must be the server's.
- **Markup an agent wrote.** Every value goes through Jinja's autoescape; the policy sent with
  every page allows the package's own script alone (``script-src 'self'``), so even an escaping
  mistake could not run a script an output holds.
- **Files.** The store is opened read-only. No path in a request or in the store reaches the
  disk, but the labels file (a ``.jsonl`` inside the project) and the review's note (inside the
  project); the only static file is the package's script.

Every page reads the store on a worker thread, through its own read-only connection, so a long
query never holds up the others, and a run writing to the store is never blocked.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

import jinja2
from aiohttp import web
from markupsafe import Markup
from yarl import URL

from coalmine.engine.pairs import find_pair
from coalmine.errors import CoalmineError, StoreError, UsageError
from coalmine.reports.calibration import FIGURES, wrap_records
from coalmine.reports.html import template_environment as report_templates
from coalmine.results import OUTPUT_LIMIT
from coalmine.store.browse import SORT_KEYS, CaseFilter, RunFilter
from coalmine.store.runs import Store
from coalmine.view import labelling, pages
from coalmine.view.pages import NotFound

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self';"
    " img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
T = TypeVar("T")


@dataclass
class ViewConfig:
    """What the server serves and where it listens."""

    store_path: Path
    root: Path
    host: str = "127.0.0.1"
    port: int = 8787
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def allowed_hosts(self, port: int) -> set[str]:
        """The ``Host`` values that name this server (with and without the port)."""
        names = {*LOCAL_HOSTS, self.host}
        return {f"{n}:{port}" for n in names} | ({n for n in names} if port == 80 else set())


@cache
def templates() -> jinja2.Environment:
    """The viewer's pages, drawn with the report's templates (one set for both)."""
    base = report_templates()
    env = base.overlay(
        loader=jinja2.ChoiceLoader(
            [jinja2.PackageLoader("coalmine.view", "templates"), base.loader]  # type: ignore[list-item]
        )
    )
    env.filters.update(sparkline=sparkline, with_param=with_param)
    return env


def sparkline(scores: list[float], *, width: int = 120, height: int = 24) -> Markup:
    """Scores (0..1, oldest first) as a small inline SVG line: numbers only, so safe markup."""
    if not scores:
        return Markup("")
    step = width / max(len(scores) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - max(0.0, min(1.0, v)) * (height - 4):.1f}"
        for i, v in enumerate(scores)
    )
    label = f"{len(scores)} runs, last {scores[-1]:.2f}"
    return Markup(
        f'<svg class="trend" width="{width}" height="{height}" role="img" aria-label="{label}">'
        f'<polyline points="{points}"/></svg>'
    )


def with_param(query: dict[str, str], key: str, value: object) -> dict[str, str]:
    """The query with ``key`` set to ``value`` (for a link that changes one parameter)."""
    return {**query, key: str(value)}


APP_CONFIG = web.AppKey("config", ViewConfig)


def build_app(config: ViewConfig) -> web.Application:
    """The viewer as an aiohttp application (the tests serve it on an ephemeral port)."""
    env = templates()
    for name in env.list_templates(extensions=["html"]):  # compiled once, not on a first visit
        env.get_template(name)
    app = web.Application(middlewares=[_guard], client_max_size=256 * 1024)
    app[APP_CONFIG] = config
    app.router.add_get("/", _runs)
    app.router.add_get("/run/{run}", _run)
    app.router.add_get("/run/{run}/case", _case)
    app.router.add_get("/run/{run}/progress", _progress)
    app.router.add_get("/run/{run}/redteam", _redteam)
    app.router.add_get("/compare", _compare)
    app.router.add_get("/compare/diff", _compare_diff)
    app.router.add_get("/judges", _judges)
    app.router.add_get("/label/{run}", _label)
    app.router.add_post("/label/{run}", _label_post)
    app.router.add_get("/static/view.js", _script)
    return app


# -- the guard every request passes --------------------------------------------------------------


@web.middleware
async def _guard(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    config = request.app[APP_CONFIG]
    port = request.url.port or 80
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    if sockname:
        port = sockname[1]
    if request.host not in config.allowed_hosts(port):
        return web.Response(status=421, text="this server answers only to its own address\n")
    if request.method == "POST":
        origin = request.headers.get("Origin")
        if origin is not None and origin.split("://", 1)[-1] not in config.allowed_hosts(port):
            return web.Response(status=403, text="cross-origin write refused\n")
    try:
        response = await handler(request)
    except NotFound as exc:
        response = _page("error_page.html", {"title": "Not found", "message": str(exc)}, 404)
    except (UsageError, StoreError, CoalmineError) as exc:
        response = _page("error_page.html", {"title": "Cannot show this", "message": str(exc)}, 400)
    except web.HTTPException:
        raise
    except Exception as exc:  # a page must never answer with a traceback
        message = f"the viewer could not draw this page: {type(exc).__name__}: {exc}"
        response = _page("error_page.html", {"title": "Something broke", "message": message}, 500)
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    # same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the
    # label form's POST, which the Origin check above must refuse; nothing leaves the origin
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def _page(name: str, context: dict[str, Any], status: int = 200) -> web.Response:
    text = templates().get_template(name).render(csp=CSP, output_limit=OUTPUT_LIMIT, **context)
    return web.Response(text=text, content_type="text/html", charset="utf-8", status=status)


async def _read(request: web.Request, fn: Callable[[Store], T]) -> T:
    """Run ``fn`` on a worker thread with a read-only store of its own."""
    config = request.app[APP_CONFIG]

    def work() -> T:
        store = Store.open_readonly(config.store_path)
        try:
            return fn(store)
        finally:
            store.close()

    return await asyncio.to_thread(work)


def _int(value: str | None, default: int) -> int:
    try:
        return min(max(1, int(value)), 10**9) if value else default  # SQLite's ints are 64-bit
    except ValueError:
        return default


def _opt(request: web.Request, name: str) -> str | None:
    value = request.query.get(name, "").strip()
    return value or None


# -- pages --------------------------------------------------------------------------------------


async def _runs(request: web.Request) -> web.Response:
    where = RunFilter(
        kind=_opt(request, "kind"), suite=_opt(request, "suite"), label=_opt(request, "label"),
        since=_opt(request, "since"), until=_opt(request, "until"),
    )  # fmt: skip
    context = await _read(request, lambda s: pages.runs_page(s, where))
    return _page("runs_page.html", context)


def _case_filter(request: web.Request) -> CaseFilter:
    sort = request.query.get("sort", "case")
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    verdict = (_opt(request, "verdict") or "").upper() or None
    return CaseFilter(
        verdict=verdict if verdict in ("PASS", "FAIL", "ERROR") else None,
        suite=_opt(request, "suite"), grader=_opt(request, "grader"), tag=_opt(request, "tag"),
        text=_opt(request, "q"), sort=key if key in SORT_KEYS else "case",
        descending=descending,
    )  # fmt: skip


async def _run(request: web.Request) -> web.Response:
    ref = request.match_info["run"]
    where = _case_filter(request)
    page = _int(request.query.get("page"), 1)
    root = request.app[APP_CONFIG].root

    def build(store: Store) -> tuple[str, dict[str, Any]]:
        info = pages.find_run(store, ref)
        if info.kind == "review":
            return "review_page.html", pages.review_page(store, info, root)
        return "run_page.html", pages.run_page(store, info, where, page)

    name, context = await _read(request, build)
    return _page(name, {**context, "query": dict(request.query)})


async def _case(request: web.Request) -> web.Response:
    ref = request.match_info["run"]
    suite, case_id = request.query.get("suite", ""), request.query.get("id", "")

    def build(store: Store) -> dict[str, Any]:
        return pages.case_page(store, pages.find_run(store, ref), suite, case_id)

    return _page("case_page.html", await _read(request, build))


async def _redteam(request: web.Request) -> web.Response:
    ref = request.match_info["run"]

    def build(store: Store) -> dict[str, Any]:
        return pages.redteam_page(store, pages.find_run(store, ref))

    return _page("redteam_page.html", await _read(request, build))


async def _progress(request: web.Request) -> web.Response:
    ref = request.match_info["run"]

    def build(store: Store) -> dict[str, Any]:
        info = pages.find_run(store, ref)
        table = "case_results" if info.kind == "canary" else "eval_attempts"
        stored = store.conn.execute(
            f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", (info.id,)
        ).fetchone()[0]
        return {"status": info.status, "stored": stored}

    return web.json_response(await _read(request, build))


async def _compare(request: web.Request) -> web.Response:
    base_ref, new_ref = request.query.get("base", ""), request.query.get("new", "")
    page = _int(request.query.get("page"), 1)

    def build(store: Store) -> dict[str, Any]:
        if not base_ref or not new_ref:
            runs = pages.runs_page(store, RunFilter())["rows"]
            return {"pick": [r for r in runs if r.kind in ("canary", "eval")]}
        base, new = find_pair(store, base_ref, new_ref)
        return pages.compare_page(store, base, new, page)

    context = {"pick": None, "chosen": new_ref, **await _read(request, build)}
    return _page("compare_page.html", context)


async def _compare_diff(request: web.Request) -> web.Response:
    q = request.query

    def build(store: Store) -> dict[str, Any]:
        base, new = find_pair(store, q.get("base", ""), q.get("new", ""))
        return pages.diff_page(store, base, new, q.get("suite", ""), q.get("id", ""))

    text = templates().get_template("diff_part.html").render(**await _read(request, build))
    return web.Response(text=text, content_type="text/html", charset="utf-8")


async def _judges(request: web.Request) -> web.Response:

    context = await _read(request, pages.judges_page)
    context["records"] = wrap_records(context["records"])
    return _page("judges_page.html", {**context, "figures": FIGURES})


async def _label(request: web.Request) -> web.Response:
    config = request.app[APP_CONFIG]
    ref = request.match_info["run"]
    given = request.query.get("file", "")
    labeller = request.query.get("labeller", "").strip()
    rubric = _opt(request, "rubric")
    skip = frozenset(request.query.getall("skip", []))

    def build(store: Store) -> dict[str, Any]:
        info = pages.find_run(store, ref)
        context: dict[str, Any] = {"info": info, "file": given, "labeller": labeller,
                                   "rubric": rubric or "", "state": None, "skip": sorted(skip),
                                   "csrf": config.csrf}  # fmt: skip
        if given and labeller:
            path = labelling.labels_path(config.root, given)
            context["state"] = labelling.label_state(
                store, info, path, labeller, rubric=rubric, skip=skip
            )
        return context

    return _page("label_page.html", await _read(request, build))


async def _label_post(request: web.Request) -> web.StreamResponse:
    config = request.app[APP_CONFIG]
    form = await request.post()
    token = str(form.get("csrf", ""))
    if not hmac.compare_digest(token.encode(), config.csrf.encode()):
        return web.Response(status=403, text="the form's CSRF token is missing or wrong\n")
    ref = request.match_info["run"]
    given, labeller = str(form.get("file", "")), str(form.get("labeller", "")).strip()
    item, answer = str(form.get("item", "")), str(form.get("verdict", ""))
    note = str(form.get("note", "")).strip() or None
    rubric = str(form.get("rubric", "")).strip() or None
    skip = [str(s) for s in form.getall("skip", [])]
    if not labeller:
        raise UsageError("give your name as the labeller")
    path = labelling.labels_path(config.root, given)
    if answer == "skip":
        skip.append(item)
    elif answer in labelling.VERDICTS:

        def write(store: Store) -> bool:
            info = pages.find_run(store, ref)
            return labelling.add_label(
                store,
                info,
                path,
                labeller,
                item,
                answer,
                note,
                rubric=rubric,
            )

        await _read(request, write)
    else:
        raise UsageError(f"unknown answer {answer!r}: pass, fail, unsure or skip")
    query: list[tuple[str, str]] = [("file", given), ("labeller", labeller)]
    if rubric:
        query.append(("rubric", rubric))
    query += [("skip", s) for s in skip]
    raise web.HTTPSeeOther(str(URL.build(path=f"/label/{ref}", query=query)))


async def _script(request: web.Request) -> web.Response:
    return web.Response(body=_script_bytes(), content_type="text/javascript", charset="utf-8",
                        headers={"Cache-Control": "max-age=60"})  # fmt: skip


@cache
def _script_bytes() -> bytes:
    return files("coalmine.view").joinpath("static", "view.js").read_bytes()


# -- serving ------------------------------------------------------------------------------------


async def serve(config: ViewConfig, *, ready: Callable[[str], None]) -> None:
    """Serve until cancelled; ``ready`` gets the URL once the socket listens."""
    runner = web.AppRunner(build_app(config), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise UsageError(f"cannot listen on {config.host}:{config.port}: {exc.strerror}") from None
    port = config.port
    server = site._server  # noqa: SLF001 - the bound port, when --port 0 asked for any
    for sock in getattr(server, "sockets", None) or ():
        port = sock.getsockname()[1]
        break
    host = f"[{config.host}]" if ":" in config.host else config.host
    ready(f"http://{host}:{port}/")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
