"""``coalmine kits status`` and ``coalmine kits update``: how the harness drifted, and catching up.

**Status** compares ``harness/manifest.json`` with the repository: owned files edited by hand
(their SHA-256 differs) or missing, adopted kits whose ``appliesWhen`` no longer holds, kits
that newly apply, kits whose template version moved on (or that are no longer installed), and
the evolution rules that fire. A rule with ``watch`` and ``suite`` fires when a watched file
(a signal kind's evidence, or a glob) was modified after the suite's last eval run, or when
the suite never ran; the others are advice and never fire.

**Update** renders each adopted kit again (its current version, the current facts, the
manifest's parameters) and proposes, per owned file, the three-way merge of the merge base
(``harness/.base/<path>``: what the kit wrote last), your copy and the kit's new text:

=====================================  ==========================================
your copy, kit's text                  proposal
=====================================  ==========================================
kit's text unchanged since last time   nothing (your edits stay yours)
your copy unchanged since last time    ``replace`` with the kit's new text
both changed                           ``merge`` (conflicts marked ``<<<<<<<``)
it is missing (deleted)                ``create``: restored with the kit's text
a folder or binary file is in its way  nothing: reported, left as it is
the kit no longer writes it            ``delete`` if unedited, else ``disown``
=====================================  ==========================================

A missing owned file is drift like an edited one: the gates and suites that name it would fail
without it (a gate's script gone makes ``bash`` exit 127), so an update puts it back.

Before a file is replaced, merged or deleted the lessons recalled for its path are attached to
the change, so the CLI shows them next to its diff.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from merge3 import Merge3

from coalmine._util.hashing import hash_text
from coalmine.errors import UsageError
from coalmine.harness.init import (
    Action,
    FileChange,
    harness_signals,
    read_text_or_none,
    render_context,
)
from coalmine.harness.kits import (
    BASE_DIR,
    AdoptedKit,
    EvolutionRule,
    Kit,
    Manifest,
    OwnedFile,
    all_kits,
    base_copy,
    load_manifest,
    render_kit,
)
from coalmine.harness.kits.registry import KIT_REGISTRY
from coalmine.harness.profile import Signal, profile_repository, scan_repository
from coalmine.harness.profile.scan import walk
from coalmine.store.evals import last_suite_start
from coalmine.store.gates import last_gate_run
from coalmine.store.memory import recall
from coalmine.store.runs import Store

__all__ = [
    "FileState",
    "HarnessStatus",
    "KitState",
    "Suggestion",
    "UpdatePlan",
    "harness_status",
    "plan_update",
]

FileCondition = Literal["ok", "edited", "missing"]


@dataclass(frozen=True)
class FileState:
    """An owned file and whether it still holds what its kit wrote."""

    kit: str
    path: str
    state: FileCondition


@dataclass(frozen=True)
class KitState:
    """An adopted kit against the repository and the installed kits."""

    id: str
    adopted_version: int
    installed_version: int | None
    """``None``: the kit is no longer installed (a plugin removed)."""
    applies: bool
    because: tuple[str, ...]
    """The signal kinds that make it apply now."""

    @property
    def outdated(self) -> bool:
        """Whether the installed kit's templates moved on since adoption."""
        return self.installed_version is not None and self.installed_version > self.adopted_version


@dataclass(frozen=True)
class Suggestion:
    """An evolution rule that fired: the rule, the files that changed, the suite to rerun."""

    kit: str
    text: str
    rerun: str
    """The command to run: ``coalmine eval run SUITE`` or ``coalmine gates run GATE``."""
    changed: tuple[str, ...]
    last_run: str | None
    """When the suite or gate last ran (an eval run id, a gate's start time), or ``None``."""


@dataclass(frozen=True)
class HarnessStatus:
    """``coalmine kits status``."""

    manifest: bool
    """Whether the repository has a manifest at all."""
    files: tuple[FileState, ...]
    kits: tuple[KitState, ...]
    new_kits: tuple[tuple[str, tuple[str, ...]], ...]
    """Kits that apply but are not adopted, with the kinds that make them apply."""
    suggestions: tuple[Suggestion, ...]
    advice: tuple[tuple[str, str], ...]
    """``(kit, rule)`` of the rules that never fire by themselves."""

    @property
    def drifted(self) -> bool:
        """Whether the harness no longer matches its kits or the repository.

        Edited or missing files, kits that stopped or started applying, kits updated or gone.
        Fired evolution rules are suggestions, not drift: they ask for a run, not a change.
        """
        return (
            any(f.state != "ok" for f in self.files)
            or any(not k.applies or k.outdated or k.installed_version is None for k in self.kits)
            or bool(self.new_kits)
        )


