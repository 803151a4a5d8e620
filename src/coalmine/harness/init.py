"""``coalmine init``: profile the repository, propose the kits that apply, write what is accepted.

Nothing here writes until :func:`apply_changes`, and then only the changes accepted (all with
``--apply``, one by one at a terminal). The plan is a list of :class:`FileChange`, each with
the text before and after, so the CLI can show a diff of every file first.

Ownership rules:

- a file that does not exist is **created** and owned by its kit;
- a file that exists with exactly the kit's text is **adopted** (owned, nothing written);
- a file that exists with other text is **kept**: never overwritten, not owned; the plan says so.

The render context is the profile's signals (minus the evidence found in files the harness
owns or keeps as merge bases, so the harness never makes its own kits apply), the
:mod:`facts <coalmine.harness.profile.facts>`, and two parameters fixed at the first ``init``
and kept in the manifest: ``project`` and ``agent`` (the agent of ``coalmine.yaml`` the suites
call). When there is no ``coalmine.yaml``, ``init`` proposes one whose agent is guessed from the
profile (a Python entry point that imports an LLM SDK, else an agent-definition file).
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml

from coalmine._source import safe_load
from coalmine._util.hashing import hash_text
from coalmine.config import CONFIG_FILE, load_config
from coalmine.errors import ConfigError
from coalmine.harness.adapters import ADAPTER_PATH, AgentPlan, plan_agent, stand_in
from coalmine.harness.entry import Entry, find_entries
from coalmine.harness.kits import (
    BASE_DIR,
    MANIFEST_PATH,
    AdoptedKit,
    Kit,
    Manifest,
    OwnedFile,
    RenderedFile,
    all_kits,
    base_copy,
    dump_manifest,
    get_kit,
    load_manifest,
    render_kit,
)
from coalmine.harness.profile import Profile, Signal, profile_repository
from coalmine.harness.profile.facts import collect_facts
from coalmine.harness.profile.scan import IgnoreFile
from coalmine.providers.base import provider_settings
from coalmine.redteam.suites import render_suites, selection

__all__ = [
    "Action",
    "FileChange",
    "InitPlan",
    "Proposal",
    "apply_changes",
    "harness_signals",
    "plan_init",
    "read_text_or_none",
    "render_context",
]

Action = Literal["create", "adopt", "keep", "replace", "merge", "delete", "disown", "unchanged"]
"""What a plan does to one file.

``create`` writes a new file; ``adopt`` owns an identical one; ``keep`` leaves a different one
alone (not owned); ``replace`` and ``merge`` (``kits update``) write the kit's new text or the
three-way merge; ``delete`` removes a file the kit dropped that was never edited; ``disown``
stops owning one the kit dropped but that was edited; ``unchanged`` is listed for status only.
"""

WRITES: frozenset[Action] = frozenset({"create", "replace", "merge", "delete"})
DEFAULT_AGENT = "app"


@dataclass(frozen=True)
class FileChange:
    """One file of a plan: what is there, what the kit proposes, and what will be done."""

    kit: str
    """The kit's id; ``""`` for ``coalmine.yaml``, which no kit owns."""
    path: str
    action: Action
    before: str | None
    """The file's text now (``None``: absent)."""
    after: str | None
    """Its text once applied (``None``: deleted)."""
    rendered: str | None = None
    """The kit's text for it: kept as the merge base when the change is applied."""
    conflicts: int = 0
    """Conflict regions a ``merge`` left marked in ``after``."""
    note: str = ""
    lessons: tuple[str, ...] = ()
    """Recalled lessons about this path, shown before a delete or replace."""
    previous: OwnedFile | None = None
    """The file's record in the manifest before the change (restored if it is declined)."""

    @property
    def writes(self) -> bool:
        """Whether applying it changes the file on disk."""
        return self.action in WRITES

    def diff(self) -> str:
        """A unified diff of the file, before → after (empty when nothing changes)."""
        if not self.writes:
            return ""
        before = (self.before or "").splitlines(keepends=True)
        after = (self.after or "").splitlines(keepends=True)
        old = "/dev/null" if self.before is None else f"a/{self.path}"
        new = "/dev/null" if self.after is None else f"b/{self.path}"
        lines = difflib.unified_diff(before, after, old, new)
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True)
class Proposal:
    """A kit ``init`` proposes, and the signals that make it apply (empty when asked for)."""

    kit: Kit
    because: tuple[Signal, ...]


