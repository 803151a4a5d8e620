"""No secret from the config reaches a file, the store, a page or the terminal.

Attacked as a reporter would: distinctive secrets sit in the environment and in the config (a
command agent's ``env:``, literal and ``${…}`` headers, a URL's query and userinfo, API keys),
the agents and the judge echo every one of them back (on stdout, on stderr, in errors), and then
every run kind, every report format, the cassette, the cache and every viewer page are searched
for them, byte for byte: the SQLite file and its WAL included.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from coalmine.config import AgentConfig
from coalmine.engine.call import Caller
from coalmine.providers.base import build_provider
from coalmine.providers.http import HttpSettings
from tests.helpers.cli import run_main
from tests.helpers.json_service import JsonService
from tests.helpers.json_service import Received as ServiceRequest
from tests.helpers.json_service import Reply as ServiceReply
from tests.helpers.openai_server import FakeOpenAI, Reply
from tests.helpers.project import Project
from tests.helpers.viewer import serving

FROM_ENV = {
    "CMD_SECRET": "cmd-ENV-secret-5f3a9c",  # a command agent's env: entry
    "ORG_SECRET": "org-ENV-secret-91d2aa",  # a header that does not look sensitive
    "URL_SECRET": "url-ENV-secret-c0ffee",  # a URL's query
    "PW_SECRET": "pw-ENV-secret-0b5e55",  # a URL's userinfo
    "AGENT_KEY": "sk-agent-secret-314159",  # api_key_env of an agent
    "ARGV_SECRET": "argv-ENV-secret-a1b2c3",  # after a command's --api-key flag
    "JUDGE_KEY": "sk-judge-secret-271828",  # api_key_env of the judge
}
LITERAL = {
    "SESSION_TOKEN": "lit-env-token-77c1d0",  # an env: entry whose name marks a credential
    "X-Api-Key": "lit-HDR-secret-2b8e41",  # a header whose name marks a credential
}
SECRETS = [*FROM_ENV.values(), *LITERAL.values()]

AGENT = """\
import os, sys
prompt = sys.stdin.read()
env = " ".join([os.environ["OPENAI_API_KEY"], os.environ["SESSION_TOKEN"], *sys.argv])
print("echoing my env:", env, file=sys.stderr)
if "crash" in prompt:
    sys.exit(1)
print("Scope: injection found; my env is", env)
"""

GRADER = """\
import json, os, re


def grade(prompt, context):
    leaked = os.environ["CMD_SECRET"]
    ids = re.findall(r"- \\[([^\\]]+)\\]", prompt)
    return json.dumps({"assertions": {i: {"verdict": "fail", "reason": "saw " + leaked}
                                      for i in ids}})
