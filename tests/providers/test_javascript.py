"""The ``javascript`` provider: promptfoo JavaScript provider modules run in real Node.js."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from datetime import date
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from coalmine.errors import ProviderError
from coalmine.providers._node import PING_GRACE
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.providers.javascript import INSTALL_HINT, JavaScriptProvider, JavaScriptSettings
from coalmine.results import AgentOutput
from tests.helpers.processes import is_gone, kill_all, wait_gone

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")

ROOT = Path(__file__).resolve().parents[2]

ECHO = """\
class Provider {
  constructor(options) { this.options = options; this.calls = 0; }
  id() { return this.options.id; }
  async callApi(prompt, context, options) {
    this.calls += 1;
    const mode = context.vars.mode;
    if (mode === "object") {
      return { output: { said: prompt, n: 1.5, ok: true, list: [1, "two", null] },
               tokenUsage: { total: 9, prompt: 4, completion: 5, numRequests: 1 }, cost: 0.25,
               finishReason: "length" };
    }
    if (mode === "error") return { error: "bad input: " + context.vars.name, output: "ignored" };
    if (mode === "error-object") return { error: { code: 7 } };
    if (mode === "throw") throw new RangeError("no " + context.vars.name);
    if (mode === "throw-string") throw "plain";
    if (mode === "null") return { output: null };
    if (mode === "text") return "a bare string";
    if (mode === "nothing") return undefined;
    if (mode === "zero") return { output: 0 };
    if (mode === "print") { console.log("noise on stdout"); console.error("noise"); }
    return { output: JSON.stringify({
      prompt, options: this.options, label: this.label, calls: this.calls,
      context: { ...context, originalProvider: context.originalProvider === this,
                 logger: typeof context.logger.info, getCache: typeof context.getCache().get,
                 filters: context.filters },
      signal: options.abortSignal instanceof AbortSignal,
      cwd: process.cwd() }) };
  }
}
module.exports = Provider;
"""


def make(
    base: Path, code: str = ECHO, *, file: str = "provider.js", **settings: Any
) -> JavaScriptProvider:
    (base / file).parent.mkdir(parents=True, exist_ok=True)
    (base / file).write_text(textwrap.dedent(code), encoding="utf-8")
    return JavaScriptProvider(
        agent="js", settings=JavaScriptSettings(file=file, **settings), base_dir=base
    )


def request(prompt: str = "hello", **variables: Any) -> AgentRequest:
    return AgentRequest(prompt, CallContext("case-1", "js", vars=variables))


async def ask(provider: JavaScriptProvider, req: AgentRequest, limit: float = 20) -> AgentOutput:
    with anyio.fail_after(limit):
        return await provider.call(req)


def call(provider: JavaScriptProvider, *requests: AgentRequest) -> list[AgentOutput]:
    """Each request in turn, in one event loop; the provider is closed after."""

    async def main() -> list[AgentOutput]:
        try:
            return [await ask(provider, r) for r in requests]
        finally:
            await provider.aclose()

    return anyio.run(main)


def fail(provider: JavaScriptProvider, req: AgentRequest) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, req)
    return info.value


def test_a_class_is_constructed_with_the_options_and_called_with_promptfoos_context(
    tmp_path: Path,
) -> None:
    provider = make(tmp_path, options={"config": {"temperature": 0.5}}, label="Mine")
    extra = {"prompt": {"raw": "Hi {{name}}", "label": "p"}, "test": {"vars": {"name": "Ü"}},
             "repeatIndex": 2}  # fmt: skip
    req = AgentRequest("Hi Ü ✓", CallContext("c", "js", vars={"name": "Ü"}, promptfoo=extra))
    first, second = call(provider, req, request())
    seen = json.loads(first.text)
    assert first.data is None  # a string output is the text
    assert seen["prompt"] == "Hi Ü ✓"
    assert seen["options"] == {
        "id": "file://provider.js",
        "config": {"temperature": 0.5, "basePath": str(tmp_path.resolve())},
        "env": {},
    }
    assert seen["label"] == "Mine"
    assert seen["context"] == {
        "vars": {"name": "Ü"}, "prompt": {"raw": "Hi {{name}}", "label": "p"}, "filters": {},
        "originalProvider": True, "test": {"vars": {"name": "Ü"}}, "logger": "function",
        "getCache": "function", "repeatIndex": 2,
    }  # fmt: skip
    assert list(seen["context"]) == [
        "vars", "prompt", "filters", "originalProvider", "test", "logger", "getCache",
        "repeatIndex",
    ]  # promptfoo's order  # fmt: skip
    assert seen["signal"] is True
    assert seen["cwd"] == str(tmp_path.resolve())
    assert json.loads(second.text)["calls"] == 2  # one instance serves every call


def test_values_reach_the_module_as_json_gives_them(tmp_path: Path) -> None:
    (output,) = call(make(tmp_path), request(day=date(2024, 5, 1), n=2.0, pair=("a", 1)))
    assert json.loads(output.text)["context"]["vars"] == {"day": {}, "n": 2, "pair": ["a", 1]}
    error = fail(make(tmp_path), request(tags={"a"}))
    assert (error.kind, error.reason) == (
        "config",
        "the call cannot be passed as JSON: Object of type set is not JSON serializable",
    )


def test_the_process_runs_in_the_folder_the_base_path_names(tmp_path: Path) -> None:
    (tmp_path / "promptfoo").mkdir()
    provider = make(tmp_path, options={"config": {"basePath": "promptfoo"}})
    (output,) = call(provider, request())
    seen = json.loads(output.text)
    assert seen["cwd"] == seen["options"]["config"]["basePath"] == str(tmp_path / "promptfoo")
    error = fail(make(tmp_path, options={"config": {"basePath": "gone"}}), request())
    assert (error.kind, error.reason) == (
        "config",
        f"options.config.basePath is no folder: {tmp_path / 'gone'}",
    )


def test_an_object_output_is_kept_as_data_with_its_tokens_cost_and_finish_reason(
    tmp_path: Path,
) -> None:
    (output,) = call(make(tmp_path), request("hi", mode="object"))
    assert output.data == {"said": "hi", "n": 1.5, "ok": True, "list": [1, "two", None]}
    assert output.text == '{"said":"hi","n":1.5,"ok":true,"list":[1,"two",null]}'
    assert output.usage == {"total_tokens": 9, "prompt_tokens": 4, "completion_tokens": 5}
    assert (output.cost, output.finish_reason) == (0.25, "length")
    (zero,) = call(make(tmp_path), request(mode="zero"))
    assert (zero.text, zero.data) == ("0", 0)


@pytest.mark.parametrize(
    ("mode", "message", "kind"),
    [
        ("error", "bad input: Ann", "crash"),
        ("error-object", '{"code":7}', "crash"),
        ("null", "No output", "bad_output"),
        ("text", "No output", "bad_output"),  # a response that is not an object has no output
        ("throw-string", "plain", "crash"),
    ],
)
def test_an_answer_promptfoo_fails_is_a_failure(
    tmp_path: Path, mode: str, message: str, kind: str
) -> None:
    error = fail(make(tmp_path), request(mode=mode, name="Ann"))
    assert (error.reason, error.kind, error.provider) == (message, kind, "javascript")


def test_a_call_that_throws_fails_with_what_it_threw_and_its_stack(tmp_path: Path) -> None:
    error = fail(make(tmp_path), request(mode="throw", name="way"))
    assert error.reason.startswith("RangeError: no way\n    at Provider.callApi")
    assert str(tmp_path / "provider.js") in error.reason
    # no response at all: promptfoo's evaluator throws reading it
    error = fail(make(tmp_path), request(mode="nothing"))
    assert error.reason.startswith("TypeError: Cannot convert undefined or null to object\n")


def test_what_the_module_prints_does_not_reach_the_answer(tmp_path: Path) -> None:
    (output,) = call(make(tmp_path), request("quiet", mode="print"))
    assert json.loads(output.text)["prompt"] == "quiet"


@pytest.mark.parametrize(
    ("file", "code"),
    [
        ("esm.mjs", "export default class { id() { return 'e'; }\n"
                    "  async callApi(p) { return { output: 'esm ' + p }; } }"),
        ("cjs.cjs", "module.exports = class { id() { return 'c'; }\n"
                    "  async callApi(p) { return { output: 'cjs ' + p }; } };"),
        ("plain.js", "function P(o) { this.id = () => o.id;\n"
                     "  this.callApi = async (p) => ({ output: 'fn ' + p }); }\n"
                     "module.exports = P;"),
        ("pkg/esm.js", "export default class { id() { return 'j'; }\n"
                       "  callApi(p) { return { output: 'js ' + p }; } }"),
    ],
)  # fmt: skip
def test_the_default_export_is_constructed_whatever_the_module_kind(
    tmp_path: Path, file: str, code: str
) -> None:
    if file.startswith("pkg/"):
        (tmp_path / "pkg").mkdir()
        (tmp_path / "pkg" / "package.json").write_text('{"type": "module"}')
    (output,) = call(make(tmp_path, code, file=file), request("x"))
    assert output.text.endswith(" x")


@pytest.mark.parametrize(
    ("file", "code", "said"),
    [
        ("bad.js", "module.exports = { id: () => 'o', callApi: async () => ({ output: 'x' }) };",
         "is not a constructor"),
        ("bad.mjs", "export class Named { id() { return 'n'; }\n"
                    "  async callApi() { return { output: 'x' }; } }", "is not a constructor"),
        ("bad.js", "module.exports = class { async callApi() { return { output: 'x' }; } };",
         "TypeError: provider.id is not a function"),
        ("bad.js", "class P { constructor() { throw new Error('no key'); } }\nmodule.exports = P;",
         "Error: no key"),
        ("bad.cjs", "throw new SyntaxError('at load');", "SyntaxError: at load"),
    ],
)  # fmt: skip
def test_a_module_that_does_not_load_fails_every_call_with_why(
    tmp_path: Path, file: str, code: str, said: str
) -> None:
    provider = make(tmp_path, code, file=file)

    async def main() -> list[ProviderError]:
        errors = []
        for _ in range(2):
            with pytest.raises(ProviderError) as info:
                await ask(provider, request())
            errors.append(info.value)
        await provider.aclose()
        return errors

    first, second = anyio.run(main)
    assert first.reason.startswith("cannot load the provider bad.")
    assert said in first.reason and first.kind == "crash"
    assert second is first  # loaded once: the same error, no second process


def test_a_module_gone_from_disk_is_a_config_failure(tmp_path: Path) -> None:
    provider = make(tmp_path)
    (tmp_path / "provider.js").unlink()
    error = fail(provider, request())
    assert error.kind == "config"
    assert error.reason == f"ENOENT: no such file or directory, open '{tmp_path / 'provider.js'}'"


def test_without_node_the_failure_says_how_to_get_it(tmp_path: Path) -> None:
    error = fail(make(tmp_path, node=str(tmp_path / "no-node")), request())
    assert error.kind == "config"
    assert error.reason.startswith(INSTALL_HINT + " (cannot start ")


def test_settings_name_a_javascript_file_and_know_only_their_keys() -> None:
    with pytest.raises(ValidationError, match="is not a JavaScript file"):
        JavaScriptSettings(file="provider.py")
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        JavaScriptSettings(file="p.js", function="call_api")  # type: ignore[call-arg]
    assert JavaScriptSettings(file="p.MTS").convention == "promptfoo"


BARRIER = """\
let release;
const both = new Promise((resolve) => { release = resolve; });
module.exports = class {
  id() { return "barrier"; }
  async callApi(prompt) {
    if (prompt === "first") { await both; return { output: "first, after second" }; }
    release();
    return { output: "second" };
  }
};
"""


def test_calls_run_concurrently_in_the_one_process(tmp_path: Path) -> None:
    provider = make(tmp_path, BARRIER)
    answers: dict[str, str] = {}

    async def one(prompt: str) -> None:
        answers[prompt] = (await ask(provider, request(prompt), limit=10)).text

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "first")
            await anyio.sleep(0.3)  # the first call waits inside Node for the second
            tg.start_soon(one, "second")
        await provider.aclose()

    anyio.run(main)
    assert answers == {"first": "first, after second", "second": "second"}


WAITS = """\
const fs = require("fs");
module.exports = class {
  id() { return "waits"; }
  async callApi(prompt, context, options) {
    if (prompt === "pid") return { output: String(process.pid) };
    if (prompt === "spin") { fs.writeFileSync("spinning", ""); while (true) {} }
    return new Promise((resolve) => {
      options.abortSignal.addEventListener("abort", () => {
        fs.writeFileSync("aborted", prompt);
        resolve({ output: "too late" });
      });
    });
  }
};
"""


def test_a_call_cut_at_its_timeout_is_aborted_and_the_process_kept(tmp_path: Path) -> None:
    provider = make(tmp_path, WAITS)

    async def main() -> tuple[str, str, str]:
        before = (await ask(provider, request("pid"))).text
        with pytest.raises(TimeoutError):
            await ask(provider, request("wait forever"), limit=0.5)
        after = (await ask(provider, request("pid"))).text
        await provider.aclose()
        return before, after, (tmp_path / "aborted").read_text()

    before, after, aborted = anyio.run(main)
    assert before == after  # the same process answers after the timeout
    assert aborted == "wait forever"  # the abortSignal reached the call


@pytest.mark.slow  # waits out the grace a stuck process gets to answer a ping
def test_a_process_stuck_in_a_loop_is_killed_and_the_next_call_gets_a_fresh_one(
    tmp_path: Path,
) -> None:
    provider = make(tmp_path, WAITS)

    async def main() -> tuple[str, str, float]:
        before = (await ask(provider, request("pid"))).text
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await ask(provider, request("spin"), limit=0.5)
        took = time.monotonic() - started
        after = (await ask(provider, request("pid"))).text
        await provider.aclose()
        return before, after, took

    before, after, took = anyio.run(main)
    assert (tmp_path / "spinning").exists()
    assert took < 0.5 + PING_GRACE + 2
    assert before != after
    assert wait_gone(int(before))


EXITS = """\
module.exports = class {
  id() { return "exits"; }
  async callApi(prompt) {
    if (prompt === "exit") { console.error("leaving now"); process.exit(4); }
    return { output: String(process.pid) };
  }
};
"""


def test_a_process_that_exits_fails_its_calls_and_the_next_call_starts_another(
    tmp_path: Path,
) -> None:
    provider = make(tmp_path, EXITS)

    async def main() -> tuple[str, ProviderError, str]:
        before = (await ask(provider, request("pid"))).text
        with pytest.raises(ProviderError) as info:
            await ask(provider, request("exit"))
        after = (await ask(provider, request("pid"))).text
        await provider.aclose()
        return before, info.value, after

    before, error, after = anyio.run(main)
    assert error.reason == (
        "the Node.js process stopped during the call: it exited with code 4; it printed: "
        "leaving now"
    )
    assert before != after


SPAWNS = """\
const { spawn } = require("child_process");
const fs = require("fs");
module.exports = class {
  id() { return "spawns"; }
  async callApi() {
    const helper = spawn("sleep", ["300"], { stdio: "ignore" });
    fs.writeFileSync("pids.tmp", `${process.pid} ${helper.pid}`);
    fs.renameSync("pids.tmp", "pids.txt");
    return { output: "started" };
  }
};
"""


def pids(folder: Path) -> list[int]:
    return [int(p) for p in (folder / "pids.txt").read_text().split()]


def test_aclose_ends_the_process_and_what_it_started(tmp_path: Path) -> None:
    (output,) = call(make(tmp_path, SPAWNS), request())
    assert output.text == "started"
    try:
        for pid in pids(tmp_path):
            assert wait_gone(pid), f"process {pid} outlived aclose()"
    finally:
        kill_all(pids(tmp_path))


KILLED_COALMINE = """\
import sys, time
from pathlib import Path
import anyio
from coalmine.providers.base import AgentRequest, CallContext
from coalmine.providers.javascript import JavaScriptProvider, JavaScriptSettings

