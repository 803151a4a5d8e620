r"""Replay a promptfoo config's JavaScript through coalmine's Node runtime; trim promptfoo output.

Both sides of the comparison in ``test_node.py``: ``trim_promptfoo`` keeps, from promptfoo's
``-o out.json``, what the JavaScript decides (row error, each assertion's pass, score and
reason); ``replay`` computes the same from the config with ``NodeRuntime``, doing what
promptfoo's evaluator does around it for the ``echo`` provider (the output is the prompt).

To capture a fixture again (promptfoo 0.121.20 installed in ``$PF``, this repository in
``$REPO``, the config's name in ``$C``)::

    cd $PF && PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 npx promptfoo eval \
      -c $REPO/tests/promptfoo/fixtures/node/$C.yaml -o /tmp/out.json --no-cache --no-table
    cd $REPO && .venv/bin/python -c "import json, tests.promptfoo.node_replay as r; \
      print(json.dumps(r.trim_promptfoo(json.load(open('/tmp/out.json'))), indent=1,
      ensure_ascii=False))" > tests/promptfoo/fixtures/node/$C.expected.json
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from coalmine.promptfoo.node import JsError, NodeRuntime, assertion_context, transform_context

STACK = "\nStack Trace:"


def head(text: str) -> str:
    """A reason or row error without its stack trace (which names the runtime's own files)."""
    text = text.split(STACK)[0]
    return re.split(r"\n    at ", text)[0]


def trim_promptfoo(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of promptfoo's output JSON, reduced to what the JavaScript decided."""
    rows = []
    for result in sorted(raw["results"]["results"], key=lambda r: r["testIdx"]):
        components = (result.get("gradingResult") or {}).get("componentResults") or []
        rows.append(
            {
                "testIdx": result["testIdx"],
                "error": head(result["error"]) if result.get("failureReason") == 2 else None,
                "assertions": [
                    {
                        "type": c["assertion"]["type"],
                        "pass": c["pass"],
                        "score": c["score"],
                        "reason": head(c["reason"]),
                    }
                    for c in components
                ],
            }
        )
    return rows


def render(template: str, variables: dict[str, Any]) -> str:
    """The fixtures' templates only use ``{{name}}``."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(variables[m.group(1)]), template)


async def replay(js: NodeRuntime, config_path: Path) -> list[dict[str, Any]]:
    """What promptfoo's evaluator computes for each test of the config, through ``js``."""
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    base_dir = config_path.parent
    template = config["prompts"][0]
    provider = config["providers"][0]
    provider = provider if isinstance(provider, dict) else {"id": provider}
    rows = []
    for index, test in enumerate(config["tests"]):
        variables = test.get("vars", {})
        prompt = render(template, variables)
        prompt_object = {"raw": template, "label": template}
        assertions: list[dict[str, Any]] = []
        error = None
        try:
            output: Any = prompt
            if provider.get("transform"):
                context = transform_context(variables=variables, prompt=prompt_object)
                output = await js.transform(
                    provider["transform"], output=output, context=context, base_dir=base_dir
                )
            provider_transformed = output
            if test.get("options", {}).get("transform"):
                context = transform_context(variables=variables, prompt=prompt_object, metadata={})
                output = await js.transform(
                    test["options"]["transform"], output=output, context=context, base_dir=base_dir
                )
            response = {
                "output": output,
                "raw": prompt,
                "cost": 0,
                "cached": False,
                "metadata": {},
                "providerTransformedOutput": provider_transformed,
            }
            for assertion in test["assert"]:
                value = output
                if assertion.get("transform"):
                    context = transform_context(
                        variables=variables, prompt={"label": prompt}, metadata={}
                    )
                    value = await js.transform(
                        assertion["transform"], output=value, context=context, base_dir=base_dir
                    )
                if assertion["type"] == "contains":
                    passed = assertion["value"] in value
                    assertions.append({"type": "contains", "pass": passed, "score": float(passed)})
                    continue
                code = assertion.get("value")
                if isinstance(code, str) and not code.startswith("file://"):
                    code = render(code, variables)
                context = assertion_context(
                    prompt=prompt,
                    variables=variables,
                    test=test,
                    provider={"id": provider["id"], "label": provider.get("label", "")},
                    provider_response=response,
                    config=assertion.get("config"),
                )
                verdict = await js.evaluate_assertion(
                    code,
                    output=value,
                    context=context,
                    base_dir=base_dir,
                    inverse=assertion["type"].startswith("not-"),
                    threshold=assertion.get("threshold"),
                )
                assertions.append(
                    {
                        "type": assertion["type"],
                        "pass": verdict.passed,
                        "score": verdict.score,
                        "reason": head(verdict.reason),
                    }
                )
        except JsError as exc:
            error, assertions = head(str(exc)), []
        rows.append({"testIdx": index, "error": error, "assertions": assertions})
    return rows
