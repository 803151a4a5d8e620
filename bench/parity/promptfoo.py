"""Run promptfoo configs in promptfoo and in coalmine, three ways; count the rows that agree.

Run: .venv/bin/python bench/parity/promptfoo.py [--promptfoo EXE] [--verbose] [--json] [--live]
     [DIR ...]

Each DIR holds a ``promptfooconfig.yaml``, at its top or in one folder below it with the files it
names around it (default: every folder under ``tests/promptfoo/fixtures/parity/``). The folder is
copied into a fresh project (a git repository, as a team's is) and:

- promptfoo (0.121.20; ``--promptfoo`` or ``COALMINE_PROMPTFOO``) runs the config: the rows
  everything else is compared with;
- **direct**: ``coalmine eval run --promptfoo CONFIG --format promptfoo -o out.json``;
- **imported**: ``coalmine import promptfoo CONFIG --out PROJECT``, then
  ``coalmine eval run --root PROJECT --format promptfoo -o out.json``;
- **exported**: each imported suite goes back through ``coalmine export promptfoo``, promptfoo
  runs the exported config, and its rows must be the original's rows for that column. An
  export coalmine refuses (exit 2 with its reason: promptfoo could not run that column alone,
  e.g. a ``max-score`` with one output) is listed as refused, and its rows are not counted.

A row agrees when ``success``, ``failureReason``, ``score``, the named scores and the pass of
each component result are promptfoo's. Everything runs through the CLIs, as a user runs them.
Prints a table (rows agreeing of rows promptfoo gave, per way) and the totals; ``--verbose``
shows each row that differs and any command's error; ``--json`` prints the counts instead.
Exits 1 unless every row agrees in every way.

promptfoo's rows of each run are kept in ``tests/promptfoo/fixtures/parity-runs/``, named by a
digest of everything the run reads (promptfoo's and Node's versions, every file of the config's
folder): a run whose inputs are unchanged is read from there, any change runs promptfoo again
and stores its rows. ``--live`` runs promptfoo every time and rewrites the entries.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
PARITY = ROOT / "tests" / "promptfoo" / "fixtures" / "parity"
RUNS = ROOT / "tests" / "promptfoo" / "fixtures" / "parity-runs"
"""promptfoo's rows of each run, by the key of its inputs (see ``run_promptfoo``)."""
CONFIG = "promptfooconfig.yaml"
WAYS = ("direct", "imported", "exported")

Rows = dict[tuple[int, int], dict[str, Any]]


@dataclass
class Outcome:
    """One config's counts: rows promptfoo gave, and rows agreeing per way."""

    name: str
    rows: int = 0
    rows_exported: int | None = None
    """With ``--exported-suites N`` or a refused export: the rows of the suites exported and
    not refused (else every row)."""
    refused: list[str] = field(default_factory=list)
    """The exports coalmine refused, each ``suite: reason``."""
    agree: dict[str, int] = field(default_factory=lambda: dict.fromkeys(WAYS, 0))
    notes: list[str] = field(default_factory=list)

    def expected(self, way: str) -> int:
        """The rows that must agree in ``way``."""
        if way == "exported" and self.rows_exported is not None:
            return self.rows_exported
        return self.rows


def promptfoo_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(home),
    }


def promptfoo_version(executable: str) -> str:
    """The version in the ``package.json`` of the promptfoo package that ``executable`` runs.

    The key must not hold the install's path: CI installs promptfoo in a fresh temporary
    folder, and a key that named it would match no stored run. The ``.bin`` entry links into
    the package (``promptfoo/dist/src/entrypoint.js``), so its folders are walked up to the
    package's own ``package.json``; without one, promptfoo is asked (``--version``).
    """
    found = Path(os.path.realpath(shutil.which(executable) or executable))
    for folder in found.parents:
        package = folder / "package.json"
        if package.is_file():
            meta = json.loads(package.read_text(encoding="utf-8"))
            if meta.get("name") == "promptfoo" and isinstance(meta.get("version"), str):
                return str(meta["version"])
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run([str(found), "--version"], capture_output=True, text=True,
                              env=promptfoo_env(Path(home)))  # fmt: skip
    return done.stdout.strip() or found.name


