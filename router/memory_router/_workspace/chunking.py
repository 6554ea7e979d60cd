"""Line-tracked chunking of Markdown, OpenClaw's ``chunkMarkdown`` (reference §1.3).

Sizes are *estimated tokens* of 4 characters each, measured by :func:`weighted_length`:
UTF-16 length, except that CJK-family characters count 4 (one token each). A chunk holds
whole lines where it can; a line longer than the budget is cut into *segments* that keep the
line's number. Consecutive chunks overlap by at most ``overlap`` tokens of trailing segments.

Contract of :func:`chunk_markdown` (what the tests pin):

* lines are the text split on ``"\\n"`` only (a ``"\\r"`` stays in its line), numbered from 1;
* every segment lands in at least one chunk, in order; joining a chunk's segments with
  ``"\\n"`` gives its text, so a chunk made of whole lines is exactly those lines;
* a chunk costs at most ``max(32, tokens * 4)`` (each segment costs its weighted length + 1),
  except that the overlap carried from the previous chunk plus one incoming segment may
  exceed it;
* a line longer than the chunk is never repeated whole: of its pieces, only as much of
  the end as the overlap has room for is carried (OpenClaw's original carried a whole
  piece, so consecutive chunks of long lines shared ~1,600 characters, not 320);
* whitespace-only chunks are returned too: callers drop them.

Deviation from the TypeScript original: Python strings are code points, so a cut never
splits a surrogate pair (the original may split one at the coarse ``maxChars`` cut).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

CHUNKER_VERSION = 4
"""Bump whenever :func:`chunk_markdown`, :func:`split_oversized` or the structure-aware
chunker's output changes (3: one chunk per list item, led by its heading path; 4: per
item in curated files only, a dated note's sections whole again)."""

CHARS_PER_TOKEN = 4

# CJK radicals … unified ideographs, Yi, Hangul syllables, CJK compatibility, ext-B+.
_CJK = re.compile("[\u2e80-\u9fff\ua000-\ua4ff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]")
_CJK_ASTRAL = re.compile("[\U00020000-\U0002fa1f]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


class RawChunk(NamedTuple):
    """A chunk before it gets an id: 1-based inclusive lines, its text, sha256 of the text."""

    start_line: int
    end_line: int
    text: str
    hash: str


class _Segment(NamedTuple):
    text: str
    line: int
    cost: int
    partial: bool = False  # a piece of a line longer than the chunk


def sha256_hex(text: str) -> str:
    """sha256 hex digest of ``text`` as UTF-8 (lone surrogates are encoded as-is)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``String.length`` reports it."""
    if text.isascii():
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


def weighted_length(text: str) -> int:
    """UTF-16 length with every CJK-family character counting 4.

    A CJK extension B+ character (two UTF-16 units) also counts 4, not 5: it is one code
    point. Other astral characters (emoji) count their UTF-16 length, 2.
    """
    if text.isascii():
        return len(text)
    cjk = len(_CJK.findall(text))
    if not cjk:
        return utf16_length(text)
    cjk_astral = len(_CJK_ASTRAL.findall(text))
    return utf16_length(text) - cjk_astral + cjk * (CHARS_PER_TOKEN - 1)


def _utf16_pieces(text: str, step: int) -> Iterator[str]:
    """Cut ``text`` into pieces of ``step`` UTF-16 units; a piece may take one more unit
    rather than split a surrogate pair."""
    if len(text) == utf16_length(text):
        for start in range(0, len(text), step):
            yield text[start : start + step]
        return
    start = units = 0
    for index, char in enumerate(text):
        if units >= step:
            yield text[start:index]
            start, units = index, 0
        units += 2 if ord(char) > 0xFFFF else 1
    if start < len(text):
        yield text[start:]


def _segments(line: str, line_no: int, tokens: int, max_chars: int) -> Iterator[_Segment]:
    """One line's segments (§1.3 step 3): an empty line is one empty segment."""
    if not line:
        yield _Segment("", line_no, 1)
        return
    cut = weighted_length(line) > max_chars
    for coarse in _utf16_pieces(line, max_chars):
        weight = weighted_length(coarse)
        if weight <= max_chars:
            yield _Segment(coarse, line_no, weight + 1, cut)
            continue
        for fine in _utf16_pieces(coarse, max(1, tokens)):
            yield _Segment(fine, line_no, weighted_length(fine) + 1, True)


def _make_chunk(segments: Sequence[_Segment]) -> RawChunk:
    text = "\n".join(s.text for s in segments)
    return RawChunk(segments[0].line, segments[-1].line, text, sha256_hex(text))


def _tail(segment: _Segment, room: int) -> _Segment:
    """The longest end of ``segment`` whose cost (weighted length + 1) fits ``room``."""
    taken = 0
    width = 1
    for char in reversed(segment.text):
        cost = weighted_length(char)
        if width + cost > room:
            break
        width += cost
        taken += 1
    text = segment.text[len(segment.text) - taken :]
    return _Segment(text, segment.line, width, partial=True)


def _carry(buffer: list[_Segment], overlap_chars: int) -> list[_Segment]:
    """The trailing segments to repeat in the next chunk: walk back until the overlap is
    reached (so at least one segment is carried whenever overlap > 0).

    A piece of a line longer than the chunk is never carried whole: only as much of its
    end as the overlap has room for, so chunks of a long line overlap by ``overlap``
    tokens, not by a whole piece.
    """
    if overlap_chars <= 0:
        return []
    kept: list[_Segment] = []
    total = 0
    for segment in reversed(buffer):
        if segment.partial and total + segment.cost > overlap_chars:
            if overlap_chars - total > 1 or not kept:
                kept.append(_tail(segment, max(2, overlap_chars - total)))
            break
        total += segment.cost
        kept.append(segment)
        if total >= overlap_chars:
            break
    return kept[::-1]


def chunk_markdown(text: str, *, tokens: int, overlap: int) -> list[RawChunk]:
    """Split ``text`` into overlapping, line-tracked chunks of about ``tokens`` tokens.

    ``maxChars = max(32, tokens * 4)``; ``overlap`` tokens (``overlap * 4`` weighted
    chars) of trailing segments are repeated at the start of the next chunk. Returns at
    least one chunk (an empty text gives one empty chunk on line 1).
    """
    max_chars = max(32, tokens * CHARS_PER_TOKEN)
    overlap_chars = max(0, overlap * CHARS_PER_TOKEN)
    chunks: list[RawChunk] = []
    buffer: list[_Segment] = []
    size = 0
    for index, line in enumerate(text.split("\n")):
        for segment in _segments(line, index + 1, tokens, max_chars):
            if buffer and size + segment.cost > max_chars:
                chunks.append(_make_chunk(buffer))
                buffer = _carry(buffer, overlap_chars)
                size = sum(s.cost for s in buffer)
            buffer.append(segment)
            size += segment.cost
    if buffer:
        chunks.append(_make_chunk(buffer))
    return chunks


def chunk_id(
    source: str, path: str, start_line: int, end_line: int, chunk_hash: str, model: str
) -> str:
    """sha256 of ``source:path:startLine:endLine:chunkHash:model`` (§1.4)."""
    return sha256_hex(f"{source}:{path}:{start_line}:{end_line}:{chunk_hash}:{model}")
