"""Judges you can trust: labels, agreement statistics, calibration, labelling, the red-team pack.

May import the engine (which holds the policy every run applies) and everything below it, and
:mod:`coalmine.lessons` and :mod:`coalmine.evals` (declared edges).
"""
