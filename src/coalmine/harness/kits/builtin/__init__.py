"""The bundled kits, one folder each; imported by the registry on its first lookup."""

from pathlib import Path

from coalmine.harness.kits.registry import BUILTIN_ORDER, register_kit_folder

for _kit_id in BUILTIN_ORDER:
    register_kit_folder(Path(__file__).parent / _kit_id)
