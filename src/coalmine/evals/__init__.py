"""Eval suites (seed 001's runner and result contract): JSONL cases, repeats, a gate per suite.

Planned, run, graded and summarised per suite, with the door for suites in another tool's rules
(:mod:`coalmine.evals.compat`). May import the engine and everything below it, and
:mod:`coalmine.lessons` (a declared edge).
"""
