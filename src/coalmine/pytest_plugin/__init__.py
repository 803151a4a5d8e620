"""``pytest --coalmine``: a project's canaries and eval cases as pytest items.

:mod:`coalmine.pytest_plugin.plugin` holds the hooks and the items (the entry point pytest
loads); :mod:`coalmine.pytest_plugin.session` the one run behind a session, shared by every
pytest-xdist worker.
"""
