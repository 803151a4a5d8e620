"""Lessons (memory): what coalmine keeps by itself and recalls before a run, its shared words.

May import the engine and everything below it; the features that keep lessons import it.
"""