@dataclass(frozen=True)
class InitPlan:
    """What ``coalmine init`` would do."""

    root: Path
    profile: Profile
    proposals: tuple[Proposal, ...]
    changes: tuple[FileChange, ...]
    manifest: Manifest
    """The manifest once every change is accepted."""
    adopted: tuple[str, ...]
    """Kits already adopted (``init`` leaves them to ``kits update``)."""
    agent: AgentPlan | None = None
    """How the proposed ``coalmine.yaml`` calls the agent (``None``: no config proposed)."""

    @property
    def empty(self) -> bool:
        """Whether there is nothing new to propose."""
        return not self.proposals and not any(c.writes for c in self.changes)


def harness_signals(root: Path, profile: Profile, manifest: Manifest | None) -> list[Signal]:
    """The profile's signals without the evidence in harness-owned files and merge bases."""
    owned = manifest.owned_paths() if manifest is not None else set()
    signals = []
    for signal in profile.signals:
        kept = [
            e
            for e in signal.evidence
            if e.path not in owned and not e.path.startswith(BASE_DIR + "/")
        ]
        if kept:
            signals.append(Signal(kind=signal.kind, evidence=kept))
    return signals


def render_context(
    root: Path,
    signals: Sequence[Signal],
    parameters: dict[str, str],
    agent: AgentPlan | None = None,
) -> dict[str, Any]:
    """What the templates see: ``project``, ``agent``, ``signals`` and ``facts``.

    ``facts.agent_adapter`` is the adapter's text for the agent's entry (``agent``, else found
    now), empty when the entry needs none: the agent-runtime kit's ``harness/adapters/agent.py``.
    """
    facts = collect_facts(root, list(signals))
    if agent is None and adapter_wanted(root):
        agent = plan_agent(root, find_entries(root))
    facts["agent_adapter"] = (agent.adapter_text or "") if agent is not None else ""
    kinds = [s.kind for s in signals]
    facts["redteam"] = _OnDemand(lambda: _redteam_suites(facts, parameters, kinds))
    return {
        "project": parameters["project"],
        "agent": parameters["agent"],
        "signals": {s.kind: [e.model_dump() for e in s.evidence] for s in signals},
        "facts": facts,
    }


class _OnDemand(Mapping[str, Any]):
    """A mapping made the first time a template reads it.

    Only the red-team kit's templates read its suites, so no other kit's init or update builds
    them (or fails on their parameters).
    """

    def __init__(self, make: Callable[[], Mapping[str, Any]]) -> None:
        self._make = make
        self._made: Mapping[str, Any] | None = None

    def _mapping(self) -> Mapping[str, Any]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __getitem__(self, key: str) -> Any:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())


def _redteam_suites(
    facts: Mapping[str, Any], parameters: Mapping[str, str], kinds: Sequence[str]
) -> dict[str, Any]:
    """The red-team kit's suites, as the manifest's ``redteam.*`` parameters select them."""
    try:
        chosen = selection(parameters, facts, kinds)
    except ValueError as exc:
        raise ConfigError(f"parameters: {exc}", path=Path(MANIFEST_PATH)) from None
    return render_suites(facts, chosen, parameters["project"], parameters["agent"])


