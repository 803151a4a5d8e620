"""Providers call agents exactly as production does; each registers with ``@provider``."""