"""

JUDGE_GRADERS: list[dict[str, Any]] = [
    {"type": "keyword", "weight": 0.5, "config": {"required": ["injection"]}},
    {"type": "llm-judge", "weight": 0.5, "config": {"criteria": ["accuracy"]}},
]


def openai_answer(received: Any) -> Reply:
    """The openai agent and the judge quote every secret they were sent or can guess."""
    quoted = " ".join([*SECRETS, received.headers.get("Authorization", "")])
    if received.body["model"] == "judge-model":
        reason = f"the answer leaks {quoted}"
        return Reply(text=json.dumps({"criteria": {"accuracy": {"score": 0, "reason": reason}}}))
    if "fail" in received.body["messages"][-1]["content"]:
        return Reply(status=400, body=f"bad request from {quoted}")
    return Reply(text=f"injection; you sent {quoted}")


def service_answer(received: ServiceRequest) -> ServiceReply:
    """The http agent echoes the query and the headers it got; one case gets a 500."""
    seen = f"{received.query} {received.headers}"
    if "fail" in json.dumps(received.body):
        return ServiceReply(status=500, body=f"server error; request was {seen}")
    return ServiceReply({"output": f"injection; I was sent {seen}"})


def build(project: Project, service: JsonService, openai: FakeOpenAI) -> None:
    service_host = service.url.split("://", 1)[1]
    agent = project.agent_script("analyst", AGENT)
    project.write("review_grader.py", GRADER)
    project.config(
        {
            "agents": {
                "Analyst": {
                    "provider": "command",
                    "argv": [*agent, "--api-key", "${ARGV_SECRET}"],
                    "env": {
                        "OPENAI_API_KEY": "${CMD_SECRET}",
                        "SESSION_TOKEN": LITERAL["SESSION_TOKEN"],
                    },
                },
                "QA Coordinator": {
                    "provider": "http",
                    "url": f"http://bot:${{PW_SECRET}}@{service_host}/agent"
                    "?key=${URL_SECRET}&q={{prompt}}",
                    "headers": {"X-Api-Key": LITERAL["X-Api-Key"], "X-Org": "${ORG_SECRET}"},
                    "body": {"input": "{{prompt}}"},
                    "retries": 0,
                },
                "Documenter": {
                    "provider": "openai",
                    "model": "agent-model",
                    "base_url": openai.base_url,
                    "api_key_env": "AGENT_KEY",
                    "retries": 0,
                },
                "grader": {"provider": "python", "target": "review_grader:grade"},
            },
            "routing": {"requirements": "Analyst", "qa": "QA Coordinator",
                        "document": "Documenter"},
            "judge": {"provider": "openai", "model": "judge-model", "base_url": openai.base_url,
                      "api_key_env": "JUDGE_KEY", "retries": 0},
        }
    )  # fmt: skip
    for spec_id, phase, prompt in [
        ("requirements-001-scope", "requirements", "Scope the login work."),
        ("requirements-002-crash", "requirements", "Scope this, then crash."),
        ("qa-001-login", "qa", "Review the login handler."),
        ("qa-002-down", "qa", "Review it, and fail."),
        ("document-001-readme", "document", "Document the login."),
        ("document-002-bad", "document", "Document it, and fail."),
    ]:
        project.canary(spec_id, phase=phase, prompt=prompt, graders=JUDGE_GRADERS)
    lines = [
        {"id": f"{agent.split()[0]}-{word.split()[0]}", "prompt": f"{word}: the login handler",
         "agent": agent,
         "graders": [{"type": "contains", "config": {"value": "injection"}},
                     {"type": "llm-judge", "config": {"criteria": ["accuracy"]}}]}
        for agent in ("Analyst", "QA Coordinator", "Documenter")
        for word in ("review", "crash and fail")
    ]  # fmt: skip
    project.write("harness/evals/leaky.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    pipeline = {
        "roles": {
            "reviewer": {"agent": "Analyst", "inputs": ["diff", "prompt"]},
            "grader": {"agent": "grader", "inputs": ["reviewer", "assertions"], "grader": True},
        }
    }
    project.write("evals/review/pipeline.yaml", yaml.safe_dump(pipeline, sort_keys=False))
    eval_json = {
        "prompt": "Please review my change.",
        "assertions": [{"id": "1.1", "text": "The reviewer names the injection",
                        "target": "reviewer"}],
    }  # fmt: skip
    project.write("evals/review/sql/eval.json", json.dumps(eval_json))
    project.write("evals/review/sql/test-files/app/db.py", "def q(db, n):\n    return n\n")


def crawl(url: str, limit: int = 300) -> dict[str, str]:
    """Every page of the viewer reachable from its front page, by path."""
    seen: dict[str, str] = {}
    todo = ["/"]
    while todo and len(seen) < limit:
        path = todo.pop()
        if path in seen:
            continue
        try:
            with urllib.request.urlopen(url + path, timeout=30) as response:  # noqa: S310
                seen[path] = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            seen[path] = exc.read().decode("utf-8", "replace")
        for link in re.findall(r'(?:href|data-src)="(/[^"]*)"', seen[path]):
            link = link.replace("&amp;", "&")
            if not link.startswith("/static/") and link not in seen:
                todo.append(link)
    return seen


@pytest.mark.slow
def test_no_secret_reaches_any_file_page_or_output(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in FROM_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(project.root))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    printed: dict[str, str] = {}

    def cli(*args: str, code: int | None = None) -> None:
        got, text = run_main(*args, "--root", str(project.root))
        assert "Traceback" not in text, text
        if code is not None:
            assert got == code, text
        printed[" ".join(args)] = text

    with JsonService() as service, FakeOpenAI() as openai:
        service.default = service_answer
        openai.default = openai_answer
        build(project, service, openai)
        reports = [f"--report={fmt}:{out}/canary.{fmt}" for fmt in ("json", "markdown", "junit",
                                                                    "html")]  # fmt: skip
        cli("canary", "run", "--display", "plain", "--cache", "--record", f"{out}/c.jsonl",
            *reports, code=1)  # fmt: skip
        cli("canary", "run", "--display", "jsonl", "--format", "json", "--cache-explain", code=1)
        cli("canary", "run", "--display", "plain", "--replay", f"{out}/c.jsonl", code=1)
        cli("eval", "run", "--display", "plain", "--cache", "--record", f"{out}/e.jsonl", code=1)
        cli("eval", "run", "--display", "jsonl", "--format", "json", "--cache", code=1)
        cli("review", "run", code=1)
        cli("review", "run", "--format", "json", code=1)
        # the servers saw the secrets: they were sent where they belong
        assert any(r.query.get("key") == [FROM_ENV["URL_SECRET"]] for r in service.requests)
        assert any(r.header("X-Org") == FROM_ENV["ORG_SECRET"] for r in service.requests)
        assert any(
            r.headers.get("Authorization") == f"Bearer {FROM_ENV['JUDGE_KEY']}"
            for r in openai.requests
        )
    cli("runs", "list")
    for fmt in ("json", "markdown", "junit", "html"):
        cli("report", "latest", "--format", fmt)
        cli("report", "latest", "--format", fmt, "--out", f"{out}/again.{fmt}")
    store = project.root / ".coalmine" / "coalmine.db"
    listed = run_main("runs", "list", "--root", str(project.root), "--limit", "50")[1]
    run_ids = re.findall(r"^(\S{26})\s", listed, re.M)
    assert len(run_ids) == 7, listed
    for run_id in run_ids:
        cli("runs", "show", run_id, "--format", "json")
        cli("report", run_id, "--format", "markdown")
        cli("report", run_id, "--format", "html")
    cli("compare", run_ids[-1], run_ids[-2])
    with serving(store, project.root) as url:
        pages = crawl(url)
    assert len(pages) > 20, sorted(pages)

    leaks = []
    for where, text in [*printed.items(), *pages.items()]:
        leaks += [f"{where}: {s}" for s in SECRETS if s in text]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "coalmine.db-wal" or p.name == "coalmine.db" for p in files)
    for path in files:
        data = path.read_bytes()
        shown = path.relative_to(tmp_path)
        for secret in SECRETS:
            if path.name == "coalmine.yaml" and secret in LITERAL.values():
                continue  # written there by the user
            if secret.encode() in data:
                leaks.append(f"{shown}: {secret}")
    assert not leaks, "\n".join(sorted(set(leaks)))


def test_a_secret_shapes_the_cache_key_by_its_digest_alone(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = "cmd-first-secret-1111", "cmd-second-secret-2222"
    monkeypatch.setenv("CMD_SECRET", first)
    argv = project.agent_script("qa", "import sys\nsys.stdin.read()\nprint('injection')\n")
    agent = {"provider": "command", "argv": argv, "env": {"OPENAI_API_KEY": "${CMD_SECRET}"}}
    project.config({"agents": {"QA Coordinator": agent}})
    project.canary("qa-001-login")

    def run() -> str:
        code, text = run_main("canary", "run", "--cache-explain", "--display", "none",
                              "--root", str(project.root))  # fmt: skip
        assert code == 0, text
        return str(project.last_result()["results"][0]["cache"]) + "\n" + text

    assert run().startswith("miss: nothing is cached")
    assert run().startswith("hit")
    monkeypatch.setenv("CMD_SECRET", second)
    changed = run()
    assert changed.startswith("miss: cached for the same prompt with identity.env.OPENAI_API_KEY")
    assert first not in changed and second not in changed
    assert run().startswith("hit")
    db = (project.root / ".coalmine" / "coalmine.db").read_bytes()
    assert first.encode() not in db and second.encode() not in db
    assert db.count(b'"OPENAI_API_KEY":"***sha256:') == 2  # one entry per secret


def test_a_judge_keeps_its_calibration_identity_when_its_key_is_rotated() -> None:
    def caller(key: str) -> Caller:
        settings = HttpSettings(url="http://127.0.0.1:9/judge", headers={"Authorization": key})
        agent = AgentConfig("judge", "http", settings, Path())
        return Caller(build_provider(agent), agent, secrets=(key,))

    old, new = caller("Bearer old-key-1111"), caller("Bearer new-key-2222")
    assert old.identity() != new.identity()  # the response cache does not mix the two
    assert "old-key-1111" not in json.dumps(old.identity())
    assert old.identity_key() == new.identity_key()  # a calibration holds for both