def plan_init(
    root: Path, *, kits: Iterable[str] = (), parameters: Mapping[str, str] | None = None
) -> InitPlan:
    """Profile ``root`` and plan the kits that apply (or exactly ``kits``), read-only.

    ``parameters`` are added to the manifest's (a kit's own settings: the red-team kit's
    surfaces, strategies and seed).

    Raises:
        PluginError: an unknown kit id, or a kit template that fails to render.
        ConfigError: ``harness/manifest.json`` is invalid.
    """
    root = root.resolve()
    profile = profile_repository(root)
    manifest = load_manifest(root) or Manifest()
    signals = harness_signals(root, profile, manifest)
    kinds = {s.kind: s for s in signals}
    adopted = tuple(k.id for k in manifest.kits)
    wanted = [get_kit(k) for k in dict.fromkeys(kits)] or [
        kit for kit in all_kits() if kinds.keys() & set(kit.spec.applies_when)
    ]
    proposals = tuple(
        Proposal(kit, tuple(kinds[k] for k in kit.spec.applies_when if k in kinds))
        for kit in wanted
        if kit.id not in adopted
    )
    changes: list[FileChange] = []
    parameters = {**(dict(manifest.parameters) or _parameters(root)), **(parameters or {})}
    entries = find_entries(root) if adapter_wanted(root) else []
    agent_plan = plan_agent(root, entries) if adapter_wanted(root) else None
    proposed_config = False
    if proposals and not (root / CONFIG_FILE).exists() and _writes_suites(proposals):
        kit_owned = ADAPTER_KIT in adopted or any(p.kit.id == ADAPTER_KIT for p in proposals)
        assert agent_plan is not None  # no config: the adapter is wanted
        agent_plan, config, adapter = propose_agent(
            root, parameters["agent"], agent_plan, entries, write_adapter=not kit_owned
        )
        changes.append(FileChange("", CONFIG_FILE, "create", None, config))
        changes += adapter
        proposed_config = True
    if proposals:
        changes += _gitignore(root)
    context = render_context(root, signals, parameters, agent_plan)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    new_kits = list(manifest.kits)
    for proposal in proposals:
        kit_changes = [_init_change(root, f) for f in render_kit(proposal.kit, context)]
        changes += kit_changes
        new_kits.append(_adopted(proposal, kit_changes, now))
    after = manifest.model_copy(update={"parameters": parameters, "kits": new_kits})
    shown = agent_plan if proposed_config else None
    return InitPlan(root, profile, proposals, tuple(changes), after, adopted, shown)


