"""The engine every run shares: agent calls, grading, the executor, events, the run record, costs.

It calls an agent with limits, retries, cache and secrets scrubbed, grades and decides, plans
work into a bounded executor, emits events, records the run in the store and prices it. It may
import the components (providers, graders, reports, store), the contracts and the helpers, and
knows no feature (the import-linter layers contract says so).
"""