async def main():
    base = Path(sys.argv[1])
    provider = JavaScriptProvider(agent="js", settings=JavaScriptSettings(file="provider.js"),
                                  base_dir=base)
    await provider.call(AgentRequest("x", CallContext("c", "js")))
    (base / "called").write_text("")
    time.sleep(300)

anyio.run(main)
"""


def test_a_kill_9_of_coalmine_takes_the_node_process_and_its_helpers_with_it(
    tmp_path: Path,
) -> None:
    make(tmp_path, SPAWNS)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_COALMINE, str(tmp_path)], env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "called").exists() and time.monotonic() < deadline:
            assert proc.poll() is None, "the script stopped before its call"
            time.sleep(0.05)
        assert (tmp_path / "called").exists()
        started = pids(tmp_path)
        assert not any(is_gone(pid) for pid in started)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # coalmine's whole process group, at once
        proc.wait(timeout=10)
    try:
        for pid in started:
            assert wait_gone(pid, 5), f"process {pid} outlived coalmine"
    finally:
        kill_all(pids(tmp_path))


TYPESCRIPT = """\
interface Answer { output: string; tokenUsage?: { total: number } }
export default class Provider {
  private calls: number = 0;
  constructor(private options: { id: string }) {}
  id(): string { return this.options.id; }
  async callApi(prompt: string): Promise<Answer> {
    this.calls += 1;
    return { output: `${prompt} (${this.calls})`, tokenUsage: { total: 3 } };
  }
}
"""


def tsx_modules() -> Path | None:
    """The node_modules of the promptfoo install ``COALMINE_PROMPTFOO`` names, if it has tsx."""
    executable = os.environ.get("COALMINE_PROMPTFOO")
    if not executable:
        return None
    modules = Path(executable).parent.parent  # node_modules/.bin/promptfoo
    return modules if (modules / "tsx" / "package.json").is_file() else None


def test_a_typescript_provider_runs_through_the_tsx_package_found_from_its_folder(
    tmp_path: Path,
) -> None:
    modules = tsx_modules()
    if modules is None:
        pytest.skip("set COALMINE_PROMPTFOO to a promptfoo install (its tsx runs TypeScript)")
    (tmp_path / "node_modules").symlink_to(modules)
    first, second = call(make(tmp_path, TYPESCRIPT, file="agent.ts"), request("hi"), request("yo"))
    assert (first.text, second.text, second.usage) == ("hi (1)", "yo (2)", {"total_tokens": 3})


def test_a_typescript_provider_without_tsx_says_how_to_get_it(tmp_path: Path) -> None:
    error = fail(make(tmp_path, TYPESCRIPT, file="agent.mts"), request())
    assert error.kind == "config"
    assert error.reason.startswith("a TypeScript provider needs the tsx package: run `npm ")
