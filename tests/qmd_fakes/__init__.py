"""Fake QMD programs and helpers for the QMD backend tests (``tests/`` is on sys.path)."""
