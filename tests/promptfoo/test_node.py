"""The Node.js runtime for promptfoo's javascript assertions and transforms (real ``node``)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from coalmine.promptfoo.node import (
    INSTALL_HINT,
    JsAssertionResult,
    JsError,
    JsTimeout,
    JsUnsupported,
    NodeRuntime,
    NodeUnavailable,
    assertion_context,
    node_available,
    transform_context,
)
from tests.promptfoo.node_replay import replay

pytestmark = [
    pytest.mark.skipif(node_available() is not None, reason="needs Node.js >= 18"),
    pytest.mark.anyio,
]

FIXTURES = Path(__file__).parent / "fixtures" / "node"
CONTEXT = {"vars": {"name": "world"}, "prompt": "hello world"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def js() -> AsyncIterator[NodeRuntime]:
    """One worker for the module, as one run has one."""
    async with NodeRuntime() as runtime:
        yield runtime


async def grade(
    js: NodeRuntime, code: object, output: Any = "hello world", **options: Any
) -> JsAssertionResult:
    with anyio.fail_after(10):
        return await js.evaluate_assertion(
            code,
            output=output,
            context=options.pop("context", CONTEXT),
            base_dir=options.pop("base_dir", FIXTURES),
            **options,
        )


async def transform(js: NodeRuntime, code: str, output: Any = "hello world", **options: Any) -> Any:
    with anyio.fail_after(10):
        return await js.transform(
            code,
            output=output,
            context=options.pop("context", CONTEXT),
            base_dir=options.pop("base_dir", FIXTURES),
            **options,
        )


def verdict(result: JsAssertionResult) -> tuple[bool, float, str]:
    return result.passed, result.score, result.reason


# --- the forms of inline code ---


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("output.includes('hello')", (True, 1.0, "Assertion passed")),
        ("output === 'hello world';;", (True, 1.0, "Assertion passed")),  # trailing ; dropped
        ("const n = output.length; n === 11", (True, 1.0, "Assertion passed")),
        ("const s = 'a;b'; s === 'a;b'", (True, 1.0, "Assertion passed")),  # ; in a string
        ("output.length; 0", (True, 11.0, "Assertion passed")),  # "return output.length; 0"
        ("const n = output.length;\nreturn n === 11;\n", (True, 1.0, "Assertion passed")),
        ("output.length > 0\n", (True, 1.0, "Assertion passed")),  # one line once trimmed
        ("Promise.resolve(output.length > 3)", (True, 1.0, "Assertion passed")),
        ("context.vars.name === 'world' && context.prompt === output", (True, 1.0, "Assertion passed")),
        ("process.mainModule.require('path').basename('/a/b.txt') === 'b.txt'", (True, 1.0, "Assertion passed")),
        ("typeof require === 'undefined'", (True, 1.0, "Assertion passed")),
    ],
)  # fmt: skip
async def test_inline_forms(js: NodeRuntime, code: str, expected: tuple[bool, float, str]) -> None:
    assert verdict(await grade(js, code)) == expected


@pytest.mark.parametrize(
    ("code", "got"),
    [
        ("(output, context) => output.length > 0", "function: undefined"),  # returned, not called
        ("output.length > 0;\n1", "undefined: undefined"),  # a body without return
        ("'yes'", 'string: "yes"'),
        ("null", "object: null"),
        ("({pass: true, score: 1})", 'object: {"pass":true,"score":1}'),  # no reason
    ],
)  # fmt: skip
async def test_other_answers_fail_the_assertion_with_the_code_appended(
    js: NodeRuntime, code: str, got: str
) -> None:
    result = await grade(js, code)
    message = (
        "Custom function must return a boolean, number, or GradingResult object. Got type " + got
    )
    assert (result.passed, result.score) == (False, 0.0)
    assert result.reason.startswith(f"Custom function threw error: {message}\nStack Trace: Error: ")
    assert result.reason.endswith(f"\n{code.rstrip()}")


async def test_a_throwing_assertion_fails_with_its_stack_even_when_inverted(
    js: NodeRuntime,
) -> None:
    code = "(() => { throw new Error('boom') })()"
    for inverse in (False, True):
        result = await grade(js, code, inverse=inverse)
        assert (result.passed, result.score) == (False, 0.0)
        assert result.reason.startswith(
            "Custom function threw error: boom\nStack Trace: Error: boom\n"
        )
        assert result.reason.endswith("\n" + code)
    syntax = await grade(js, "output.(")
    assert syntax.reason.startswith("Custom function threw error: Unexpected token '('")


async def test_a_value_that_is_not_a_string_fails_without_being_appended(js: NodeRuntime) -> None:
    for value in (0, True, None):
        result = await grade(js, value)
        assert (result.passed, result.score) == (False, 0.0)
        assert result.reason.startswith(
            "Custom function threw error: Invariant failed: javascript assertion must have a "
            "string value\nStack Trace: Error: Invariant failed"
        )
        assert result.reason.splitlines()[-1].startswith("    at ")  # ends with the stack


# --- what an answer means ---


@pytest.mark.parametrize(
    ("code", "threshold", "inverse", "expected"),
    [
        ("true", None, False, (True, 1.0, "Assertion passed")),
        ("false", None, False, (False, 0.0, "Custom function returned false\nfalse")),
        ("true", None, True, (False, 0.0, "Custom function returned true\ntrue")),
        ("false", None, True, (True, 1.0, "Assertion passed")),
        ("0.2", None, False, (True, 0.2, "Assertion passed")),  # > 0 without a threshold
        ("0", None, False, (False, 0.0, "Custom function returned false\n0")),
        ("-1", None, False, (False, -1.0, "Custom function returned false\n-1")),
        ("0.4", 0.5, False, (False, 0.4, "Custom function returned false\n0.4")),
        ("0.5", 0.5, False, (True, 0.5, "Assertion passed")),  # >= threshold
        ("0.3", None, True, (False, 0.3, "Custom function returned true\n0.3")),  # score kept
        ("0", None, True, (True, 0.0, "Assertion passed")),
        ("({pass: true, score: 0.7, reason: 'ok'})", None, False, (True, 0.7, "ok")),
        ("({pass: true, score: 0.7, reason: 'ok'})", 0.9, False, (True, 0.7, "ok")),  # not re-judged
        ("({pass: false, score: 0.2, reason: 'r'})", None, True, (True, 0.2, "Assertion passed")),
        ("({pass: true, score: 0.9, reason: 'r'})", None, True, (False, 0.9, "Custom function returned true")),
        ("({pass: false, score: 0.2, reason: 'r'})", None, False, (False, 0.2, "r")),
    ],
)  # fmt: skip
async def test_answers_and_inversion(
    js: NodeRuntime,
    code: str,
    threshold: float | None,
    inverse: bool,
    expected: tuple[bool, float, str],
) -> None:
    assert verdict(await grade(js, code, threshold=threshold, inverse=inverse)) == expected


async def test_a_grading_result_keeps_its_other_keys_and_scores_cross_as_numbers(
    js: NodeRuntime,
) -> None:
    result = await grade(
        js, "({pass: true, score: 1, reason: 'r', namedScores: {x: 2}, comment: 'c'})"
    )
    assert result.extra == {"namedScores": {"x": 2}, "comment": "c"}
    nan = await grade(js, "NaN")
    assert not nan.passed and math.isnan(nan.score)
    assert verdict(await grade(js, "-Infinity")) == (
        False,
        -math.inf,
        "Custom function returned false\n-Infinity",
    )


# --- files ---


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("file://assert_file.js", (True, 1.0, "Assertion passed")),
        ("file://assert_file.js:named", (True, 0.25, "named world")),
        ("file://assert_file.js:num", (True, 0.5, "Assertion passed")),
        ("file://esm_assert.mjs", (True, 11.0, "Assertion passed")),
        ("file://code.txt", (True, 1.0, "Assertion passed")),  # a .txt file holds the code
        (f"file://{FIXTURES / 'assert_file.js'}:named", (True, 0.25, "named world")),
    ],
)  # fmt: skip
async def test_file_assertions(
    js: NodeRuntime, code: str, expected: tuple[bool, float, str]
) -> None:
    assert verdict(await grade(js, code)) == expected


async def test_file_assertions_that_throw_or_miss_make_the_row_an_error(js: NodeRuntime) -> None:
    with pytest.raises(JsError) as thrown:
        await grade(js, "file://assert_file.js:throws")
    # the message, and the frame of the config's own file where it threw (as promptfoo's
    # stack shows it), not the worker's
    assert thrown.value.where is not None and thrown.value.where.endswith("assert_file.js:9:45")
    assert str(thrown.value) == f"Error: file boom\n    at {thrown.value.where}"
    assert "assert_file.js:9" in thrown.value.stack
    with pytest.raises(  # no function of that name: no frame of the file's own
        JsError, match=r"^TypeError: Cannot read properties of undefined \(reading 'nope'\)$"
    ):
        await grade(js, "file://assert_file.js:nope")
    with pytest.raises(JsError, match=r"reading 'half'"):  # promptfoo looks in the default export
        await grade(js, "file://esm_assert.mjs:half")
    with pytest.raises(
        JsError, match=r"^Error: ENOENT: no such file or directory, open '.*missing\.js'$"
    ):
        await grade(js, "file://missing.js")


async def test_a_file_that_answers_badly_fails_the_assertion(js: NodeRuntime) -> None:
    bad = await grade(js, "file://assert_file.js:str")
    assert bad.reason.startswith(
        "Custom function threw error: Invariant failed: Javascript assertion script must return "
        "a boolean, number, or object (file://assert_file.js:str)\nStack Trace: "
    )
    assert bad.reason.endswith("\nfile://assert_file.js:str")
    # undefined falls through to running "file://…" as code (promptfoo's behaviour)
    undefined = await grade(js, "file://assert_file.js:undef")
    assert undefined.reason.startswith("Custom function threw error: Unexpected token ':'")


# --- transforms ---


async def test_transform_forms(js: NodeRuntime) -> None:
    assert await transform(js, "output.toUpperCase()") == "HELLO WORLD"
    assert await transform(js, "const o = output;\nreturn o + '!';") == "hello world!"
    assert await transform(js, "({a: 1, s: output})") == {"a": 1, "s": "hello world"}
    assert await transform(js, "file://transform.js") == "hello world <file>"
    assert await transform(js, "file://transform.js:shout") == "HELLO WORLD"
    assert await transform(js, f"file://{FIXTURES / 'transform.js'}:shout") == "HELLO WORLD"
    assert await transform(js, "vars.name + '!'", output={"name": "x"}, input_name="vars") == "x!"


async def test_transform_errors(js: NodeRuntime) -> None:
    code = "(() => { throw new Error('tboom') })()"
    with pytest.raises(JsError) as thrown:
        await transform(js, code)
    assert str(thrown.value) == f"Error: Transform failed ([inline transform]: {code}): tboom"
    with pytest.raises(JsError) as nothing:
        await transform(js, "output.toUpperCase()\n")  # a block is a body: no return, no value
    assert str(nothing.value) == (
        "Error: Transform function did not return a value\n\n[inline transform]: output.toUpperCase()"
    )
    long = "output + " + " + ".join(["'x'"] * 40) + " && null"
    with pytest.raises(JsError) as truncated:
        await transform(js, long)
    assert str(truncated.value).endswith(f"[inline transform]: {long[:79]}…")
    with pytest.raises(JsError, match=r"^SyntaxError: Unexpected token '\('$"):
        await transform(js, "output.(")
    with pytest.raises(JsError, match=r"^x$"):  # a thrown non-Error is passed on as is
        await transform(js, "(() => { throw 'x' })()")
    with pytest.raises(
        JsError,
        match=r"^Error: Transform failed \(\[file transform\]\): Cannot read properties of null",
    ):
        await transform(js, "file://transform.js:shout", output=None, context={"vars": {}})


@pytest.mark.usefixtures("path_without_promptfoo")
async def test_what_does_not_run_here_is_unsupported(js: NodeRuntime) -> None:
    with pytest.raises(JsUnsupported, match="returned a function"):
        await transform(js, "(output) => output.toUpperCase()")
    with pytest.raises(JsUnsupported, match="Python transforms"):
        await transform(js, "file://transform.py")
    with pytest.raises(JsUnsupported, match="TypeScript, which promptfoo loads through the tsx"):
        await grade(js, "file://check.ts")
    with pytest.raises(JsUnsupported, match="check.py"):
        await grade(js, "file://check.py")


@pytest.mark.usefixtures("promptfoo_on_path")
async def test_typescript_files_load_through_the_tsx_of_the_promptfoo_on_path(
    tmp_path: Path,
) -> None:
    files = {
        "check.ts": "export default (o: string): boolean => o.startsWith('hello');\n"
        "export const named = (o: string): number => o.length;\n",
        "score.cts": "module.exports = { score: (o: string): number => o.length / 100 };\n",
        "end.mts": "export default (o: string, c: { vars: { name: string } }) => o.endsWith(c.vars.name);\n",
        "upper.ts": "export default (o: string): string => o.toUpperCase();\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    async with NodeRuntime() as runtime:
        found = [
            (r.passed, r.score)
            for r in [
                await grade(runtime, "file://check.ts", base_dir=tmp_path),
                await grade(runtime, "file://score.cts:score", base_dir=tmp_path),
                await grade(runtime, "file://end.mts", base_dir=tmp_path),
            ]
        ]
        assert found == [(True, 1.0), (True, 0.11), (True, 1.0)]
        assert await transform(runtime, "file://upper.ts", base_dir=tmp_path) == "HELLO WORLD"
        # as in promptfoo, a named export of a module with a default one is not found
        with pytest.raises(JsError, match="Cannot read properties of undefined"):
            await grade(runtime, "file://check.ts:named", base_dir=tmp_path)


async def test_transform_chain_and_contexts(js: NodeRuntime) -> None:
    """options.transform, then the assertion's transform, then the assertion sees the result."""
    test_ctx = transform_context(
        variables={"name": "world"}, prompt={"raw": "hello {{name}}", "label": "p"}, metadata={}
    )
    after_test = await transform(js, "output.toUpperCase()", context=test_ctx)
    own_ctx = transform_context(
        variables={"name": "world"}, prompt={"label": "hello world"}, metadata={}
    )
    seen = await transform(js, "JSON.stringify(context)", output=after_test, context=own_ctx)
    assert json.loads(seen) == {
        "vars": {"name": "world"},
        "prompt": {"label": "hello world"},
        "metadata": {},
    }
    after_own = await transform(js, "output + '!'", output=after_test, context=own_ctx)
    assert after_own == "HELLO WORLD!"
    context = assertion_context(
        prompt="hello world",
        variables={"name": "world"},
        test={"vars": {"name": "world"}, "assert": []},
        provider={"id": "echo", "label": ""},
        provider_response={"output": after_test, "metadata": {}},
        config={"k": "v"},
    )
    assert sorted(context) == [
        "config",
        "metadata",
        "prompt",
        "provider",
        "providerResponse",
        "test",
        "vars",
    ]
    code = (
        "output === 'HELLO WORLD!' && context.provider.id() === 'echo'"
        " && context.config.k === 'v' && context.providerResponse.output === 'HELLO WORLD'"
    )
    result = await grade(js, code, output=after_own, context=context)
    assert verdict(result) == (True, 1.0, "Assertion passed")


