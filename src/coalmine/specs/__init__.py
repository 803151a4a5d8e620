"""Spec files: the validated models, and the loader that ties every error to file:line."""
