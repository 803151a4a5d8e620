"""The repo harness (seed 001): profile, template kits, init, drift, kits update and gates.

Profile the repository, render the kits that apply into it, see how it drifted, update it, run
the gates of the adopted kits. May import the engine and everything below it; no other feature.
"""