# --- the boundary and the worker ---


async def test_strings_round_trip_exactly(js: NodeRuntime) -> None:
    text = 'héllo 🌍\r\nzwei\tlines "q" \\ \x00 \u2028 \ud800 end\n' + "x" * 1_000_000
    assert await transform(js, "output", output=text) == text
    assert (
        await grade(js, "output.length", output="🌍")
    ).score == 2.0  # JavaScript counts UTF-16 units


async def test_cwd_is_the_config_folder_and_console_output_does_not_disturb(
    js: NodeRuntime, tmp_path: Path
) -> None:
    (tmp_path / "helper.js").write_text("module.exports = { answer: 42 };\n", encoding="utf-8")
    code = (
        "console.log('noise'); process.stdout.write('more noise\\n');\n"
        "return process.cwd() === context.dir"
        " && process.mainModule.require('./helper.js').answer === 42;"
    )
    context = {"dir": str(tmp_path.resolve())}
    assert (await grade(js, code, base_dir=tmp_path, context=context)).passed


async def test_a_hung_snippet_times_out_and_the_worker_restarts() -> None:
    async with NodeRuntime(timeout=0.2) as short:
        for code in ("(() => { while (true) {} })()", "new Promise(() => {})"):
            start = time.monotonic()
            with pytest.raises(JsTimeout, match=r"did not finish within 0\.2 s"):
                await grade(short, code)
            assert time.monotonic() - start < 5
            assert (
                await grade(short, "true", timeout=10)
            ).passed  # a fresh worker (a loaded CI may be slow)
        with pytest.raises(JsTimeout):  # a call may set its own limit
            await grade(short, "new Promise((r) => setTimeout(() => r(true), 200))", timeout=0.05)