def harness_status(root: Path, store: Store | None) -> HarnessStatus:
    """The drift of the harness at ``root`` (``store`` gives the suites' last runs)."""
    root = root.resolve()
    manifest = load_manifest(root)
    if manifest is None:
        return HarnessStatus(False, (), (), (), (), ())
    profile, every_file = scan_repository(root)
    signals = harness_signals(root, profile, manifest)
    owned = manifest.owned_paths()
    kinds = {s.kind for s in signals}
    files = tuple(
        FileState(kit.id, f.path, _condition(root, f)) for kit in manifest.kits for f in kit.files
    )
    kit_states = tuple(_kit_state(kit, kinds) for kit in manifest.kits)
    adopted = {k.id for k in manifest.kits}
    new_kits = tuple(
        (kit.id, tuple(k for k in kit.spec.applies_when if k in kinds))
        for kit in all_kits()
        if kit.id not in adopted and kinds & set(kit.spec.applies_when)
    )
    suggestions, advice = [], []
    tree = _Tree(root)
    for kit in manifest.kits:
        for rule in kit.evolution_rules:
            if rule.rerun is None:
                advice.append((kit.id, rule.text))
                continue
            fired = _fire(tree, rule, _files(every_file, signals, owned), store)
            if fired is not None:
                suggestions.append(Suggestion(kit.id, rule.text, rule.rerun, *fired))
    return HarnessStatus(True, files, kit_states, new_kits, tuple(suggestions), tuple(advice))


def _condition(root: Path, owned: OwnedFile) -> FileCondition:
    try:
        text = (root / owned.path).read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError, IsADirectoryError):
        return "missing"
    return "ok" if hash_text(text) == owned.sha256 else "edited"


def _kit_state(kit: AdoptedKit, kinds: set[str]) -> KitState:
    installed = KIT_REGISTRY.find(kit.id)
    applies_when = installed.spec.applies_when if installed else tuple(kit.applies_because)
    because = tuple(k for k in applies_when if k in kinds)
    return KitState(
        kit.id,
        kit.version,
        installed.version if installed else None,
        bool(because) or not kit.applies_because,
        because,
    )


def _files(
    every_file: dict[str, set[str]], signals: Sequence[Signal], owned: set[str]
) -> dict[str, set[str]]:
    """Kind → every file showing it (not only the evidence), outside what the harness owns."""
    return {
        s.kind: {
            p
            for p in every_file.get(s.kind, set())
            if p not in owned and not p.startswith(BASE_DIR + "/")
        }
        for s in signals
    }


def _fire(
    tree: _Tree, rule: EvolutionRule, files: dict[str, set[str]], store: Store | None
) -> tuple[tuple[str, ...], str | None] | None:
    """``(changed files, last run)`` when ``rule`` fires, else ``None``."""
    root = tree.root
    watched = _watched(tree, rule.watch, files)
    if not watched:
        return None
    last = _last_run(rule, store)
    if last is None:
        return tuple(sorted(watched))[:10], None
    label, started_ms = last
    changed = sorted(p for p in watched if _mtime_ms(root / p) > started_ms)
    return (tuple(changed[:10]), label) if changed else None


def _last_run(rule: EvolutionRule, store: Store | None) -> tuple[str, int] | None:
    """``(label, start in Unix ms)`` of the last run of the rule's suite or gate."""
    if store is None:
        return None
    if rule.suite is not None:
        return last_suite_start(store, rule.suite)
    gate = last_gate_run(store, rule.gate) if rule.gate is not None else None
    if gate is None:
        return None
    when = datetime.fromtimestamp(gate.started_ms / 1000, UTC).isoformat(timespec="seconds")
    return f"{rule.gate} at {when}", gate.started_ms


class _Tree:
    """The repository's files, walked once per status and only if a rule has a glob."""

    def __init__(self, root: Path):
        self.root = root
        self._files: list[str] | None = None

    def files(self) -> list[str]:
        """Every file the profile would walk, relative to the root."""
        if self._files is None:
            self._files = [rel for rel, _ in walk(self.root)]
        return self._files


def _watched(tree: _Tree, watch: Iterable[str], evidence: dict[str, set[str]]) -> set[str]:
    """The files a rule watches: every file of its signal kinds, and what its globs match.

    An entry is a signal kind when it has a ``:`` or names a kind the profile found now;
    anything else is a glob (a kind not found now, such as ``nix``, matches no file either
    way).
    """
    found: set[str] = set()
    globs = []
    for entry in watch:
        if ":" in entry or entry in evidence:
            found |= evidence.get(entry, set())
        else:
            globs.append(entry)
    if globs:
        found.update(rel for rel in tree.files() if any(_matches(rel, g) for g in globs))
    return found