def run_key(executable: str, scope: Path) -> str:
    """What a promptfoo run's rows depend on: promptfoo's and Node's versions, every input file.

    ``scope`` is the folder that holds the config and every file it names. The configs run
    only deterministic providers (echo, exec, scripts), so equal keys mean equal rows.
    """
    digest = hashlib.sha256()
    version = promptfoo_version(executable)
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    digest.update(f"promptfoo {version}\0node {node}\0".encode())
    for path in sorted(p for p in scope.rglob("*") if p.is_file()):
        relative = path.relative_to(scope)
        if relative.parts[0] in (".git", ".coalmine", "promptfoo-home", "node_modules"):
            continue
        if "__pycache__" in relative.parts:
            continue  # (Python writes these beside a script that promptfoo or a test ran)
        if relative.name.endswith(".json") and relative.name.startswith(("out", "promptfoo")):
            continue  # (what the runs write)
        digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def run_promptfoo(
    executable: str, config: Path, out: Path, scope: Path | None = None
) -> tuple[Rows | None, str]:
    """promptfoo's rows for ``config`` (by testIdx, promptIdx), or None and its error.

    The rows of each run are kept in ``RUNS`` under :func:`run_key`; a run whose key is there
    is not run again (each promptfoo run is ~5 s, most of it Node loading promptfoo). Set
    ``COALMINE_PROMPTFOO_RUNS=live`` (or ``--live``) to run every one and rewrite its entry.
    """
    stored = RUNS / f"{run_key(executable, scope or config.parent)}.json"
    if stored.is_file() and os.environ.get("COALMINE_PROMPTFOO_RUNS") != "live":
        kept = json.loads(stored.read_text(encoding="utf-8"))
        return {(r["testIdx"], r["promptIdx"]): r for r in kept["rows"]}, ""
    command = [executable, "eval", "-c", config.name, "-o", str(out)]
    command += ["--no-cache", "--no-table", "--no-write", "--no-progress-bar"]
    env = promptfoo_env(out.parent / "promptfoo-home")
    done = subprocess.run(command, cwd=config.parent, env=env, capture_output=True, text=True)
    if not out.exists():
        return None, f"promptfoo exited {done.returncode}: {done.stderr.strip()[-800:]}"
    rows = by_place(json.loads(out.read_text(encoding="utf-8")))
    kept_rows = [  # in place order: promptfoo's own order varies with its concurrency
        {"testIdx": t, "promptIdx": p, **stored_verdict(rows[(t, p)])} for t, p in sorted(rows)
    ]
    RUNS.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"config": str(config.name), "rows": kept_rows}, indent=1, sort_keys=True)
    stored.write_text(text + "\n", encoding="utf-8")
    return rows, ""


def stored_verdict(row: dict[str, Any]) -> dict[str, Any]:
    """What of a promptfoo row is kept: what :func:`verdict` reads, in the row's own shape."""
    grading = row.get("gradingResult") or {}
    components = [{"pass": c.get("pass")} for c in grading.get("componentResults") or []]
    kept = {k: row.get(k) for k in ("success", "failureReason", "score", "namedScores")}
    return {**kept, "gradingResult": {"componentResults": components}}


