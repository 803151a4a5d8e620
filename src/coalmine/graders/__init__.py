"""Graders score one output against one case; each registers with ``@grader``."""