def _matches(path: str, glob: str) -> bool:
    """``fnmatch`` (``*`` crosses folders), where a leading ``**/`` also matches the root."""
    return fnmatch.fnmatch(path, glob) or (
        glob.startswith("**/") and fnmatch.fnmatch(path, glob[3:])
    )


def _mtime_ms(path: Path) -> int:
    try:
        return int(os.stat(path).st_mtime * 1000)
    except OSError:
        return 0


@dataclass(frozen=True)
class UpdatePlan:
    """What ``coalmine kits update`` would do."""

    changes: tuple[FileChange, ...]
    manifest: Manifest
    """The manifest once every change is accepted."""
    missing_kits: tuple[str, ...]
    """Adopted kits that are no longer installed (left as they are)."""

    @property
    def empty(self) -> bool:
        """Whether the update changes nothing."""
        return not any(c.writes or c.action == "disown" for c in self.changes)


def plan_update(
    root: Path,
    *,
    kits: Iterable[str] = (),
    store: Store | None = None,
    parameters: Mapping[str, str] | None = None,
) -> UpdatePlan:
    """Plan the update of the adopted kits (or only ``kits``), read-only.

    ``parameters`` replace the manifest's of the same names (the red-team kit's selection).

    Raises:
        UsageError: there is no manifest, or ``kits`` names a kit that is not adopted.
        PluginError: a template fails to render.
    """
    root = root.resolve()
    manifest = load_manifest(root)
    if manifest is None:
        raise UsageError("no harness/manifest.json here: run `coalmine init` first")
    chosen = list(dict.fromkeys(kits))
    unknown = [k for k in chosen if manifest.kit(k) is None]
    if unknown:
        raise UsageError(f"not adopted: {', '.join(unknown)} (see `coalmine kits status`)")
    signals = harness_signals(root, profile_repository(root), manifest)
    merged = {**manifest.parameters, **(parameters or {})}
    context = render_context(root, signals, merged)
    changes: list[FileChange] = []
    new_kits, missing = [], []
    now = datetime.now(UTC).isoformat(timespec="seconds")
    for adopted in manifest.kits:
        kit = KIT_REGISTRY.find(adopted.id)
        if kit is None or (chosen and adopted.id not in chosen):
            missing += [adopted.id] if kit is None else []
            new_kits.append(adopted)
            continue
        kit_changes = _kit_changes(root, kit, adopted, context, store)
        changes += kit_changes
        new_kits.append(_updated(kit, adopted, kit_changes, now))
    after = manifest.model_copy(update={"kits": new_kits, "parameters": merged})
    return UpdatePlan(tuple(changes), after, tuple(missing))


def _kit_changes(
    root: Path,
    kit: Kit,
    adopted: AdoptedKit,
    context: dict[str, object],
    store: Store | None,
) -> list[FileChange]:
    owned = {f.path: f for f in adopted.files}
    changes = []
    rendered = render_kit(kit, context)
    for file in rendered:
        previous = owned.get(file.path)
        current = read_text_or_none(root / file.path)
        base = read_text_or_none(base_copy(root, file.path))
        blocked = current is None and (root / file.path).exists()
        change = _file_change(kit.id, file.path, previous, current, base, file.text, blocked)
        changes.append(_with_lessons(change, store))
    dropped = [f for f in adopted.files if f.path not in {r.path for r in rendered}]
    for gone in dropped:
        current = read_text_or_none(root / gone.path)
        if current is None:
            continue
        unedited = hash_text(current) == gone.sha256
        action: Literal["delete", "disown"] = "delete" if unedited else "disown"
        after = None if unedited else current
        note = "the kit no longer writes it" + ("" if unedited else "; edited, so kept")
        change = FileChange(kit.id, gone.path, action, current, after, note=note, previous=gone)
        changes.append(_with_lessons(change, store))
    return changes


