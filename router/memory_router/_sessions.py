"""Placeholder: being implemented."""
