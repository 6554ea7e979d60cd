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

from .._types import Hit

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

    ``parts`` are ``(hit, snippet, shows)`` triples as shaped, best first: the first gives
    the passage's score, explanation and rank; the range covers all parts and the snippets
    are joined in the order of the lines they show (``shows``, see :func:`shown_span`).
    ``offset`` is how many characters of snippets came before its first part, in rank
    order, before any merging, and ``end`` where its last part's snippet ended.
    """

    parts: list[tuple[Hit, str, tuple[int, int]]]
    offset: int = 0
    end: int = 0

    def chars(self, more: list[tuple[Hit, str, tuple[int, int]]] | None = None) -> int:
        """The length of its snippet as shown (parts joined, with :data:`GAP` lines), with
        ``more`` parts if given."""
        parts = sorted(self.parts + (more or []), key=lambda part: part[2])
        return len(_joined([(h, shown) for h, shown, _ in parts]))

    def span(self) -> tuple[int, int]:
        """The first and last line of the passage's range."""
        return (
            min(h.start_line for h, _, _ in self.parts),
            max(h.end_line for h, _, _ in self.parts),
        )

    def absorbs(self, other: Passage) -> bool:
        """Whether ``other`` (ranked below) touches this passage now and may join it:
        same file, ranges that overlap or adjoin, no line shown by both, and no text moved
        into the first ``reading`` characters (checked by :func:`gather`)."""
        if not _one_text(self.parts[0][0], other.parts[0][0]):
            return False
        if any(_overlap(shows, mine) for _, _, shows in other.parts for _, _, mine in self.parts):
            return False
        return _adjoin(self.span(), other.span())

    def touches(self, hit: Hit, shows: tuple[int, int]) -> bool:
        """Whether ``hit`` is in the same file, its lines overlap or adjoin the passage's,
        and the lines it shows (``shows``) are none the passage shows: joining never shows
        a line twice (hits of journal entries are never merged: each is its own entry)."""
        if not _one_text(self.parts[0][0], hit):
            return False
        if any(_overlap(shows, mine) for _, _, mine in self.parts):
            return False
        return _adjoin(self.span(), (hit.start_line, hit.end_line))

    def hit(self) -> Hit:
        head, snippet, _ = self.parts[0]
        if len(self.parts) == 1:
            return dataclasses.replace(head, snippet=snippet)
        ordered = sorted(self.parts, key=lambda part: part[2])
        explain = head.explain
        if explain is not None:
            ranges = tuple(f"{h.start_line}-{h.end_line}" for h, _, _ in self.parts[1:])
            explain = dataclasses.replace(explain, merged=ranges)
        start_line, end_line = self.span()
        return dataclasses.replace(
            head,
            start_line=start_line,
            end_line=end_line,
            snippet=_joined([(h, shown) for h, shown, _ in ordered]),
            explain=explain,
        )


def _one_text(a: Hit, b: Hit) -> bool:
    """Whether two hits are lines of one file (a journal entry is always its own)."""
    return a.entry is None and b.entry is None and (a.source, a.path) == (b.source, b.path)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two line ranges share a line."""
    return max(a[0], b[0]) <= min(a[1], b[1])


def _adjoin(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two line ranges overlap or one starts on the line after the other ends."""
    return b[0] <= a[1] + 1 and b[1] >= a[0] - 1


def shown_span(hit: Hit, first: int, snippet: str) -> tuple[int, int]:
    """The first and last line numbers ``snippet`` (from line index ``first`` of the hit's
    text) shows whole (``last < first`` when none); the hit's whole range when its text
    does not have one line per line of it (a cut long line: which lines show is unknown).

    A last line cut by the snippet window does not count: the hit below that shows it
    whole may join, after a :data:`GAP` line."""
    lines = hit.snippet.split("\n")
    if len(lines) != hit.end_line - hit.start_line + 1:
        return hit.start_line, hit.end_line
    pieces = snippet.split("\n")
    last = first + len(pieces) - 1
    cut = last >= len(lines) or pieces[-1] != lines[last]
    low = hit.start_line + first
    return low, low + len(pieces) - 1 - cut


GAP = "…"
"""The line between two parts of a passage when text between them is not shown."""


def _joined(parts: list[tuple[Hit, str]]) -> str:
    """Snippets in line order; a :data:`GAP` line where one ends before its hit's text does
    or the next starts after its hit's first line (so no left-out line looks shown). A
    heading line that the part before also opened with (the heading path that leads each
    bullet of a curated file) is shown once."""
    out = [parts[0][1]]
    for (before, shown_before), (after, shown_after) in itertools.pairwise(parts):
        cut = not before.snippet.endswith(shown_before)
        skipped = not after.snippet.startswith(shown_after)
        if cut or skipped:
            out.append(GAP)
        head = shown_before.split("\n", 1)[0]
        if head.startswith("#") and shown_after.startswith(head + "\n") and not cut:
            shown_after = shown_after[len(head) + 1 :]
        out.append(shown_after)
    return "\n".join(out)


def gather(
    passages: list[Passage], hit: Hit, first: int, snippet: str, *, offset: int, reading: int
) -> None:
    """Add a shaped hit, whose snippet (from line index ``first`` of its text) starts
    ``offset`` characters into the answer.

    It joins the first passage it touches unless that would move text into the first
    ``reading`` characters: two hits inside them are grouped, two past them merged, a hit
    past them never pulled up into them. So what an agent reads first is exactly the text
    it read without merging. ``reading = 0`` never merges. A hit that bridges two
    passages (the chunk between two that ranked) makes them one, under the same rule.
    Past the budget a passage grows only while its snippet stays within ``reading``
    characters (inside it, the budget bounds it already): otherwise a file of many small
    matching passages became one hit of every candidate left (a hit of its own starts).
    """
    shows = shown_span(hit, first, snippet)
    touched = (p for p in passages if p.touches(hit, shows))
    target = next(touched, None) if reading > 0 else None
    end = offset + len(snippet)
    if target is None or not _may_join(target, end, [(hit, snippet, shows)], reading):
        passages.append(Passage([(hit, snippet, shows)], offset, end))
        return
    target.parts.append((hit, snippet, shows))
    target.end = max(target.end, end)
    for other in passages[passages.index(target) + 1 :]:
        if _may_join(target, other.end, other.parts, reading) and target.absorbs(other):
            target.parts.extend(other.parts)
            target.end = max(target.end, other.end)
            passages.remove(other)


def _may_join(
    target: Passage, end: int, parts: list[tuple[Hit, str, tuple[int, int]]], reading: int
) -> bool:
    """Whether ``parts``, whose text ends ``end`` characters into the answer, may join
    ``target``: both inside the first ``reading`` characters, or both past them and the
    passage's snippet then at most ``reading`` characters long."""
    if end <= reading:
        return True
    return target.offset >= reading and target.chars(parts) <= reading
