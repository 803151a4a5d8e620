"""A row's prompt made as promptfoo 0.121.20 makes it: var loaders, prompt functions, filters.

Every piece of code here runs for real, in ``python3`` and Node.js, from files written to a tmp
folder. The verdicts of whole rows are checked against promptfoo itself by the parity configs
(``fixtures/parity/{var_loaders,prompt_functions,exec_prompts,nunjucks_filters,typescript}``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from coalmine.promptfoo.checking import RowError
from coalmine.promptfoo.matrix.prepared import PromptCode
from coalmine.promptfoo.matrix.sources import reading_inside
from coalmine.promptfoo.node import NodeRuntime, node_available
from coalmine.promptfoo.nunjucks import RenderedPrompt
from coalmine.promptfoo.prompt_code import make_prompt, runtime_vars

pytestmark = pytest.mark.usefixtures("fast_python")
NEEDS_NODE = pytest.mark.skipif(node_available() is not None, reason="needs Node.js >= 18")
PROVIDER = {"id": "echo", "label": None, "config": {}}


def make(
    folder: Path,
    template: str,
    variables: dict[str, Any],
    code: PromptCode | None = None,
    **options: Any,
) -> RenderedPrompt:
    async def go() -> RenderedPrompt:
        async with NodeRuntime() as node:
            with reading_inside(folder):
                return await make_prompt(
                    template, variables, code or PromptCode(), provider=PROVIDER,
                    base_dir=folder, node=node, env={}, **options,
                )  # fmt: skip

    return anyio.run(go)


def error_of(folder: Path, template: str, variables: dict[str, Any], **options: Any) -> str:
    with pytest.raises(RowError) as caught:
        make(folder, template, variables, **options)
    return caught.value.message


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if name.endswith(".sh"):
            path.chmod(0o755)
    return folder


# --- var loaders --------------------------------------------------------------------------------

LOADER = """
def get_var(var_name, prompt, other_vars):
    if var_name == "bad":
        return {"error": "no " + var_name}
    if var_name == "empty":
        return {"output": ""}
    if var_name == "number":
        return {"output": 3}
    if var_name == "raises":
        raise KeyError("gone")
    shown = prompt.replace("{", "(").replace("}", ")")  # not a template again
    return {"output": "  " + var_name + "|" + shown + "|" + ",".join(other_vars) + "  \\n"}
"""


def test_a_python_var_loader_gets_the_name_the_raw_prompt_and_the_vars_so_far(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"load.py": LOADER})
    rendered = make(
        tmp_path,
        "Q {{ first }} / {{ second }}",
        {"first": "file://load.py", "second": "file://load.py", "plain": "p"},
    )
    # each answer is trimmed; the second loader sees the first one's value in place
    first = "first|Q (( first )) / (( second ))|first,second,plain"
    assert rendered.vars["first"] == first
    assert rendered.vars["second"] == "second|Q (( first )) / (( second ))|first,second,plain"
    assert rendered.text == f"Q {first} / {rendered.vars['second']}"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bad", "Error running Python script {file}: no bad"),
        ("empty", "Python script {file} did not return any output"),
        ("number", "the output of Python script {file} must be a string, not 3"),
        ("raises", "Error running Python script {file}: KeyError: 'gone' (at {file}:10)"),
    ],
)
def test_a_python_loader_that_errs_makes_the_row_an_error(
    tmp_path: Path, name: str, message: str
) -> None:
    write(tmp_path, {"load.py": LOADER})
    found = error_of(tmp_path, "{{ x }}", {name: "file://load.py"})
    assert found == f"var {name!r} (file://load.py): " + message.format(file=tmp_path / "load.py")


@NEEDS_NODE
def test_a_javascript_var_loader_gets_the_provider_and_may_answer_any_value(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "load.cjs": "module.exports = (name, prompt, vars, provider) => name === 'obj'"
            " ? { output: { n: 1 } } : name === 'bad' ? { error: 'nope' }"
            " : name === 'none' ? {} : { output: `${name} by ${provider.id()} after ${vars.a}` };\n"
        },
    )
    rendered = make(
        tmp_path,
        "{{ b }} {{ obj.n }}",
        {"a": "x", "b": "file://load.cjs", "obj": "file://load.cjs"},
    )
    assert rendered.text == "b by echo after x 1"
    assert rendered.vars["obj"] == {"n": 1}
    bad = error_of(tmp_path, "{{ b }}", {"bad": "file://load.cjs"})
    assert bad == f"var 'bad' (file://load.cjs): Error running {tmp_path / 'load.cjs'}: nope"
    none = error_of(tmp_path, "{{ b }}", {"none": "file://load.cjs"})
    assert none.endswith("to return { output: string }")


def test_a_loader_outside_the_project_is_not_run(tmp_path: Path) -> None:
    folder = write(tmp_path / "project", {})
    write(tmp_path, {"load.py": "def get_var(*a):\n    raise SystemExit('ran')\n"})
    found = error_of(folder, "{{ v }}", {"v": "file://../load.py"})
    assert found.startswith("var 'v' (file://../load.py): ") and "outside" in found


# --- prompt functions ---------------------------------------------------------------------------

PROMPTS = """
import json

