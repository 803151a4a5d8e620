"""Loading ``module:attr`` from a project folder: a namespace folder shadowed by an installed one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from coalmine._util.target import TargetError, load_target


def test_a_folder_without_init_shadowed_by_an_installed_package_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"  # an installed regular package named like the project's folder
    (site / "shadowpkg").mkdir(parents=True)
    (site / "shadowpkg" / "__init__.py").write_text("")
    project = tmp_path / "project"
    (project / "shadowpkg").mkdir(parents=True)
    (project / "shadowpkg" / "impl.py").write_text("def run(prompt, context):\n    return 1\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "shadowpkg", raising=False)
    with pytest.raises(TargetError, match=r"shadowpkg/ in .* has no __init__.py, so the installed"):
        load_target("shadowpkg.impl:run", project)
    (project / "shadowpkg" / "__init__.py").write_text("")
    sys.path.remove(str(project))
    monkeypatch.delitem(sys.modules, "shadowpkg", raising=False)
    assert load_target("shadowpkg.impl:run", project)("x", {}) == 1
    for name in [m for m in sys.modules if m.startswith("shadowpkg")]:
        monkeypatch.delitem(sys.modules, name)
