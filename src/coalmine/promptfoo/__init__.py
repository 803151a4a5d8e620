"""promptfoo compatibility (issue 9): read a promptfoo config, score as promptfoo scores.

Pure code, no network and no subprocess: the runner calls agents and Node.js.
"""
