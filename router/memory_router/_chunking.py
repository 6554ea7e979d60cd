"""Placeholder: being implemented."""
CHUNKER_VERSION = 1
