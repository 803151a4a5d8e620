"""Canaries (seed 000): known prompts for the phase agents, run, graded, gated and stored.

With their result file, their dry-run estimate and the lessons a canary run keeps and recalls.
May import the engine and everything below it, and :mod:`coalmine.lessons` (a declared edge).
"""
