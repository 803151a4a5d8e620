"""The runner: the one place that wires config, specs, providers, graders and reports."""