def text(context):
    return "About {{ topic }} for " + context["provider"]["id"] + " " + json.dumps(context["config"])

def chat(context):
    return {"prompt": [{"role": "user", "content": "{{ topic }}"}], "config": {"t": 0}}

def listed(context):
    return [1, context["vars"]["topic"]]

def number(context):
    return 4

async def later(context):
    return "later " + context["vars"]["topic"]

def keys(context):
    return ",".join(context["vars"])
"""


@pytest.mark.parametrize(
    ("ref", "text"),
    [
        ("p.py:text", 'About cats for echo {"style": "x"}'),
        ("p.py:chat", '[\n  {\n    "role": "user",\n    "content": "cats"\n  }\n]'),
        ("p.py:listed", '[\n  1,\n  "cats"\n]'),
        ("p.py:later", "later cats"),
    ],
)
def test_a_python_prompt_function_makes_the_template(tmp_path: Path, ref: str, text: str) -> None:
    write(tmp_path, {"p.py": PROMPTS})
    code = PromptCode(kind="function", ref=ref, config={"style": "x"})
    assert make(tmp_path, "ignored", {"topic": "cats"}, code).text == text


def test_a_prompt_function_that_answers_no_string_or_object_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, {"p.py": PROMPTS})
    code = PromptCode(kind="function", ref="p.py:number")
    assert error_of(tmp_path, "", {}, code=code) == (
        "Prompt function must return a string or object, got int"
    )


def test_a_python_prompt_file_without_a_function_is_run_and_what_it_prints_is_the_template(
    tmp_path: Path,
) -> None:
    script = "import json, sys\nc = json.loads(sys.argv[1])\nprint('Hi', c['vars']['n'])\n"
    write(tmp_path, {"legacy.py": script + "print('{{ n | upper }}')\n"})
    code = PromptCode(kind="function", ref="legacy.py")
    assert make(tmp_path, "", {"n": "ada"}, code).text == "Hi ada\nADA"


def test_code_sees_promptfoos_runtime_vars_and_the_result_keeps_none(tmp_path: Path) -> None:
    write(tmp_path, {"p.py": PROMPTS})
    runtime = runtime_vars(eval_id="eval-abc", test_idx=3, prompt_idx=1, repeat_index=0)
    code = PromptCode(kind="function", ref="p.py:keys")
    rendered = make(tmp_path, "", {"topic": "x"}, code, runtime=runtime)
    assert rendered.text == "topic,__evalId,__evalStepId,__repeatIndex"
    assert rendered.vars == {"topic": "x"}
    assert runtime["__evalStepId"] == "test-3-prompt-1-repeat-0"


@NEEDS_NODE
def test_a_javascript_prompt_function_gets_vars_provider_and_config(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "p.js": "module.exports = async ({ vars, provider, config }) =>"
            " `JS ${vars.topic} ${provider.id} [${provider.label}] ${JSON.stringify(config)}`;\n",
            "esm.mjs": "export default () => 'esm';\nexport const other = () => 'other';\n",
        },
    )
    code = PromptCode(kind="function", ref="p.js")
    assert make(tmp_path, "", {"topic": "owls"}, code).text == "JS owls echo [] {}"
    # as promptfoo, a named export beside a default one is looked for on the default
    other = PromptCode(kind="function", ref="esm.mjs:other")
    assert error_of(tmp_path, "", {}, code=other) == "TypeError: promptFunction is not a function"


# --- executable prompts -------------------------------------------------------------------------


def test_an_executable_prompt_runs_without_a_shell_and_gets_the_context_last(
    tmp_path: Path,
) -> None:
    script = (
        "import json, sys\n"
        "c = json.loads(sys.argv[-1])\n"
        "print(sys.argv[1:-1], c['vars']['n'], c['config'], c['provider'], __import__('os').getcwd())\n"
        "print('\\x1b[31m{{ n }}\\x1b[0m   ')\n"
    )
    write(tmp_path, {"gen.py": script})
    code = PromptCode(kind="exec", ref="python3 gen.py 'two words' $HOME", config={"k": 1})
    text = make(tmp_path, "", {"n": "ada"}, code).text
    provider = {"id": "echo", "label": ""}
    assert text == f"['two words', '$HOME'] ada {{'k': 1}} {provider} {tmp_path}\nada"


@pytest.mark.parametrize(
    ("script", "ref", "message"),
    [
        ("echo only errors >&2\n", "./err.sh", "only errors"),
        ("echo out; exit 3\n", "./err.sh", "Command failed: ./err.sh (exit 3)"),
        ("", "no-such-program-here", "prompt no-such-program-here: cannot run"),
    ],
)
def test_an_executable_prompt_that_fails_makes_the_row_an_error(
    tmp_path: Path, script: str, ref: str, message: str
) -> None:
    write(tmp_path, {"err.sh": "#!/bin/sh\n" + script})
    found = error_of(tmp_path, "", {}, code=PromptCode(kind="exec", ref=ref))
    assert found.startswith(message)


def test_an_executable_prompt_runs_in_its_base_path_for_its_timeout(tmp_path: Path) -> None:
    write(tmp_path, {"sub/pwd.sh": "#!/bin/sh\npwd\n", "slow.sh": "#!/bin/sh\nsleep 5\n"})
    code = PromptCode(kind="exec", ref="./pwd.sh", config={"basePath": "sub"})
    assert make(tmp_path, "", {}, code).text == str(tmp_path / "sub")
    slow = PromptCode(kind="exec", ref="./slow.sh", config={"timeout": 200})
    assert error_of(tmp_path, "", {}, code=slow) == "prompt ./slow.sh did not finish within 0.2 s"


# --- nunjucks filters ---------------------------------------------------------------------------

FILTERS = {
    "shout.js": "module.exports = (v, n) => String(v).toUpperCase() + '!'.repeat(n || 1);\n",
    "keys.js": "module.exports = (v, k) => (k && k.__keywords ? `${k.a}${v}${k.b}` : `(${v})`);\n",
    "pair.mjs": "export default (v) => ({ word: v, n: [v, v] });\n",
    "blank.js": "module.exports = () => undefined;\n",  # "none" is null to Nunjucks' lexer
    "boom.js": "module.exports = (v) => { throw new Error('cannot ' + v); };\n",
}


@NEEDS_NODE
def test_nunjucks_filters_run_their_javascript_on_every_template(tmp_path: Path) -> None:
    write(tmp_path, FILTERS)
    code = PromptCode(filters={name.split(".")[0]: name for name in FILTERS})
    template = (
        "{{ w | shout }} {{ w | shout(2) }} {{ w | keys }} {{ w | keys(a='<', b='>') }} "
        "{{ (w | pair).word }}{{ (w | pair).n | length }} [{{ w | blank }}] {{ gone | shout }} {{ v }}"
    )
    rendered = make(tmp_path, template, {"w": "hi", "v": "{{ w | shout(3) }}"}, code)
    assert rendered.text == "HI! HI!! (hi) <hi> hi2 [] UNDEFINED! HI!!!"
    with pytest.raises(RowError, match=r"^Template render error \(line 1\): .*Error: cannot hi"):
        make(tmp_path, "{{ w | boom }}", {"w": "hi"}, code)


def test_a_template_using_a_filter_that_is_not_defined_is_an_error(tmp_path: Path) -> None:
    assert "filter not found: shout" in error_of(tmp_path, "{{ 'a' | shout }}", {})


# --- TypeScript ---------------------------------------------------------------------------------


@NEEDS_NODE
@pytest.mark.usefixtures("path_without_promptfoo")
def test_typescript_without_tsx_says_how_to_get_it(tmp_path: Path) -> None:
    write(tmp_path, {"p.ts": "export default (): string => 'typed';\n"})
    found = error_of(tmp_path, "", {}, code=PromptCode(kind="function", ref="p.ts"))
    assert found.startswith("unsupported: the prompt function p.ts: ")
    assert "npm install tsx" in found and "promptfoo's own install on PATH" in found


@NEEDS_NODE
@pytest.mark.usefixtures("promptfoo_on_path")
def test_typescript_loads_through_the_tsx_of_the_promptfoo_on_path(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "p.ts": "type C = { vars: { w: string } };\nexport default (c: C): string => `ts {{ w }} ${c.vars.w}`;\n",
            "load.mts": "export default (name: string): { output: string } => ({ output: name });\n",
            "f.cts": "module.exports = (v: string): string => v + '?';\n",
        },
    )
    code = PromptCode(kind="function", ref="p.ts", filters={"q": "f.cts"})
    rendered = make(tmp_path, "", {"w": "{{ x | q }}", "x": "file://load.mts"}, code)
    assert rendered.text == "ts x? x?"
    assert json.dumps(rendered.vars) == '{"w": "{{ x | q }}", "x": "x"}'
