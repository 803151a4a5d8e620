"""Unit checks for the agent (named *_checks.py; run by path from CI)."""
