"""Tier-0 helpers: identifiers, the clock, hashing and the plugin registry (stdlib only)."""
