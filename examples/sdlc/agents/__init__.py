"""Offline stand-in agents of the SDLC example (replace them with your real agents)."""
