"""Structure-aware chunking for curated Markdown (``MEMORY.md`` and friends).

A curated file is a list of facts: "- Coffee: flat white, oat milk". Packed into one
400-token window, each fact's vector is diluted by thirty others and a question about
coffee finds nothing. Here the file is cut at its structure: *blocks* (a list item with
its continuation lines and nested items, or a paragraph; a heading joins the block after
it) are packed into one chunk per section while they fit the budget, so a fact shares its
vector only with its section's neighbours and keeps the heading's context; a section
over the budget is cut between blocks, and a block over the budget falls back to
:func:`~memory_router._workspace.chunking.chunk_markdown` within its own lines.

``structure = "openclaw"`` reproduces OpenClaw 2026.9 instead (its chunking version 5),
so an index it built can be taken over without embedding anything again: ``MEMORY.md``
and ``USER.md`` are cut into *entries* — a new one at every line that starts with ``- ``
or is a heading, and at the first line — each chunked on its own with
:func:`~memory_router._workspace.chunking.chunk_markdown` (no overlap across entries);
every other file is chunked whole.
"""

from __future__ import annotations

import re

from .chunking import RawChunk, chunk_markdown, sha256_hex
from .discovery import dated_file

_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+\S")
_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^\s*(```|~~~)")


def is_structured(text: str) -> bool:
    """Whether at least half of the non-blank lines are headings or list items."""
    lines = [line for line in text.split("\n") if line.strip()]
    marked = sum(1 for line in lines if _ITEM.match(line) or _HEADING.match(line))
    return len(lines) >= 2 and marked * 2 >= len(lines)


OPENCLAW_ENTRY_FILES = ("MEMORY.md", "USER.md")
_ENTRY = re.compile(r"^(?:- |#{1,6}(?:\s|$))")


def by_structure(setting: str, path: str, text: str) -> bool:
    """Whether ``path`` is chunked by its structure under ``chunking.structure``.

    ``auto``: curated files (``MEMORY.md``, ``memory.md``, undated files under ``memory/``)
    and any file that :func:`is_structured`; ``curated``: curated files only; ``all``;
    ``off``; ``openclaw``: only ``MEMORY.md`` and ``USER.md``, by :func:`chunk_entries`.
    """
    if setting == "openclaw":
        return path in OPENCLAW_ENTRY_FILES
    if setting in ("all", "off"):
        return setting == "all"
    curated = path in ("MEMORY.md", "memory.md") or (
        path.startswith("memory/") and dated_file(path) is None
    )
    return curated or (setting == "auto" and is_structured(text))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def blocks(lines: list[str]) -> list[tuple[int, int]]:
    """``(first, last)`` 0-based line indexes of each block, headings joined forward."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    heading: int | None = None
    item_indent = -1  # indent of the open list's items; -1 outside a list
    fenced = blank = False

    def close(end: int) -> None:
        nonlocal start
        if start is not None:
            spans.append((start, end))
        start = None

    for index, line in enumerate(lines):
        if fenced or _FENCE.match(line):
            fenced = fenced != bool(_FENCE.match(line))
        elif not line.strip():
            blank = True
            if item_indent < 0:
                close(index - 1)
            continue
        elif _HEADING.match(line):
            close(index - 1)
            item_indent, blank = -1, False
            heading = index if heading is None else heading
            continue
        else:
            indent = _indent(line)
            if _ITEM.match(line) and (item_indent < 0 or indent <= item_indent):
                close(index - 1)
                item_indent = indent
            elif not _ITEM.match(line) and item_indent >= 0 and blank and indent <= item_indent:
                close(index - 1)
                item_indent = -1
        blank = False
        if start is None:
            start, heading = (index if heading is None else heading), None
    close(len(lines) - 1)
    if heading is not None:
        spans.append((heading, heading))
    return [(first, _last_content(lines, first, last)) for first, last in spans]


def _last_content(lines: list[str], first: int, last: int) -> int:
    while last > first and not lines[last].strip():
        last -= 1
    return last


def sections(lines: list[str], spans: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
    """Consecutive blocks of one section (up to the next heading) packed while they fit."""
    packed: list[tuple[int, int]] = []
    for first, last in spans:
        if packed and not _HEADING.match(lines[first]):
            start = packed[-1][0]
            if len("\n".join(lines[start : last + 1])) <= budget:
                packed[-1] = (start, last)
                continue
        packed.append((first, last))
    return packed


def chunk_structured(text: str, *, tokens: int, overlap: int) -> list[RawChunk]:
    """One chunk per section, or per block where a section exceeds the budget (see the
    module docstring); line numbers from 1."""
    lines = text.split("\n")
    budget = max(32, tokens * 4)
    chunks: list[RawChunk] = []
    for first, last in sections(lines, blocks(lines), budget):
        body = "\n".join(lines[first : last + 1])
        if len(body) <= budget:
            chunks.append(RawChunk(first + 1, last + 1, body, sha256_hex(body)))
            continue
        for piece in chunk_markdown(body, tokens=tokens, overlap=overlap):
            chunks.append(
                piece._replace(start_line=piece.start_line + first, end_line=piece.end_line + first)
            )
    return chunks or [RawChunk(1, 1, text, sha256_hex(text))]


def chunk_entries(text: str, *, tokens: int, overlap: int) -> list[RawChunk]:
    """OpenClaw's per-entry chunks (see the module docstring); line numbers from 1."""
    lines = text.split("\n")
    starts = [0, *(i for i in range(1, len(lines)) if _ENTRY.match(lines[i]))]
    chunks: list[RawChunk] = []
    for first, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        body = "\n".join(lines[first:end])
        for piece in chunk_markdown(body, tokens=tokens, overlap=overlap):
            chunks.append(
                piece._replace(start_line=piece.start_line + first, end_line=piece.end_line + first)
            )
    return chunks
