"""Pipeline evals (seed 003): staged git diffs, isolated roles, leakage checks, the review run.

May import the engine and everything below it; no other feature.
"""