def _parameters(root: Path) -> dict[str, str]:
    """``project`` (the folder's name) and ``agent`` (coalmine.yaml's first agent, or app)."""
    agent = DEFAULT_AGENT
    try:
        data = safe_load((root / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        data = None
    agents = data.get("agents") if isinstance(data, dict) else None
    if isinstance(agents, dict) and agents:
        agent = str(next(iter(agents)))
    return {"project": root.name, "agent": agent}


ADAPTER_KIT = "agent-runtime"
"""The kit that owns ``harness/adapters/agent.py``."""
KIT_OWNED = (
    "Owned by coalmine kit agent-runtime (see harness/manifest.json). Edit freely: `coalmine kits\n"
    "status` shows your edits and `coalmine kits update` merges kit updates."
)
INIT_WRITTEN = (
    "Written by `coalmine init`, without the agent-runtime kit: yours to edit, never\noverwritten."
)
GITIGNORE_ENTRY = ".coalmine/"
_GITIGNORE_NOTE = "# coalmine's store and caches (runs, cassettes): local, never committed\n"


def _gitignore(root: Path) -> list[FileChange]:
    """A ``.gitignore`` line for ``.coalmine/`` (the store), unless it is already ignored."""
    before = read_text_or_none(root / ".gitignore")
    if before is not None and IgnoreFile.parse(before).match(".coalmine", True):
        return []
    if before is None:
        after = _GITIGNORE_NOTE + GITIGNORE_ENTRY + "\n"
        return [FileChange("", ".gitignore", "create", None, after, note="keeps the store out")]
    glue = "" if not before or before.endswith("\n") else "\n"
    after = before + glue + "\n" + _GITIGNORE_NOTE + GITIGNORE_ENTRY + "\n"
    return [FileChange("", ".gitignore", "replace", before, after, note="adds .coalmine/")]


def _writes_suites(proposals: Iterable[Proposal]) -> bool:
    return any(p.startswith("harness/evals/") for pr in proposals for p in pr.kit.files())


def _init_change(root: Path, rendered: RenderedFile) -> FileChange:
    before = read_text_or_none(root / rendered.path)
    if before is None:
        action: Action = "create"
        after: str | None = rendered.text
        note = ""
    elif before == rendered.text:
        action, after, note = "adopt", before, "already there, identical: adopted"
    else:
        action, after, note = "keep", before, "exists with other content: kept, not owned"
    return FileChange(rendered.kit, rendered.path, action, before, after, rendered.text, note=note)


def _adopted(proposal: Proposal, changes: list[FileChange], now: str) -> AdoptedKit:
    spec = proposal.kit.spec
    return AdoptedKit(
        id=spec.id,
        version=spec.version,
        adopted_at=now,
        updated_at=now,
        applies_because=[s.kind for s in proposal.because],
        commands=list(spec.commands),
        evolution_rules=list(spec.evolution_rules),
        files=[_owned(c, spec.version) for c in changes if c.action in ("create", "adopt")],
    )


def _owned(change: FileChange, version: int) -> OwnedFile:
    assert change.after is not None  # created and adopted files have text
    return OwnedFile(path=change.path, sha256=hash_text(change.after), template_version=version)


def _config_text(agent: str, plan: AgentPlan, others: Sequence[Entry]) -> str:
    """A ``coalmine.yaml`` whose one agent is called as :func:`plan_agent` decided."""
    if plan.stand_in:
        head = (
            f"# STAND-IN: {plan.why}. Every case fails until you point the agent at yours:\n"
            f"# change the `{agent}:` line below (coalmine's docs: 'Connect your agents').\n"
        )
    else:
        head = (
            f"# Chosen because {plan.why}.\n"
            + "".join(f"# {note}\n" for note in plan.notes)
            + "# Check it is how production runs your agent (coalmine's docs: 'Connect your"
            " agents').\n"
        )
    if others:
        head += "# Other entries found (say `agent: NAME` in a suite to use one):\n"
        head += "".join(f"#   {e.kind} {e.where}: {e.why}\n" for e in others[:5])
    return (
        "# coalmine configuration, proposed by `coalmine init` (yours to edit; init never\n"
        "# overwrites it). The harness suites (harness/evals/*.yaml) call this agent.\n"
        f"{head}"
        "agents:\n"
        f"  {agent}: {plan.line}\n"
        "\n"
        "# No judge yet: the judge graders (llm-rubric …, advisory until calibrated) are skipped.\n"
        "# Name one to score them, e.g.\n"
        "# judge: {provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}\n"
        "judge: none\n"
    )


def config_problem(root: Path, text: str) -> str | None:
    """Why ``text`` (a ``coalmine.yaml`` for ``root``) cannot be loaded, or ``None`` if it can."""
    with tempfile.TemporaryDirectory(prefix="coalmine-init-") as folder:
        Path(folder, CONFIG_FILE).write_text(text, encoding="utf-8")
        try:
            load_config(
                Path(folder), providers=provider_settings(), base_dir=root, project_root=root
            )
        except ConfigError as exc:
            return str(exc).replace(str(Path(folder, CONFIG_FILE)), CONFIG_FILE)
    return None


def adapter_wanted(root: Path) -> bool:
    """Whether the agent adapter belongs here: no config yet, or the config runs it."""
    config = read_text_or_none(root / CONFIG_FILE)
    return config is None or ADAPTER_PATH in config


def propose_agent(
    root: Path, agent: str, plan: AgentPlan, entries: Sequence[Entry], *, write_adapter: bool
) -> tuple[AgentPlan, str, list[FileChange]]:
    """The agent plan, the ``coalmine.yaml`` text, and the adapter's change (when init writes it).

    The agent-runtime kit owns the adapter; without that kit (``init --kit rag-system``) init
    writes it itself, like the config. The config is loaded before it is proposed: one that
    coalmine could not load is replaced by the marked stand-in, whose comment says what was
    wrong.
    """
    text = _config_text(agent, plan, entries[1:])
    problem = config_problem(root, text)
    if problem is not None:
        plan = stand_in(
            f"the entry found ({plan.why}) gives a config coalmine cannot load: {problem}"
        )
        text = _config_text(agent, plan, entries)
    changes = []
    if write_adapter and plan.adapter_path is not None and plan.adapter_text is not None:
        before = read_text_or_none(root / plan.adapter_path)
        text = plan.adapter_text.replace(KIT_OWNED, INIT_WRITTEN)
        if before is None:
            changes.append(FileChange("", plan.adapter_path, "create", None, text))
        else:
            changes.append(
                FileChange(
                    "", plan.adapter_path, "keep", before, before, note="exists: kept as it is"
                )
            )
    return plan, text, changes


def read_text_or_none(path: Path) -> str | None:
    """The file's text, or ``None`` when it is missing, a folder, or not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class Applied:
    """What :func:`apply_changes` did."""

    written: tuple[str, ...] = ()
    declined: tuple[str, ...] = ()
    manifest_written: bool = False
    conflicts: tuple[str, ...] = ()


def apply_changes(
    root: Path,
    changes: Sequence[FileChange],
    manifest: Manifest,
    *,
    accept: Callable[[FileChange], bool] = lambda change: True,
) -> Applied:
    """Write the accepted changes, their merge bases, and ``manifest`` (the plan's).

    A declined change keeps its file's previous record in the manifest (or none), so the
    manifest always describes what is on disk.
    """
    root = root.resolve()
    written, declined, conflicts = [], [], []
    for change in changes:
        if change.writes and not accept(change):
            declined.append(change)
            continue
        if change.writes:
            _write(root, change)
            written.append(change.path)
            if change.conflicts:
                conflicts.append(change.path)
        _keep_base(root, change)
    final = _revert(manifest, declined)
    text = dump_manifest(final)
    path = root / MANIFEST_PATH
    manifest_written = bool(final.kits or path.exists()) and read_text_or_none(path) != text
    if manifest_written:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Applied(
        tuple(written), tuple(c.path for c in declined), manifest_written, tuple(conflicts)
    )


def _write(root: Path, change: FileChange) -> None:
    target = root / change.path
    if change.after is None:
        target.unlink(missing_ok=True)
        base_copy(root, change.path).unlink(missing_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(change.after, encoding="utf-8")
    if change.path.endswith(".sh"):
        target.chmod(target.stat().st_mode | 0o111)


def _keep_base(root: Path, change: FileChange) -> None:
    """Keep the kit's text of an owned file as the base of a later three-way merge."""
    if change.kit and change.rendered is not None and change.after is not None:
        if change.action in ("create", "adopt", "replace", "merge"):
            base = base_copy(root, change.path)
            if read_text_or_none(base) != change.rendered:
                base.parent.mkdir(parents=True, exist_ok=True)
                base.write_text(change.rendered, encoding="utf-8")


def _revert(manifest: Manifest, declined: Sequence[FileChange]) -> Manifest:
    """``manifest`` with each declined change's file back to its previous record (or none)."""
    if not declined:
        return manifest
    kits = []
    for kit in manifest.kits:
        files = {f.path: f for f in kit.files}
        for change in declined:
            if change.kit == kit.id:
                files.pop(change.path, None)
                if change.previous is not None:
                    files[change.path] = change.previous
        if files:
            kits.append(kit.model_copy(update={"files": list(files.values())}))
    return manifest.model_copy(update={"kits": kits})
