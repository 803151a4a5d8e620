"""``coalmine view``: the run store as a local web app (runs, a run, a case, compare, judges)."""
