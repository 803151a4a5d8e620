"""The graders ``llm-rubric`` (promptfoo), ``context-recall`` and ``context-faithfulness`` (Ragas).

All three ask the configured judge once (once more after an unusable reply, as ``llm-judge``
does), fence what they show it (the task, the agent's response, the reference answer, the
retrieved context) between tags carrying a hash of the fenced content, and record every judge
call on the grade. They are advisory until the judge is calibrated (``needs_judge``).

**llm-rubric** (promptfoo): ``value`` is the rubric. The judge answers
``{"pass": bool, "score": 0..1, "reason": str}``. Without ``threshold`` the grade passes when
the judge says ``pass``; with it, when the judge does not say ``"pass": false`` and
``score >= threshold`` (promptfoo's documented rule: both must hold). A reply with ``pass``
alone scores 1 or 0; a reply with ``score`` alone passes at ``score >= 0.5`` (promptfoo
assumes ``pass: true`` there, so a score of 0 passes: a trap we do not copy). A ``pass`` that
is not a boolean, or a ``score`` that is not a number in 0..1, is an unusable reply. When the
case gives ``expected``, the judge sees it as a reference answer (fenced like the response).

**context-recall** (Ragas): the share of the reference answer's statements that can be
attributed to the retrieved context. The reference is ``value`` (promptfoo's field) or else the
case's ``expected``; the context is the case's ``context``. The judge splits the reference into
statements and marks each attributed (1) or not (0); ``score = attributed / statements``. It
grades the case's context, not the agent's response.

**context-faithfulness** (Ragas "faithfulness"): the share of the claims in the agent's
response that can be inferred from the case's ``context``; ``score = supported / claims``. A
blank response has no claims: the grade is skipped, without a judge call (Ragas gives NaN). A
reply that finds no claims in a non-blank response is unusable (asked again, then an error).

Both context graders pass at ``score >= threshold``, 0.8 by default (promptfoo's default is 0,
which passes everything). ``context`` is a text (one passage) or a list of texts (shown as
numbered passages). A missing, blank or malformed input is a configuration error
(``GradeError(config=True)``) raised before any judge call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from coalmine.errors import GradeError
from coalmine.graders.base import CaseInputs, GradeContext, grader
from coalmine.graders.llm_judge import JudgeGrade, ask_judge, fence, first_json_object
from coalmine.results import Grade

RUBRIC_THRESHOLD = 0.5
"""The score at which a reply without ``pass`` passes (and the registry's threshold)."""
CONTEXT_THRESHOLD = 0.8
"""The default threshold of ``context-recall`` and ``context-faithfulness``."""
_SHOWN = 80
"""Characters of a statement or reason an explanation shows."""
_LISTED = 3
"""Failed statements or claims an explanation names; the rest are counted."""

_CONFIG = ConfigDict(extra="forbid", frozen=True)
Text = Annotated[str, Field(pattern=r"\S")]
Fraction = Annotated[float, Field(ge=0, le=1)]


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


# ---------------------------------------------------------------- case inputs


def _config_error(message: str, grader_name: str) -> GradeError:
    return GradeError(message, grader=grader_name, config=True)


def _required(ctx: GradeContext, key: str, grader_name: str, what: str) -> Any:
    """The case input ``key``; a configuration ``GradeError`` when the case did not give it."""
    value = ctx.inputs.get(key)
    if value is None:
        raise _config_error(f"the case has no {key!r} ({what})", grader_name)
    return value


def _text(value: Any, key: str, grader_name: str) -> str:
    """``value`` as a non-blank text; a configuration ``GradeError`` otherwise."""
    if not isinstance(value, str):
        raise _config_error(f"the case's {key!r} is not a text", grader_name)
    if not value.strip():
        raise _config_error(f"the case's {key!r} is empty", grader_name)
    return value


def _context(ctx: GradeContext, grader_name: str) -> str:
    """The case's retrieved context as the judge sees it: one text, or numbered passages."""
    value = _required(ctx, "context", grader_name, "the retrieved passages to check against")
    if not isinstance(value, list | tuple):
        return _text(value, "context", grader_name)
    if not all(isinstance(passage, str) for passage in value):
        raise _config_error("the case's 'context' list holds something not a text", grader_name)
    _text("".join(value), "context", grader_name)  # at least one passage that is not blank
    return "\n\n".join(f"[{n}] {passage}" for n, passage in enumerate(value, 1))


# ---------------------------------------------------------------- llm-rubric


class RubricConfig(BaseModel):
    """Config of ``llm-rubric``."""

    model_config = _CONFIG

    value: Text
    """The rubric: what the response must be or do."""
    threshold: Fraction | None = None
    """When set, the grade passes only at ``score >= threshold`` (and no ``"pass": false``)."""


@dataclass(frozen=True)
class RubricVerdict:
    """The judge's reply to a rubric prompt."""

    passed: bool | None
    """The judge's ``pass``; ``None`` when it gave only a score."""
    score: float
    reason: str


class RubricGrade(JudgeGrade):
    """Result of ``llm-rubric``; ``criteria`` holds one entry, ``"rubric"``."""

    judge_pass: bool | None
    """The judge's own ``pass``; ``None`` when it gave only a score."""
    threshold: float | None = Field(None, exclude_if=lambda v: v is None)

    def explain(self) -> str:
        """Say whether the rubric was met, with the score and the judge's reason."""
        score = self.criteria.get("rubric", 0.0)
        if self.passed and score >= 1.0:
            return ""
        parts = [f"score {score:g}"]
        if self.threshold is not None and score < self.threshold:
            parts.append(f"below the threshold {self.threshold:g}")
        if self.judge_pass is False:
            parts.append("the judge's verdict is fail")
        head = f"rubric {'met' if self.passed else 'not met'} ({'; '.join(parts)})"
        reason = self.reasons.get("rubric", "")
        return f"{head}: {_clip(reason)}" if reason.strip() else head


def build_rubric_prompt(task: str, response: str, rubric: str, reference: str | None) -> str:
    """Return the judge prompt of ``llm-rubric``: the fenced material, then the rubric."""
    sections = [("task", "task", task)]
    if reference is not None:
        sections.append(("reference", "reference answer", reference))
    sections.append(("response", "response", response))
    use_reference = (
        "The reference answer is a good answer to the task, there to help you judge; it is the "
        "response you grade.\n"
        if reference is not None
        else ""
    )
    # not JSON itself, so a judge that only echoes the prompt gives no verdict
    example = '{"pass": <true or false>, "score": <a number from 0 to 1>, "reason": "<why>"}'
    return (
        "You are grading the response of an AI agent to a task against a rubric.\n\n"
        f"{fence(sections, {'grader': 'llm-rubric', 'rubric': rubric})}"
        f"Rubric:\n{rubric.strip()}\n\n"
        f"{use_reference}"
        'Decide whether the response meets the rubric ("pass": true or false), score how well '
        'it meets it from 0 (not at all) to 1 (fully) ("score"), and say why ("reason").\n\n'
        f"Answer with one JSON object and nothing else, in this form:\n{example}\n"
    )


def parse_rubric_reply(reply: str) -> RubricVerdict:
    """Read ``{"pass", "score", "reason"}`` from a judge reply (``pass`` or ``score`` may be alone).

    Raises:
        ValueError: no JSON object, neither ``pass`` nor ``score``, a ``pass`` that is not a
            boolean, or a ``score`` that is not a number from 0 to 1.
    """
    data = first_json_object(reply)
    if data is None:
        raise ValueError("the reply holds no JSON object")
    if "pass" not in data and "score" not in data:
        raise ValueError('the JSON object has neither "pass" nor "score"')
    problems = []
    passed = data.get("pass")
    if "pass" in data and not isinstance(passed, bool):
        problems.append(f'"pass" is {passed!r}, not true or false')
    raw = data.get("score")
    if "score" in data and (
        isinstance(raw, bool) or not isinstance(raw, int | float) or not 0.0 <= raw <= 1.0
    ):
        problems.append(f'"score" is {raw!r}, not a number from 0 to 1')
    if problems:
        raise ValueError("; ".join(problems))
    score = float(raw) if raw is not None else float(bool(passed))
    reason = data.get("reason")
    return RubricVerdict(passed, score, "" if reason is None else str(reason))


@grader("llm-rubric", config=RubricConfig, threshold=RUBRIC_THRESHOLD, needs_judge=True)
async def llm_rubric(config: RubricConfig, output: str, ctx: GradeContext) -> Grade:
    """Ask the judge whether the output meets the rubric (promptfoo's ``llm-rubric``)."""
    expected = ctx.inputs.get("expected")
    reference = None
    if isinstance(expected, str):
        reference = expected if expected.strip() else None
    elif expected is not None:
        reference = json.dumps(expected, ensure_ascii=False, sort_keys=True, default=str)
    prompt = build_rubric_prompt(ctx.prompt, output, config.value, reference)
    answer = await ask_judge(ctx, prompt, parse_rubric_reply, grader="llm-rubric")
    verdict = answer.verdict
    if config.threshold is not None:
        passed = verdict.passed is not False and verdict.score >= config.threshold
    elif verdict.passed is not None:
        passed = verdict.passed
    else:
        passed = verdict.score >= RUBRIC_THRESHOLD
    return RubricGrade(
        score=verdict.score,
        passed=passed,
        criteria={"rubric": verdict.score},
        reasons={"rubric": verdict.reason},
        judge_pass=verdict.passed,
        threshold=config.threshold,
        **answer.grade_fields(),
    )


# ---------------------------------------------------------------- context-recall, -faithfulness


class ContextRecallConfig(BaseModel):
    """Config of ``context-recall``."""

    model_config = _CONFIG
    case_inputs: ClassVar[CaseInputs] = {"expected": ("value",), "context": ()}

    value: Text | None = None
    """The reference answer (promptfoo's ``value``); without it, the case's ``expected``."""
    threshold: Fraction = CONTEXT_THRESHOLD
    """The share of the reference's statements the context must support to pass."""


class ContextFaithfulnessConfig(BaseModel):
    """Config of ``context-faithfulness``."""

    model_config = _CONFIG
    case_inputs: ClassVar[CaseInputs] = {"context": ()}

    threshold: Fraction = CONTEXT_THRESHOLD
    """The share of the response's claims the context must support to pass."""


@dataclass(frozen=True)
class ItemVerdict:
    """The judge's verdict on one statement or claim."""

    text: str
    held: bool
    """Attributed to (for a statement) or inferable from (for a claim) the context."""
    reason: str


class ContextGrade(JudgeGrade):
    """A 0/1 verdict per statement or claim: ``criteria`` maps ``"<n>. <text>"`` to 0 or 1."""

    threshold: float
    grader_name: ClassVar[str]
    key: ClassVar[str]
    """The judge reply's list of verdicts (``statements``, ``claims``)."""
    noun: ClassVar[str]
    """What an entry of the list holds its text under (``statement``, ``claim``)."""
    verdict: ClassVar[str]
    """What an entry holds its 0/1 verdict under (``attributed``, ``supported``)."""
    failing: ClassVar[str]

    def explain(self) -> str:
        """Name the statements or claims the context does not support (the first few)."""
        missed = [item for item, held in self.criteria.items() if held < 1.0]
        if not missed:
            return ""
        named = "; ".join(repr(_clip(item)) for item in missed[:_LISTED])
        more = f" (+{len(missed) - _LISTED} more)" if len(missed) > _LISTED else ""
        total = len(self.criteria)
        return f"{len(missed)} of {total} {self.noun}s {self.failing}: {named}{more}"


class ContextRecallGrade(ContextGrade):
    """Result of ``context-recall``: a verdict per statement of the reference answer."""

    grader_name: ClassVar[str] = "context-recall"
    key: ClassVar[str] = "statements"
    noun: ClassVar[str] = "statement"
    verdict: ClassVar[str] = "attributed"
    failing: ClassVar[str] = "not attributed to the context"


class ContextFaithfulnessGrade(ContextGrade):
    """Result of ``context-faithfulness``: a verdict per claim of the response."""

    grader_name: ClassVar[str] = "context-faithfulness"
    key: ClassVar[str] = "claims"
    noun: ClassVar[str] = "claim"
    verdict: ClassVar[str] = "supported"
    failing: ClassVar[str] = "not supported by the context"


_RECALL_STEPS = (
    "You are checking how much of a reference answer the retrieved context supports.",
    "Split the reference answer into its statements: short factual statements, each "
    "understandable on its own (no pronouns left unresolved), which together say everything the "
    'reference answer says. For each statement set "attributed" to 1 if the retrieved context '
    "states or clearly implies it, and to 0 if it does not.",
)
_FAITHFULNESS_STEPS = (
    "You are checking whether the claims of an AI agent's response can be inferred from the "
    "retrieved context it was given.",
    "List the claims the response makes: short factual statements, each understandable on its "
    "own (no pronouns left unresolved), which together cover everything the response asserts; "
    "leave out what asserts nothing (greetings, questions, offers of help). For each claim set "
    '"supported" to 1 if it can be inferred from the retrieved context, and to 0 if it cannot '
    "(the context does not say it, or says otherwise).",
)


def _items_prompt(
    grade_type: type[ContextGrade],
    steps: tuple[str, str],
    task: str,
    material: tuple[str, str, str],
    context: str,
) -> str:
    """A judge prompt asking for a 0/1 verdict per statement or claim of ``material``."""
    sections = [("task", "task", task), material, ("context", "retrieved context", context)]
    entry = {grade_type.noun: "…", grade_type.verdict: 1, "reason": "…"}
    example = json.dumps({grade_type.key: [entry]}, ensure_ascii=False)
    heading, instructions = steps
    return (
        f"{heading}\n\n"
        f"{fence(sections, grade_type.grader_name)}"
        f"{instructions} Judge only from the retrieved context, not from what you know "
        "yourself.\n\n"
        "Answer with one JSON object and nothing else, in this form, with one entry per "
        f"{grade_type.noun}:\n{example}\n"
    )


def build_recall_prompt(task: str, reference: str, context: str) -> str:
    """Return the judge prompt of ``context-recall``."""
    material = ("reference", "reference answer", reference)
    return _items_prompt(ContextRecallGrade, _RECALL_STEPS, task, material, context)


def build_faithfulness_prompt(task: str, response: str, context: str) -> str:
    """Return the judge prompt of ``context-faithfulness``."""
    material = ("response", "response", response)
    return _items_prompt(ContextFaithfulnessGrade, _FAITHFULNESS_STEPS, task, material, context)


def parse_items(reply: str, *, key: str, text_key: str, verdict_key: str) -> list[ItemVerdict]:
    """Read ``{key: [{text_key: str, verdict_key: 0|1, "reason": str}, …]}`` from a judge reply.

    The verdict may also be ``true``/``false``; at least one entry is required.

    Raises:
        ValueError: no JSON object, no list under ``key``, an empty list, an entry without text,
            or a verdict other than 0 or 1.
    """
    data = first_json_object(reply)
    if data is None:
        raise ValueError("the reply holds no JSON object")
    entries = data.get(key)
    if not isinstance(entries, list):
        raise ValueError(f'the JSON object has no "{key}" list')
    if not entries:
        raise ValueError(f'the "{key}" list is empty')
    verdicts: list[ItemVerdict] = []
    problems: list[str] = []
    for n, entry in enumerate(entries, 1):
        fields = entry if isinstance(entry, dict) else {}
        text, held, reason = fields.get(text_key), fields.get(verdict_key), fields.get("reason")
        if not isinstance(text, str) or not text.strip():
            problems.append(f'entry {n} has no "{text_key}" text')
        elif not isinstance(held, bool | int | float) or held not in (0, 1):
            problems.append(f'entry {n} has "{verdict_key}" {held!r}, not 0 or 1')
        else:
            verdicts.append(
                ItemVerdict(text.strip(), bool(held), "" if reason is None else str(reason))
            )
    if problems:
        more = f" (+{len(problems) - _LISTED} more)" if len(problems) > _LISTED else ""
        raise ValueError("; ".join(problems[:_LISTED]) + more)
    return verdicts


async def _grade_items(
    ctx: GradeContext, prompt: str, grade_type: type[ContextGrade], threshold: float
) -> Grade:
    """Ask the judge for a verdict per statement or claim; ``score`` is the share that held."""
    parse = partial(
        parse_items, key=grade_type.key, text_key=grade_type.noun, verdict_key=grade_type.verdict
    )
    answer = await ask_judge(ctx, prompt, parse, grader=grade_type.grader_name)
    items = answer.verdict
    score = sum(item.held for item in items) / len(items)
    names = [f"{n}. {item.text}" for n, item in enumerate(items, 1)]
    return grade_type(
        score=score,
        passed=score >= threshold,
        criteria={name: float(item.held) for name, item in zip(names, items, strict=True)},
        reasons={name: item.reason for name, item in zip(names, items, strict=True)},
        threshold=threshold,
        **answer.grade_fields(),
    )


@grader("context-recall", config=ContextRecallConfig, threshold=CONTEXT_THRESHOLD, needs_judge=True)
async def context_recall(config: ContextRecallConfig, output: str, ctx: GradeContext) -> Grade:
    """Score the share of the reference answer's statements the retrieved context supports."""
    if config.value is not None:
        reference = config.value
    else:
        expected = _required(ctx, "expected", "context-recall", "the reference answer")
        reference = _text(expected, "expected", "context-recall")
    prompt = build_recall_prompt(ctx.prompt, reference, _context(ctx, "context-recall"))
    return await _grade_items(ctx, prompt, ContextRecallGrade, config.threshold)


@grader(
    "context-faithfulness",
    config=ContextFaithfulnessConfig,
    threshold=CONTEXT_THRESHOLD,
    needs_judge=True,
)
async def context_faithfulness(
    config: ContextFaithfulnessConfig, output: str, ctx: GradeContext
) -> Grade:
    """Score the share of the response's claims that can be inferred from the context."""
    context = _context(ctx, "context-faithfulness")
    if not output.strip():
        return Grade(skipped=True, reason="no claims to check: the response is blank")
    prompt = build_faithfulness_prompt(ctx.prompt, output, context)
    return await _grade_items(ctx, prompt, ContextFaithfulnessGrade, config.threshold)
