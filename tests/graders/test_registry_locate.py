"""The built-in graders and providers are found by name without importing the others.

Each registry's ``locate`` table says which module registers which name; these tests import
each module into a fresh registry (a process of its own) and compare what it registered with
the table, so a grader added to a module and not to the table fails here.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

REGISTERED = """
import importlib, json
from coalmine.graders import base as graders
from coalmine.providers import base as providers
found = {}
for reg in (graders.registry, providers.registry):
    reg._builtins_loaded = True  # nothing but the module imported here
    for module in reg._builtins:
        before = set(reg._items)
        importlib.import_module(module)
        found[module] = sorted(set(reg._items) - before)
print(json.dumps({"found": found, "locate": {**graders.registry._locate,
                                             **{"provider:" + k: v for k, v in
                                                providers.registry._locate.items()}}}))
"""


def _run(code: str) -> dict:  # type: ignore[type-arg]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_locate_tables_name_what_each_module_registers() -> None:
    seen = _run(REGISTERED)
    found, locate = seen["found"], seen["locate"]
    for module, names in found.items():
        for name in names:
            key = f"provider:{name}" if module.startswith("coalmine.providers.") else name
            assert locate.get(key) == module, f"{name} ({module}) is not in the locate table"
    registered = {n for names in found.values() for n in names}
    for name, module in locate.items():
        if name.startswith("provider:"):
            assert name[9:] in found[module], name
        elif not name.startswith("not-"):
            assert name in found[module], f"{name} is in the table but {module} does not make it"
        else:  # a not- form exists exactly when its grader is negatable
            assert name in registered or name[4:] in registered, name


def _loaded_after(*lookups: str) -> set[str]:
    """The grader and provider modules a fresh process holds after running ``lookups``."""
    code = "\n".join([
        "import sys",
        "from coalmine.graders.base import grader_configs",
        "from coalmine.providers.base import provider_settings",
        *lookups,
        "print('\\n'.join(m for m in sys.modules"
        " if m.startswith(('coalmine.graders.', 'coalmine.providers.'))))",
    ])  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(done.stdout.split())


def test_a_lookup_imports_only_its_module() -> None:
    loaded = _loaded_after(
        "assert grader_configs()['regex'] is not None",
        "assert grader_configs()['not-equals'] is not None",
        "assert provider_settings().get('openai') is not None",
    )
    assert {"coalmine.graders.overlap", "coalmine.providers.openai"} <= loaded
    for absent in ("coalmine.graders.rubric", "coalmine.graders.llm_judge",
                   "coalmine.providers.anthropic", "coalmine.providers.javascript"):  # fmt: skip
        assert absent not in loaded, absent


def test_a_name_no_table_holds_imports_every_built_in() -> None:
    loaded = _loaded_after("assert 'nope' not in grader_configs()")
    assert {"coalmine.graders.rubric", "coalmine.graders.llm_judge"} <= loaded


def test_the_name_maps_list_every_name_and_pickle_as_themselves() -> None:
    from coalmine.graders.base import grader_configs, registry

    configs = grader_configs()
    assert sorted(configs) == registry.names() and len(configs) == len(registry.names())
    again = pickle.loads(pickle.dumps(configs))
    assert again["equals"] is configs["equals"]
