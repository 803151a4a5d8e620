"""Where a run's work runs: in this process, in worker processes, or on a Ray cluster.

A backend knows nothing of evals or judges. The driver hands it an iterator of items; it
spreads them over *shards* (an in-process engine, a worker process, a Ray actor), each of which
opens an engine named by an importable factory (``module:function``) from a picklable spec and
runs items with its share of the concurrency; the results come back to the driver, which alone
writes the store. A shard that dies has the items it held run again by the others
(:mod:`coalmine.backends.dispatch`); nothing is counted twice because only what came back counts.
"""
