"""Snippets that do not repeat themselves: neighbouring chunks share a line or two
(``chunking.overlap``), and both often rank, so an agent read the shared lines twice.

:func:`trim_hit` cuts from a hit the leading or trailing lines that a better-ranked hit
of the same file already *showed* in its snippet, and narrows its line range to match.
The hit itself stays (its new lines often hold the answer to the turn the better hit
matched); what the agent reads, and what the injection budget pays for, is new text.

:class:`Passage` and :func:`gather` then show hits of one file whose ranges touch as one
hit (``query.merge_reading_chars``): what an agent reads first is the same text, and the
places merging frees go to the next distinct hits.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Set
from dataclasses import dataclass

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


@dataclass(slots=True)
class Passage:
    """Hits of one file whose line ranges touch, shown as one hit.

    ``parts`` are ``(hit, snippet)`` pairs as shaped, best first: the first gives the
    passage's score, explanation and rank; the range covers all parts and the snippets are
    joined in line order. ``offset`` is how many characters of snippets came before its
    first part, in rank order, before any merging.
    """

    parts: list[tuple[Hit, str]]
    offset: int = 0

    def touches(self, hit: Hit) -> bool:
        """Whether ``hit`` is in the same file and its lines overlap or adjoin the passage's
        (hits of journal entries are never merged: each is its own entry)."""
        head = self.parts[0][0]
        if hit.entry is not None or head.entry is not None:
            return False
        if (hit.source, hit.path) != (head.source, head.path):
            return False
        low = min(h.start_line for h, _ in self.parts)
        high = max(h.end_line for h, _ in self.parts)
        return hit.start_line <= high + 1 and hit.end_line >= low - 1

    def hit(self) -> Hit:
        head, snippet = self.parts[0]
        if len(self.parts) == 1:
            return dataclasses.replace(head, snippet=snippet)
        ordered = sorted(self.parts, key=lambda part: part[0].start_line)
        explain = head.explain
        if explain is not None:
            ranges = tuple(f"{h.start_line}-{h.end_line}" for h, _ in self.parts[1:])
            explain = dataclasses.replace(explain, merged=ranges)
        return dataclasses.replace(
            head,
            start_line=min(h.start_line for h, _ in self.parts),
            end_line=max(h.end_line for h, _ in self.parts),
            snippet=_joined(ordered),
            explain=explain,
        )


GAP = "…"
"""The line between two parts of a passage when text between them is not shown."""


def _joined(parts: list[tuple[Hit, str]]) -> str:
    """Snippets in line order; a :data:`GAP` line where one ends before its hit's text does
    or the next starts after its hit's first line (so no left-out line looks shown)."""
    out = [parts[0][1]]
    for (before, shown_before), (after, shown_after) in itertools.pairwise(parts):
        cut = not before.snippet.endswith(shown_before)
        skipped = not after.snippet.startswith(shown_after)
        if cut or skipped:
            out.append(GAP)
        out.append(shown_after)
    return "\n".join(out)


def gather(passages: list[Passage], hit: Hit, snippet: str, *, offset: int, reading: int) -> None:
    """Add a shaped hit, whose snippet starts ``offset`` characters into the answer.

    It joins the first passage it touches unless that would move text into the first
    ``reading`` characters: two hits inside them are grouped, two past them merged, a hit
    past them never pulled up into them. So what an agent reads first is exactly the text
    it read without merging. ``reading = 0`` never merges.
    """
    target = next((p for p in passages if p.touches(hit)), None) if reading > 0 else None
    inside = offset + len(snippet) <= reading
    if target is not None and (inside or target.offset >= reading):
        target.parts.append((hit, snippet))
    else:
        passages.append(Passage([(hit, snippet)], offset))