def _file_change(
    kit: str,
    path: str,
    previous: OwnedFile | None,
    current: str | None,
    base: str | None,
    new: str,
    blocked: bool = False,
) -> FileChange:
    """What to do with one file the kit writes: see the module's table.

    ``blocked``: something that is not a text file (a folder, a binary file) is at ``path``.
    """

    def change(action: Action, after: str | None, note: str = "", conflicts: int = 0) -> FileChange:
        return FileChange(
            kit, path, action, current, after, new, conflicts, note, previous=previous
        )

    if blocked:
        action: Action = "keep" if previous is None else "unchanged"
        return change(action, None, "not a text file (a folder or binary?): left as it is")
    if previous is None:
        if current is None:
            return change("create", new, "new in this kit version")
        if current == new:
            return change("adopt", current, "already there, identical: adopted")
        return change("keep", current, "exists with other content: kept, not owned")
    if current is None:
        return change("create", new, "missing: restored with the kit's text")
    if current == new:
        return change("adopt" if base != new else "unchanged", current)
    if base == new:
        return change("unchanged", current, "edited by hand; the kit's text did not change")
    if current == base or (base is None and hash_text(current) == previous.sha256):
        return change("replace", new, "the kit's text changed; yours did not")
    merge = Merge3(
        (base or "").splitlines(keepends=True),
        current.splitlines(keepends=True),
        new.splitlines(keepends=True),
    )
    text = "".join(merge.merge_lines(name_a="yours", name_b="kit", name_base="base"))
    conflicts = sum(1 for region in merge.merge_regions() if region[0] == "conflict")
    note = f"both changed: merged, {conflicts} conflict(s) marked" if conflicts else "merged"
    return change("merge", text, note, conflicts)


def _with_lessons(change: FileChange, store: Store | None) -> FileChange:
    if store is None or change.action not in ("replace", "merge", "delete"):
        return change
    found = recall(store, change.path, paths=[change.path], limit=3)
    lessons = tuple(
        f"#{lesson.id} {lesson.kind}: {lesson.text}" for lesson, _ in found if not lesson.stale
    )
    return replace(change, lessons=lessons)


def _updated(kit: Kit, adopted: AdoptedKit, changes: Sequence[FileChange], now: str) -> AdoptedKit:
    files = []
    for change in changes:
        if change.action in ("delete", "disown", "keep"):
            continue
        if change.action == "unchanged" and change.previous is not None:
            files.append(change.previous)  # edited or deleted by hand: still owned, still shown
        elif change.after is not None:
            sha = hash_text(change.after)
            files.append(OwnedFile(path=change.path, sha256=sha, template_version=kit.version))
    spec = kit.spec
    return adopted.model_copy(
        update={
            "version": spec.version,
            "updated_at": now if any(c.writes for c in changes) else adopted.updated_at,
            "commands": list(spec.commands),
            "evolution_rules": list(spec.evolution_rules),
            "files": files,
        }
    )


def render_status(status: HarnessStatus) -> str:
    """The harness's drift as ``kits status`` prints it: kits, changed files, suggestions."""
    if not status.manifest:
        return "no harness/manifest.json: run `coalmine init` to adopt kits"
    lines = ["kits:"]
    for kit in status.kits:
        if kit.installed_version is None:
            state = "no longer installed"
        elif kit.outdated:
            state = f"v{kit.adopted_version} adopted, v{kit.installed_version} available"
        else:
            state = f"v{kit.adopted_version}, up to date"
        applies = f"applies ({', '.join(kit.because)})" if kit.because else "applies (asked for)"
        lines.append(f"  {kit.id}: {state}; {applies if kit.applies else 'NO LONGER APPLIES'}")
    for kit_id, kinds in status.new_kits:
        lines.append(f"  {kit_id}: NEWLY APPLIES ({', '.join(kinds)}): `coalmine init`")
    changed = [f for f in status.files if f.state != "ok"]
    lines.append(f"files: {len(status.files)} owned, {len(changed)} changed")
    lines += [f"  {f.state:<8} {f.path}  ({f.kit})" for f in changed]
    if status.suggestions:
        lines.append("suggestions:")
        for s in status.suggestions:
            why = f"changed since {s.last_run}" if s.last_run else "never ran"
            lines.append(f"  {s.kit}: {s.text} → {s.rerun}")
            lines.append(f"    {why}: {', '.join(s.changed)}")
    lines.append("drifted" if status.drifted else "no drift")
    return "\n".join(lines)


def status_json(status: HarnessStatus) -> dict[str, object]:
    """The harness's drift as data (``kits status --json``, the MCP server's ``kits_status``)."""
    return {
        "manifest": status.manifest,
        "drifted": status.drifted,
        "kits": [
            {
                "id": k.id,
                "adoptedVersion": k.adopted_version,
                "installedVersion": k.installed_version,
                "applies": k.applies,
                "because": list(k.because),
            }
            for k in status.kits
        ],
        "newKits": [{"id": i, "because": list(kinds)} for i, kinds in status.new_kits],
        "files": [{"kit": f.kit, "path": f.path, "state": f.state} for f in status.files],
        "suggestions": [
            {
                "kit": s.kit,
                "text": s.text,
                "rerun": s.rerun,
                "changed": list(s.changed),
                "lastRun": s.last_run,
            }
            for s in status.suggestions
        ],
        "advice": [{"kit": k, "text": t} for k, t in status.advice],
    }
