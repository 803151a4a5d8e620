"""Find canary spec files, validate them, and select them; every error names file:line.

An invalid spec never stops the others: it comes back as an ``InvalidSpec`` beside the valid
ones, so a run can record it and go on.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from coalmine._source import Document, Problem, SourceError, did_you_mean, load_yaml
from coalmine._source import validation_problems as _validation_problems
from coalmine.errors import UsageError
from coalmine.specs.models import CanarySpec, GraderSpec

SPEC_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class LoadedSpec:
    """A valid spec and where it came from."""

    spec: CanarySpec
    path: Path
    line: int
    doc: Document = field(repr=False, compare=False)

    @property
    def id(self) -> str:
        """The spec id."""
        return self.spec.id


@dataclass(frozen=True)
class InvalidSpec:
    """A spec that could not be used, with every problem found in it."""

    path: Path
    problems: tuple[Problem, ...]
    spec_id: str | None = None

    @property
    def line(self) -> int | None:
        """The line of the first problem."""
        return self.problems[0].line if self.problems else None

    @property
    def reason(self) -> str:
        """All problems, one a line, each ``file:line: message``."""
        return "\n".join(f"{self.path}:{p.line}: {p.message}" for p in self.problems)


@dataclass(frozen=True)
class SpecSet:
    """The specs of a folder: the valid ones and the invalid ones, in a stable order."""

    specs: list[LoadedSpec]
    invalid: list[InvalidSpec]


def discover_spec_files(directory: Path) -> list[Path]:
    """Return every ``*.yaml``/``*.yml`` below ``directory``, sorted; hidden folders skipped."""
    if not directory.is_dir():
        return []
    files = [
        p
        for p in directory.rglob("*")
        if p.suffix in SPEC_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(directory).parts)
    ]
    return sorted(files)


def load_canary_specs(
    directory: Path,
    *,
    phases: Collection[str],
    grader_configs: Mapping[str, type[BaseModel]],
) -> SpecSet:
    """Load every canary under ``directory``.

    Args:
        directory: usually ``bench/canaries``.
        phases: the phases a spec may name (the routing table's keys).
        grader_configs: grader type → its config model; unknown types are errors.
    """
    specs: list[LoadedSpec] = []
    invalid: list[InvalidSpec] = []
    first_seen: dict[str, LoadedSpec] = {}
    for path in discover_spec_files(directory):
        result = load_canary_spec(path, phases=phases, grader_configs=grader_configs)
        if isinstance(result, InvalidSpec):
            invalid.append(result)
            continue
        if result.id in first_seen:
            first = first_seen[result.id]
            where = f"{first.path}:{first.doc.line_of(('id',))}"
            message = (
                f"duplicate id {result.id!r}: already used by {where}; every spec needs its own id"
            )
            problem = Problem(result.doc.line_of(("id",)), message)
            invalid.append(InvalidSpec(path, (problem,), result.id))
            continue
        first_seen[result.id] = result
        specs.append(result)
    order = {phase: i for i, phase in enumerate(phases)}
    specs.sort(key=lambda s: (order.get(s.spec.phase, len(order)), s.id))
    return SpecSet(specs, invalid)


def load_canary_spec(
    path: Path,
    *,
    phases: Collection[str],
    grader_configs: Mapping[str, type[BaseModel]],
) -> LoadedSpec | InvalidSpec:
    """Load and validate one spec file; problems come back as an ``InvalidSpec``."""
    try:
        doc = load_yaml(path)
    except SourceError as exc:
        return InvalidSpec(path, (Problem(exc.line, exc.message),))
    data = doc.data
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        message = f"a canary spec must be a mapping of keys, but this file is {kind}"
        return InvalidSpec(path, (Problem(doc.first_line, message),))
    raw_id = data.get("id")
    spec_id = raw_id if isinstance(raw_id, str) else None
    phase = data.get("phase")
    problems = _check_phase(phase, doc, phases) if isinstance(phase, str) and phase else []
    try:
        spec = CanarySpec.model_validate(data)
    except ValidationError as exc:
        problems += _validation_problems(exc, doc, CanarySpec)
        return InvalidSpec(path, _by_line(problems), spec_id)
    problems += check_graders(
        spec.expected.graders, doc, grader_configs, at=("expected", "graders"), inputs=(),
        canary=True,
    )  # fmt: skip
    if problems:
        return InvalidSpec(path, _by_line(problems), spec_id)
    return LoadedSpec(spec, path, doc.first_line, doc)


def _by_line(problems: list[Problem]) -> tuple[Problem, ...]:
    return tuple(sorted(problems, key=lambda p: p.line or 0))


def _check_phase(phase: str, doc: Document, phases: Collection[str]) -> list[Problem]:
    if phase in phases:
        return []
    message = (
        f"unknown phase {phase!r}{did_you_mean(phase, phases)}; valid phases: "
        f"{', '.join(phases)} (add a phase with 'routing:' in coalmine.yaml)"
    )
    return [Problem(doc.line_of(("phase",)), message)]


def check_graders(
    graders: list[GraderSpec],
    doc: Document,
    grader_configs: Mapping[str, type[BaseModel]],
    *,
    at: tuple[str | int, ...],
    inputs: Collection[str] | None = None,
    canary: bool = False,
) -> list[Problem]:
    """Unknown grader types, invalid grader configs and zero weights, each at its line.

    ``at`` is where the grader list sits in ``doc`` (``("expected", "graders")`` in a canary).
    With ``inputs`` (the case inputs given: ``expected``, ``relevant`` …; none for a canary),
    a grader whose config's ``case_inputs`` needs one that neither the case nor its config
    gives is a problem too.
    """
    problems: list[Problem] = []
    for i, grader in enumerate(graders):
        loc = (*at, i)
        model = grader_configs.get(grader.type)
        if model is None:
            known = _grader_names(grader_configs)
            problems.append(
                Problem(
                    doc.line_of((*loc, "type")),
                    f"unknown grader type {grader.type!r}"
                    f"{did_you_mean(grader.type, grader_configs)}; valid types: {known}",
                )
            )
            continue
        try:
            validated = model.model_validate(grader.config)
        except ValidationError as exc:
            prefix = (*loc, "config")
            problems.extend(_validation_problems(exc, doc, model, prefix=prefix))
            continue
        if inputs is not None:
            missing = _missing_inputs(grader.type, validated, inputs, canary=canary)
            if missing:  # (the line is looked up only for a problem: a scan checks every line)
                line = doc.line_of((*loc, "type"))
                problems.extend(Problem(line, message) for message in missing)
    if graders and sum(g.weight for g in graders) <= 0:
        problems.append(
            Problem(
                doc.line_of(at),
                "grader weights sum to 0; give at least one grader a positive weight",
            )
        )
    return problems


def _missing_inputs(
    name: str, config: BaseModel, inputs: Collection[str], *, canary: bool
) -> list[str]:
    """What the grader would find missing when it grades: a case input, or a config stand-in."""
    needs: Mapping[str, tuple[str, ...]] = getattr(type(config), "case_inputs", {})
    missing = []
    for key, stand_ins in needs.items():
        if key in inputs or any(f in config.model_fields_set for f in stand_ins):
            continue
        fields = " or ".join(f"{_a(f)} {f!r}" for f in stand_ins)
        if canary and stand_ins:
            missing.append(f"{name} has nothing to compare with: give it {fields}")
        elif canary:
            missing.append(f"{name} needs a case's {key!r}, which a canary has not")
        elif stand_ins:
            case = f"the case {_a(key)} {key!r}"
            missing.append(f"{name} has nothing to compare with: give it {fields} or {case}")
        else:
            missing.append(f"{name} needs the case's {key!r}, and the case has none")
    return missing


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _grader_names(grader_configs: Mapping[str, type[BaseModel]]) -> str:
    """The grader names, with ``not-`` forms folded into one note."""
    names = sorted(grader_configs)
    base = [n for n in names if not (n.startswith("not-") and n[4:] in grader_configs)]
    note = " (and not-<type> for those promptfoo allows)" if len(base) < len(names) else ""
    return ", ".join(base) + note


def select_specs(spec_set: SpecSet, selectors: Iterable[str]) -> SpecSet:
    """Keep the specs the selectors name; no selectors keeps all.

    A selector matches the spec whose id equals it, or else the one whose id starts with
    ``selector + "-"``. Invalid specs whose id could be read are selectable too, so that
    selecting a broken spec reports why it is broken.

    Raises:
        UsageError: a selector matches nothing, or matches several specs by prefix.
    """
    selectors = list(selectors)
    if not selectors:
        return spec_set
    ids = [s.id for s in spec_set.specs] + [i.spec_id for i in spec_set.invalid if i.spec_id]
    chosen: set[str] = set()
    for selector in selectors:
        exact = [i for i in ids if i == selector]
        matches = exact or [i for i in ids if i.startswith(selector + "-")]
        if not matches:
            close = did_you_mean(selector, ids)
            listed = ", ".join(sorted(ids)) or "none (no specs found)"
            raise UsageError(f"no canary matches {selector!r}{close}; canaries: {listed}")
        if len(set(matches)) > 1:
            raise UsageError(
                f"{selector!r} is ambiguous; it matches: {', '.join(sorted(set(matches)))}"
            )
        chosen.add(matches[0])
    return SpecSet(
        [s for s in spec_set.specs if s.id in chosen],
        [i for i in spec_set.invalid if i.spec_id in chosen],
    )
