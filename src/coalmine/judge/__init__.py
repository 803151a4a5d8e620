"""Judges you can trust: the policy that says whether a model judge may block a gate."""
