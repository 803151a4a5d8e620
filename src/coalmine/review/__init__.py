"""Pipeline evals (seed 003): staged git diffs, isolated roles, leakage checks."""
