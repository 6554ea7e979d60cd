"""Snippets that do not repeat themselves: neighbouring chunks share a line or two
(``chunking.overlap``), and both often rank, so an agent read the shared lines twice.

:func:`trim_hit` cuts from a hit the leading or trailing lines that a better-ranked hit
of the same file already *showed* in its snippet, and narrows its line range to match.
The hit itself stays (its new lines often hold the answer to the turn the better hit
matched); what the agent reads, and what the injection budget pays for, is new text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Set

from ._types import Hit

Shown = dict[tuple[str, str], set[int]]
"""(source, path) → line numbers shown whole in the snippets so far."""


def trim_hit(hit: Hit, shown: Shown) -> Hit:
    """``hit`` without its edge lines already in ``shown``.

    Only when its text has one line per line of its range (a cut long line does not);
    a hit every line of which was shown is returned unchanged.
    """
    seen: Set[int] = shown.get((hit.source, hit.path), set())
    lines = hit.snippet.split("\n")
    if not seen or len(lines) != hit.end_line - hit.start_line + 1:
        return hit
    start, end = hit.start_line, hit.end_line
    while start <= end and start in seen:
        start += 1
    while end >= start and end in seen:
        end -= 1
    if start > end or (start, end) == (hit.start_line, hit.end_line):
        return hit
    kept = lines[start - hit.start_line : end - hit.start_line + 1]
    return dataclasses.replace(hit, start_line=start, end_line=end, snippet="\n".join(kept))


def note_shown(hit: Hit, first: int, snippet: str, shown: Shown) -> None:
    """Record the lines of ``hit`` that ``snippet`` (starting at its line index ``first``)
    shows whole."""
    lines = hit.snippet.split("\n")
    if len(lines) != hit.end_line - hit.start_line + 1:
        return
    pieces = snippet.split("\n")
    numbers = shown.setdefault((hit.source, hit.path), set())
    for offset, piece in enumerate(pieces):
        index = first + offset
        if index < len(lines) and piece == lines[index]:
            numbers.add(hit.start_line + index)
