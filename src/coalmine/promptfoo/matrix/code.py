"""The code a promptfoo config runs while promptfoo reads it: its test generators.

``tests: file://gen.py:make`` (or ``.js``, ``.ts`` …) names a function whose answer is the
tests. Reading a config is otherwise pure (nothing here starts a process), so the code is run
by a :class:`ConfigCode` the caller passes to :func:`~coalmine.promptfoo.matrix.load_matrix`
(:mod:`coalmine.promptfoo.config_code` runs it in ``python3`` and Node.js, as promptfoo does).
Without one, a generator is an error that says so.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, Final, Protocol

__all__ = ["NO_CONFIG", "ConfigCode", "NoConfig"]


class NoConfig(enum.Enum):
    """The type of :data:`NO_CONFIG`."""

    NO_CONFIG = "no config"


NO_CONFIG: Final = NoConfig.NO_CONFIG
"""No ``config:`` given to a generator: promptfoo calls it with no argument."""


class ConfigCode(Protocol):
    """Runs a config's test generators."""

    def generate_tests(
        self, file: Path, *, function: str | None, config: Any, base_dir: Path
    ) -> Any:
        """What the generator in ``file`` answers (the tests, as promptfoo reads them).

        Args:
            file: A Python, JavaScript or TypeScript file (its extension says which).
            function: The function named after the file's ``:`` (``None``: promptfoo's
                default, ``generate_tests`` in Python, the module's export in JavaScript).
            config: The entry's ``config:``, or :data:`NO_CONFIG`.
            base_dir: The config's folder (the code runs there).

        Raises:
            ReadError: the code did not run, raised, or answered something that is not a list.
        """
        ...