def coalmine(*args: str, cwd: Path, promptfoo: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "coalmine", *args]
    # promptfoo on PATH, as a promptfoo user has it: coalmine loads TypeScript with its tsx
    found = shutil.which(promptfoo)
    folder = str(Path(found).parent) if found else ""
    path = os.pathsep.join(p for p in (folder, os.environ.get("PATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PATH": path}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)


def coalmine_rows(done: subprocess.CompletedProcess[str], out: Path) -> tuple[Rows | None, str]:
    if done.returncode not in (0, 1) or not out.exists():
        return None, f"coalmine exited {done.returncode}: {(done.stdout + done.stderr)[-800:]}"
    return by_place(json.loads(out.read_text(encoding="utf-8"))), ""


def by_place(document: dict[str, Any]) -> Rows:
    return {(r["testIdx"], r["promptIdx"]): r for r in document["results"]["results"]}


def verdict(row: dict[str, Any]) -> dict[str, Any]:
    """What must agree of a row."""
    grading = row.get("gradingResult") or {}
    return {
        "success": row.get("success"),
        "failureReason": row.get("failureReason"),
        "score": row.get("score"),
        "namedScores": row.get("namedScores") or {},
        "components": [c.get("pass") for c in grading.get("componentResults") or []],
    }


def same(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    a, b = verdict(ours), verdict(theirs)
    if (a["success"], a["failureReason"], a["components"]) != (
        b["success"],
        b["failureReason"],
        b["components"],
    ):
        return False
    if not _close(a["score"], b["score"]):
        return False
    named_a, named_b = a["namedScores"], b["namedScores"]
    return named_a.keys() == named_b.keys() and all(_close(named_a[k], named_b[k]) for k in named_a)


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, abs_tol=1e-9)
    return bool(a == b)


def count(name: str, ours: Rows | None, error: str, theirs: Rows, outcome: Outcome) -> None:
    """Add the rows of ``ours`` that agree with ``theirs`` to way ``name``."""
    if ours is None:
        outcome.notes.append(f"{name}: {error}")
        return
    for place, row in theirs.items():
        mine = ours.get(place)
        if mine is not None and same(mine, row):
            outcome.agree[name] += 1
        else:
            got = verdict(mine) if mine is not None else "no row"
            outcome.notes.append(f"{name} {place}: promptfoo {verdict(row)}, coalmine {got}")
    for place in sorted(set(ours) - set(theirs)):
        outcome.notes.append(f"{name} {place}: a row promptfoo does not have")


def config_in(folder: Path) -> Path:
    """The folder's config: at its top, else the one ``promptfooconfig.yaml`` below it."""
    found = [folder / CONFIG] if (folder / CONFIG).is_file() else sorted(folder.rglob(CONFIG))
    if len(found) != 1:
        raise SystemExit(f"{folder}: want one {CONFIG}, found {len(found)}")
    return found[0]


def compare(folder: Path, executable: str, work: Path, *, suites: int | None = None) -> Outcome:
    outcome = Outcome(folder.name)
    project = work / "project"
    shutil.copytree(folder, project / "promptfoo")
    # a team's configs live in a git repository (the files they name may be anywhere in it)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    config = project / "promptfoo" / config_in(folder).relative_to(folder)
    scope = project / "promptfoo"
    theirs, error = run_promptfoo(executable, config, work / "promptfoo.json", scope)
    if theirs is None:
        outcome.notes.append(error)
        return outcome
    outcome.rows = len(theirs)

    out = work / "direct.json"
    done = coalmine("eval", "run", "--promptfoo", str(config), "--format", "promptfoo",
                    "-o", str(out), "--display", "plain", cwd=config.parent,
                    promptfoo=executable)  # fmt: skip
    count("direct", *coalmine_rows(done, out), theirs, outcome)

    done = coalmine(
        "import", "promptfoo", str(config), "--out", str(project), cwd=project, promptfoo=executable
    )
    if done.returncode not in (0, 1):
        outcome.notes.append(f"import exited {done.returncode}: {done.stdout + done.stderr}")
        return outcome
    out = work / "imported.json"
    done = coalmine("eval", "run", "--root", str(project), "--format", "promptfoo",
                    "-o", str(out), "--display", "plain", cwd=project,
                    promptfoo=executable)  # fmt: skip
    count("imported", *coalmine_rows(done, out), theirs, outcome)

    imported = sorted((project / "harness" / "evals").glob("*.yaml"))
    exported = [s for s in imported[:suites] if exported_rows(s, project, executable, work,
                                                              theirs, outcome)]  # fmt: skip
    if suites is not None or outcome.refused:  # the rows of the others are not counted
        outcome.rows_exported = sum(
            len(s.with_suffix(".jsonl").read_text().splitlines()) for s in exported
        )
    return outcome


def exported_rows(
    suite: Path, project: Path, executable: str, work: Path, theirs: Rows, outcome: Outcome
) -> bool:
    """Export one imported suite, run it in promptfoo, count its rows against the original's.

    False when coalmine refused the export (exit 2, with its reason: the rows are not counted).
    """
    column = yaml.safe_load(suite.read_text(encoding="utf-8"))["promptfoo"]["prompt_idx"]
    lines = [json.loads(x) for x in suite.with_suffix(".jsonl").read_text().splitlines()]
    folder = work / "exported" / suite.stem
    done = coalmine("export", "promptfoo", suite.stem, "--root", str(project),
                    "--out", str(folder / CONFIG), cwd=project, promptfoo=executable)  # fmt: skip
    reason = done.stderr.strip()
    if done.returncode == 2 and reason and not (folder / CONFIG).exists():
        outcome.refused.append(f"{suite.stem}: {reason.splitlines()[0]}")
        return False
    if done.returncode not in (0, 1) or not (folder / CONFIG).exists():
        outcome.notes.append(
            f"export {suite.stem} exited {done.returncode}: {done.stdout}{done.stderr}"
        )
        return True
    rows, error = run_promptfoo(executable, folder / CONFIG, folder / "out.json")
    wanted = {(line["testIdx"], column): theirs[(line["testIdx"], column)] for line in lines}
    if rows is None:
        count("exported", None, error, wanted, outcome)
        return True
    # the exported config has one column; its tests are the suite's lines, in order
    ours = {(lines[t]["testIdx"], column): row for (t, _), row in rows.items() if t < len(lines)}
    count("exported", ours, "", wanted, outcome)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--promptfoo", default=os.environ.get("COALMINE_PROMPTFOO"))
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--live", action="store_true", help="run promptfoo even for a stored run")
    parser.add_argument(
        "--exported-suites",
        type=int,
        metavar="N",
        help="export only the first N imported suites of each config (default: all)",
    )
    args = parser.parse_args()
    if not args.promptfoo:
        parser.error("give --promptfoo EXE or set COALMINE_PROMPTFOO (promptfoo 0.121.20)")
    if args.live:
        os.environ["COALMINE_PROMPTFOO_RUNS"] = "live"
    # coalmine grades promptfoo's markup and SQL assertions on promptfoo's own npm packages
    os.environ["COALMINE_PROMPTFOO"] = args.promptfoo
    folders = args.folders or sorted(p for p in PARITY.iterdir() if p.is_dir())
    missing = [str(f) for f in folders if not any(f.rglob(CONFIG))]
    if missing:
        parser.error(f"no {CONFIG} in: {', '.join(missing)}")
    outcomes = []
    for folder in folders:
        with tempfile.TemporaryDirectory() as tmp:
            outcomes.append(
                compare(folder.resolve(), args.promptfoo, Path(tmp), suites=args.exported_suites)
            )
    if args.json:
        print(json.dumps([vars(o) for o in outcomes], indent=2))
    else:
        report(outcomes, verbose=args.verbose)
    agreed = all(o.rows and all(o.agree[w] == o.expected(w) for w in WAYS) for o in outcomes)
    return 0 if agreed and not any(o.notes for o in outcomes) else 1


def report(outcomes: list[Outcome], *, verbose: bool) -> None:
    width = max([len(o.name) for o in outcomes] + [6])
    print(f"{'config':<{width}}  {'rows':>5}  " + "  ".join(f"{w:>9}" for w in WAYS))
    for o in outcomes:
        cells = "  ".join(f"{o.agree[w]:>9}" for w in WAYS)
        print(f"{o.name:<{width}}  {o.rows:>5}  {cells}")
        if verbose:
            for note in o.notes:
                print(f"    {note}")
            for refused in o.refused:
                print(f"    export refused: {refused}")
        elif o.notes and not o.rows:
            print(f"    {o.notes[0]}")
    rows = sum(o.rows for o in outcomes)
    totals = "  ".join(f"{sum(o.agree[w] for o in outcomes):>9}" for w in WAYS)
    print(f"{'total':<{width}}  {rows:>5}  {totals}")
    whole = {w: sum(1 for o in outcomes if o.rows and o.agree[w] == o.expected(w)) for w in WAYS}
    print(
        f"configs agreeing on every row, of {len(outcomes)}: "
        + ", ".join(f"{w} {n}" for w, n in whole.items())
    )


if __name__ == "__main__":
    sys.exit(main())