async def test_a_worker_that_exits_is_reported_and_replaced() -> None:
    async with NodeRuntime() as own:
        with pytest.raises(JsError, match=r"worker stopped \(exit code 3\).*bye"):
            await grade(own, "(console.error('bye'), process.exit(3))")
        assert (await grade(own, "true")).passed


async def test_concurrent_calls_each_get_their_answer(js: NodeRuntime) -> None:
    scores: dict[int, float] = {}

    async def one(i: int) -> None:
        code = "new Promise((r) => setTimeout(() => r(output.length), 5 - output.length % 5))"
        scores[i] = (await grade(js, code, output="x" * i)).score

    async with anyio.create_task_group() as group:
        for i in range(1, 40):
            group.start_soon(one, i)
    assert scores == {i: float(i) for i in range(1, 40)}


async def test_a_thousand_evaluations_share_one_worker(js: NodeRuntime) -> None:
    await grade(js, "true")  # the worker is up
    start = time.perf_counter()
    for i in range(1000):
        result = await js.evaluate_assertion(
            "output.length > 3", output=f"output {i}", context=CONTEXT, base_dir=FIXTURES
        )
        assert result.passed
    assert time.perf_counter() - start < 10  # about 0.5 s here; catches a process per call


async def test_without_node_every_call_reports_the_install_hint() -> None:
    assert node_available("no-such-node-binary") == INSTALL_HINT
    async with NodeRuntime(node="no-such-node-binary") as missing_node:
        for _ in range(2):
            with pytest.raises(NodeUnavailable) as missing:
                await grade(missing_node, "true")
            assert missing.value.hint == INSTALL_HINT == str(missing.value)
            with pytest.raises(NodeUnavailable):
                await transform(missing_node, "output")


# --- against real promptfoo ---


@pytest.mark.parametrize("config", ["promptfooconfig", "provider_transform"])
async def test_same_verdicts_as_promptfoo(js: NodeRuntime, config: str) -> None:
    """Each row's error and each javascript assertion's pass, score and reason (stack cut)."""
    expected = json.loads((FIXTURES / f"{config}.expected.json").read_text(encoding="utf-8"))
    assert await replay(js, FIXTURES / f"{config}.yaml") == expected
