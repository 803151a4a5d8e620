"""``python``: a grading function from the project's own code, enabled by its config.

A suite cannot run arbitrary code: ``coalmine.yaml`` lists the functions a suite may use,

    python_graders:
      sql-valid: graders.sql:is_valid      # module relative to the config's folder

and a case names one: ``{"type": "python", "config": {"function": "sql-valid"}}``. The function
is called as ``fn(output, context)`` (``async def`` too) where ``context`` holds ``case_id``,
``prompt``, ``inputs`` (the case's ``expected``, ``relevant`` …), ``tool_calls`` (name and
arguments) and ``args`` (the grader config's ``args``). It returns a bool (pass / fail), a
number in [0, 1] (passes at ``threshold``), or ``{"pass": bool, "score": float, "reason": str}``
(either key may be left out). A function that raises or returns anything else is a grader
error naming the case, never a pass. A sync function runs on the event loop: keep it quick,
or make it ``async``.
"""

from __future__ import annotations

import inspect
import math
import traceback
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from coalmine.errors import GradeError
from coalmine.graders.base import GradeContext, grader
from coalmine.results import Grade

NAME = "python"


class PythonConfig(BaseModel):
    """Config of ``python``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    function: str = Field(min_length=1)
    """A name under ``python_graders:`` in the config."""
    threshold: float = Field(0.5, ge=0, le=1)
    """The score at which a numeric result passes."""
    args: dict[str, Any] = {}
    """Passed to the function as ``context["args"]``."""


class PythonGrade(Grade):
    """Result of a ``python`` grader."""

    function: str
    message: str | None = None
    """The reason the function gave."""

    def explain(self) -> str:
        """The function's own reason."""
        return self.message or ""


@grader(NAME, config=PythonConfig, threshold=0.5)
async def python_grader(config: PythonConfig, output: str, ctx: GradeContext) -> Grade:
    """Call a grading function the config enables (python_graders: name → module:function)."""
    function = ctx.functions.get(config.function)
    if function is None:
        enabled = ", ".join(sorted(ctx.functions)) or "none"
        raise GradeError(
            f"python grader {config.function!r} is not enabled: list it under "
            f"'python_graders:' in the config (enabled: {enabled})",
            grader=NAME,
            config=True,
        )
    context = {
        "case_id": ctx.case_id,
        "prompt": ctx.prompt,
        "inputs": dict(ctx.inputs),
        "tool_calls": [{"name": t.name, "arguments": t.arguments} for t in ctx.tool_calls],
        "args": dict(config.args),
    }
    try:
        result = function(output, context)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:  # noqa: BLE001 - the function's failure is reported, not raised
        tail = "".join(traceback.format_exception(exc)[-3:]).strip()
        message = f"{config.function} raised {type(exc).__name__}: {exc}\n{tail[-800:]}"
        raise GradeError(message, grader=NAME) from None
    return _read(result, config)


def _read(result: Any, config: PythonConfig) -> PythonGrade:
    name = config.function
    message: str | None = None
    passed: bool | None = None
    if isinstance(result, dict):
        unknown = sorted(set(result) - {"pass", "score", "reason"})
        if unknown or not result.keys() & {"pass", "score"}:
            raise _bad(name, result)
        if "pass" in result and not isinstance(result["pass"], bool):
            raise _bad(name, result)  # None too: a pass is said, never implied
        passed = result.get("pass")
        reason = result.get("reason")
        message = None if reason is None else str(reason)
        result = result["score"] if "score" in result else float(bool(passed))
    if isinstance(result, bool):
        score_value = float(result)
    elif isinstance(result, int | float) and math.isfinite(result) and 0 <= result <= 1:
        score_value = float(result)
    else:
        raise _bad(name, result)
    if passed is None:
        passed = score_value >= config.threshold - 1e-9
    return PythonGrade(score=score_value, passed=passed, function=name, message=message)


def _bad(name: str, result: Any) -> GradeError:
    return GradeError(
        f"{name} returned {result!r:.200}; expected a bool, a number in [0, 1], or "
        '{"pass": bool, "score": float, "reason": str}',
        grader=NAME,
    )
