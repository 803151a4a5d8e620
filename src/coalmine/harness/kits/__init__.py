"""Template kits (issue 8): declared data and templates, rendered into a repository's harness.

:mod:`~coalmine.harness.kits.model` reads a kit folder,
:mod:`~coalmine.harness.kits.registry` keeps the kits (six bundled, plugins may add more),
:mod:`~coalmine.harness.kits.render` renders their templates, and
:mod:`~coalmine.harness.kits.manifest` is ``harness/manifest.json``, the record of what a
repository adopted. Planning, applying and drift live in :mod:`coalmine.harness.init`.
"""

from coalmine.harness.kits.manifest import (
    BASE_DIR,
    AdoptedKit,
    Manifest,
    OwnedFile,
    base_copy,
    dump_manifest,
    load_manifest,
    manifest_json_schema,
)
from coalmine.harness.kits.model import (
    MANIFEST_PATH,
    EvolutionRule,
    Kit,
    KitCommand,
    KitSpec,
    load_kit,
)
from coalmine.harness.kits.registry import all_kits, applicable, get_kit, register_kit_folder
from coalmine.harness.kits.render import RenderedFile, render_kit

__all__ = [
    "BASE_DIR",
    "MANIFEST_PATH",
    "AdoptedKit",
    "EvolutionRule",
    "Kit",
    "KitCommand",
    "KitSpec",
    "Manifest",
    "OwnedFile",
    "RenderedFile",
    "all_kits",
    "applicable",
    "base_copy",
    "dump_manifest",
    "get_kit",
    "load_kit",
    "load_manifest",
    "manifest_json_schema",
    "register_kit_folder",
    "render_kit",
]
