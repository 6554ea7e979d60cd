"""Structure-aware chunking for curated Markdown (``MEMORY.md`` and friends).

A curated file is a list of facts: "- Coffee: flat white, oat milk". Packed into one
400-token window, each fact's vector is diluted by thirty others and a question about
coffee finds nothing; packed per section it still shares a vector with its neighbours
(a question's cosine against its own bullet averaged 0.401, against the packed section
0.219: issue 22). Here the file is cut at its structure into *blocks* (a list item with
its continuation lines and nested items, or a paragraph; a heading joins the block after
it). Each list item is a chunk of its own, cited by its own lines, its text led by the
path of headings above it, as context for the vector and the keywords: one vector per
fact, as OpenClaw 2026.9 indexes ``MEMORY.md``. Prose blocks of one section are packed
while they fit the budget (a paragraph is rarely one fact); a block over the budget falls
back to :func:`~memory_router._workspace.chunking.chunk_markdown` within its own lines.
A structured file that is not curated (a dated note of bullets, :func:`is_curated`) has
its list items packed like prose: a day's bullets are read together, per section.

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
    return is_curated(path) or (setting == "auto" and is_structured(text))


def is_curated(path: str) -> bool:
    """``MEMORY.md``, ``memory.md`` or an undated file under ``memory/``: a list of facts
    kept up to date, chunked one item at a time. A dated note (``memory/YYYY-MM-DD.md``)
    is a day's log; its bullets are read together, so its sections stay whole."""
    return path in ("MEMORY.md", "memory.md") or (
        path.startswith("memory/") and dated_file(path) is None
    )


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


def heading_text(line: str) -> tuple[int, str]:
    """A heading line's level (its ``#`` count) and its text."""
    marks = len(line) - len(line.lstrip("#"))
    return marks, line[marks:].strip().rstrip("#").strip()


class _Path:
    """The headings above a line, outermost first (a new heading closes those at its
    level and below)."""

    def __init__(self) -> None:
        self.heads: list[tuple[int, str]] = []

    def enter(self, line: str) -> None:
        level, text = heading_text(line)
        self.heads = [(lv, t) for lv, t in self.heads if lv < level]
        if text:
            self.heads.append((level, text))

    def context(self) -> str:
        """The context line of an item below these headings (``""`` under none)."""
        return "# " + " › ".join(t for _, t in self.heads) if self.heads else ""


def _with_context(chunk: RawChunk, context: str) -> RawChunk:
    if not context:
        return chunk
    text = f"{context}\n{chunk.text}"
    return chunk._replace(text=text, hash=sha256_hex(text))


def _windows(lines: list[str], first: int, last: int, tokens: int, overlap: int) -> list[RawChunk]:
    """Lines ``first..last`` (0-based) as one chunk if they fit, else as windows."""
    body = "\n".join(lines[first : last + 1])
    if len(body) <= max(32, tokens * 4):
        return [RawChunk(first + 1, last + 1, body, sha256_hex(body))]
    return [
        piece._replace(start_line=piece.start_line + first, end_line=piece.end_line + first)
        for piece in chunk_markdown(body, tokens=tokens, overlap=overlap)
    ]


def _pack(lines: list[str], spans: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
    """Consecutive prose blocks packed while they fit (a heading starts a new chunk)."""
    packed: list[tuple[int, int]] = []
    for first, last in spans:
        if packed and not _HEADING.match(lines[first]):
            start = packed[-1][0]
            if len("\n".join(lines[start : last + 1])) <= budget:
                packed[-1] = (start, last)
                continue
        packed.append((first, last))
    return packed


def chunk_structured(
    text: str, *, tokens: int, overlap: int, per_item: bool = True
) -> list[RawChunk]:
    """Chunks by structure (see the module docstring); line numbers from 1.

    With ``per_item`` (curated files, :func:`is_curated`) a list item is a chunk of its
    own: its lines (continuation lines and nested items included), cited by those lines,
    its text led by the path of headings above it (``# Memory › Preferences``). Prose
    blocks of one section are packed while they fit, and so are list items without
    ``per_item`` (a dated note's section of bullets stays one chunk: "stand-ups are
    written in the channel" answers "how does the team share progress" only beside the
    rest of its section). A block over the budget is cut into windows within its own lines.
    """
    lines = text.split("\n")
    budget = max(32, tokens * 4)
    path = _Path()
    chunks: list[RawChunk] = []
    prose: list[tuple[int, int]] = []

    def flush() -> None:
        for first, last in _pack(lines, prose, budget):
            chunks.extend(_windows(lines, first, last, tokens, overlap))
        prose.clear()

    for first, last in blocks(lines):
        body = first
        while body <= last and (_HEADING.match(lines[body]) or not lines[body].strip()):
            if lines[body].strip():
                path.enter(lines[body])
            body += 1
        if per_item and body <= last and _ITEM.match(lines[body]):
            flush()
            context = path.context()
            chunks.extend(
                _with_context(c, context) for c in _windows(lines, body, last, tokens, overlap)
            )
        else:
            prose.append((first, last))
    flush()
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
