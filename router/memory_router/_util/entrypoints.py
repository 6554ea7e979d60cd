"""Entry points of one group, read straight from the installed distributions' metadata.

``importlib.metadata`` (and pluggy's loader on top of it) costs more at start-up than all
the plugins it finds: its import alone pulls in ``email``, ``zipfile``, ``csv``… This
reads ``entry_points.txt`` of each ``*.dist-info`` / ``*.egg-info`` folder on
``sys.path``, in path order; the first distribution declaring a name wins, as in
``importlib.metadata.entry_points``. A distribution's name and version are read only when
asked (:func:`distribution`), for ``memory-router plugins``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """``name = value`` of a group, and the metadata folder that declared it."""

    name: str
    value: str
    path: str

    def load(self) -> Any:
        """Import ``module`` of ``module:attr.sub [extra]`` and return the object it names."""
        module_name, _, attrs = self.value.split("[")[0].partition(":")
        target: Any = importlib.import_module(module_name.strip())
        for attr in filter(None, attrs.strip().split(".")):
            target = getattr(target, attr)
        return target


def entry_points(group: str, path: Sequence[str] | None = None) -> list[EntryPoint]:
    """The entry points of ``group`` over ``path`` (default ``sys.path``), first name wins."""
    found: dict[str, EntryPoint] = {}
    for folder in _metadata_folders(sys.path if path is None else path):
        try:
            with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as file:
                text = file.read()
        except (OSError, UnicodeDecodeError):
            continue
        for name, value in _section(text, group):
            found.setdefault(name, EntryPoint(name, value, folder))
    return list(found.values())


def distribution(entry: EntryPoint) -> tuple[str, str] | None:
    """``(name, version)`` of the distribution that declared ``entry``."""
    from importlib.metadata import Distribution

    meta = Distribution.at(entry.path).metadata
    if meta is None or not meta["Name"]:
        return None
    return str(meta["Name"]), str(meta["Version"])


def _metadata_folders(path: Sequence[str]) -> Iterator[str]:
    for entry in path:
        try:
            with os.scandir(entry or ".") as items:
                names = sorted(item.name for item in items if item.name.endswith(_SUFFIXES))
        except OSError:  # missing, a file, a zip archive: no folders to read
            continue
        yield from (os.path.join(entry or ".", name) for name in names)


def _section(text: str, group: str) -> Iterator[tuple[str, str]]:
    """``(name, value)`` pairs of ``[group]`` in an ``entry_points.txt`` (INI) text."""
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
        elif current == group and "=" in line:
            name, _, value = line.partition("=")
            yield name.strip(), value.strip()
