"""``python -m coalmine``."""

from coalmine.cli.main import run

run()
