"""Put secrets where users put them, run everything, and grep every written byte for them.

Run: .venv/bin/python bench/faults/secrets.py [--keep]

A project whose agents carry secrets in every place a config can hold one:

- ``api_key_env`` of an openai agent;
- a command agent's ``env: {OPENAI_API_KEY: "${SECRET_ENV}"}`` (the agent prints the key back,
  as a careless or hostile agent would);
- a literal ``X-Api-Key`` header, and a ``${SECRET_HEADER}`` bearer header, of an http agent;
- a URL query ``?key=${SECRET_QUERY}`` of an openai agent's ``base_url``.

The openai and http agents talk to the loopback server of ``bench/perf/latency_server.py``
(the server may see the secrets: it plays the vendor). Then: canary and eval runs (with
``--record``, ``--cache-explain``, ``--cache``), cached re-runs, every report format, ``runs list``,
``compare``. Every file below the project (the SQLite file, its WAL, reports, cassettes, result
files) and everything printed is searched for each secret's first 14 characters (an
excerpt cut short still leaks). Prints the hits; target 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRETS = {
    "SECRET_API_KEY": "sk-apikeyenv-3f9c1a77e0",
    "SECRET_ENV": "sk-envblock-81b2d4c6aa",
    "SECRET_HEADER": "tok-header-5e7d9b1c22",
    "SECRET_QUERY": "qry-urlquery-0a4f6e8d31",
}
LITERAL = "lit-xapikey-9c3b7a5e14"  # a literal X-Api-Key header value

ECHO_ENV = """import os, sys
sys.stdin.read()
print("## Summary\\nkey in use: " + os.environ.get("OPENAI_API_KEY", "none"))
"""


def make_project(root: Path, port: int) -> None:
    base = f"http://127.0.0.1:{port}"
    (root / "leaky.py").write_text(ECHO_ENV)
    (root / "coalmine.yaml").write_text(f"""
agents:
  keyed: {{provider: openai, model: m, base_url: "{base}/v1", api_key_env: SECRET_API_KEY}}
  queried: {{provider: openai, model: m, base_url: "{base}/v1?key=${{SECRET_QUERY}}"}}
  leaky:
    provider: command
    argv: ["python3", "leaky.py"]
    env: {{OPENAI_API_KEY: "${{SECRET_ENV}}"}}
  service:
    provider: http
    url: "{base}/v1/chat/completions"
    headers:
      X-Api-Key: {LITERAL}
      Authorization: "Bearer ${{SECRET_HEADER}}"
    body: {{model: m, messages: [{{role: user, content: "{{{{ prompt }}}}"}}]}}
    response_path: choices.0.message.content
routing: {{qa: keyed, deploy: queried, document: leaky, release: service}}
judge: none
""")
    for phase, agent in (
        ("qa", "keyed"),
        ("deploy", "queried"),
        ("document", "leaky"),
        ("release", "service"),
    ):
        spec = root / "bench" / "canaries" / phase / f"{phase}-001-s.yaml"
        spec.parent.mkdir(parents=True)
        spec.write_text(
            f"id: {phase}-001-s\nphase: {phase}\ntitle: t\nprompt: say summary\n"
            "expected:\n  graders:\n    - {type: keyword, config: {required: [summary]}}\n"
        )
        suite = root / "harness" / "evals" / f"{agent}.jsonl"
        suite.parent.mkdir(parents=True, exist_ok=True)
        suite.write_text('{"id": "one", "vars": {"q": "summary"}, "expected": "summary"}\n')
        (suite.with_suffix(".yaml")).write_text(
            f"agent: {agent}\nprompt_template: 'say {{{{ q }}}}'\ngraders: [{{type: contains}}]\n"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the project dir and print it")
    args = ap.parse_args()
    server = subprocess.Popen(
        [sys.executable, str(HERE.parent / "perf" / "latency_server.py"), "--latency", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    port = int(server.stdout.readline().split()[1])
    tmp = Path(tempfile.mkdtemp())
    root = tmp / "project"
    root.mkdir()
    make_project(root, port)
    env = {**os.environ, **SECRETS}
    cm = [sys.executable, "-m", "coalmine"]
    commands = [
        ["canary", "run", "--display", "plain", "--record", "cassettes/run.jsonl"],
        ["canary", "run", "--display", "plain", "--cache-explain"],
        ["eval", "run", "--display", "plain", "--record", "cassettes/evals.jsonl"],
        ["eval", "run", "--display", "plain", "--cache"],
        ["eval", "run", "--display", "plain", "--cache"],  # answered from the cache
        ["runs", "list"],
        *[
            ["report", "latest", "--format", f, "--out", f"out/report.{f}"]
            for f in ("json", "markdown", "junit", "html")
        ],
        ["compare", "previous", "latest"],
    ]
    printed = []
    try:
        for command in commands:
            done = subprocess.run(
                [*cm, *command, "--root", str(root)],
                env=env,
                cwd=root,
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )
            printed.append((" ".join(command), done.stdout + done.stderr))
            if done.returncode not in (0, 1):  # a command that did not run proves nothing
                print(f"exit {done.returncode}: coalmine {' '.join(command)}: {done.stderr[-300:]}")
    finally:
        server.terminate()
    hits = []
    for secret in [*SECRETS.values(), LITERAL]:
        needle = secret[:14].encode()  # a cut excerpt of a secret leaks it too
        for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
            if path.name in ("leaky.py", "coalmine.yaml"):
                continue  # the user's own files
            if needle in path.read_bytes():
                hits.append(f"{secret} in {path.relative_to(tmp)}")
        hits += [
            f"{secret} printed by `coalmine {c}`" for c, said in printed if secret[:14] in said
        ]
    files = sum(1 for p in tmp.rglob("*") if p.is_file())
    print(f"{len(SECRETS) + 1} secrets, {files} files written, {len(commands)} commands")
    for hit in hits:
        print("  " + hit)
    print(f"secrets found in written files or output: {len(hits)}  (target 0)")
    if args.keep:
        print(f"project: {root}")
    return 0 if not hits else 1


if __name__ == "__main__":
    sys.exit(main())
