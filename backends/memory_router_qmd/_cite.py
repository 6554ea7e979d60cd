"""Which lines of a QMD hit to cite, and how well they answer the query.

QMD returns whole documents; in keyword mode each keyword is its own ``lex`` sub-query
and QMD takes the snippet from the chunk matching its *first* keyword, so the cited lines
often missed the answer. Here the document is read back from the collection folder and
cited as up to :data:`RUNS_PER_DOCUMENT` runs of whole lines, each within
``max_snippet_chars``, holding the most query keywords (:func:`memory_router.kit.best_runs`),
each keyword weighted by its rarity in the index. The file is read as the router reads
every memory file (:func:`memory_router.kit.decode`: a Latin-1 or Windows-1252 note is cited
in its own letters, not as QMD's U+FFFD). A document that cannot be read any more
(deleted, unreadable, binary, huge, or named outside the collection's folder) keeps
QMD's own lines and snippet; so does one in which no keyword occurs now (edited since QMD
indexed it). Every mode is re-cited: without a reranker QMD picks a document's chunk by
its first keyword in ``vsearch`` and ``query`` too, whatever the vectors matched (on
LoCoMo conv-26, ``vsearch`` turn R@10 went from 0.520 on QMD's snippets to 0.647); the
document's rank stays the vectors'.

``coverage`` is the weighted share of the query's keywords inside the cited lines (0–1),
what the ``search`` mode's score is built from (see :mod:`._results`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from memory_router.kit import best_runs, decode, keyword_coverage

from ._results import RawHit

MAX_FILE_BYTES = 4 * 1024 * 1024
RUNS_PER_DOCUMENT = 3
"""Runs of lines cited per document, each its own hit (QMD answers whole documents; the
built-in backend answers chunks, several per file)."""


def recite(
    hit: RawHit,
    folder: Path | None,
    query: str,
    *,
    max_chars: int,
    weights: Mapping[str, float] | None = None,
    runs: int = 1,
) -> list[RawHit]:
    """``hit`` as up to ``runs`` hits, one per cited run of lines, best first, with
    ``coverage`` set (one hit on QMD's own lines when the document cannot be used).

    ``folder`` is the collection's folder (``None``: keep QMD's lines).
    """
    text = _read_inside(folder, hit.relpath) if folder is not None else None
    cited = []
    if text is not None:
        lines = text.split("\n")
        for run in best_runs(lines, query, max_chars, weights, count=runs):
            start, end = _trim(lines, *run)
            window = "\n".join(lines[start:end])
            coverage = keyword_coverage(query, window, weights)
            if coverage > 0:
                cited.append(
                    dataclasses.replace(
                        hit,
                        start_line=start + 1,
                        end_line=max(start + 1, end),
                        snippet=window,
                        coverage=coverage,
                    )
                )
    return cited or [
        dataclasses.replace(hit, coverage=keyword_coverage(query, hit.snippet, weights))
    ]


def whole(
    hit: RawHit,
    folder: Path,
    query: str,
    *,
    weights: Mapping[str, float] | None = None,
) -> RawHit:
    """``hit`` citing every line of its document (a chunk mirror file: the chunk is the
    unit QMD ranked, as the built-in backends cite theirs), with ``coverage`` set; QMD's
    own lines when the file cannot be read."""
    text = _read_inside(folder, hit.relpath)
    if text is None:
        return dataclasses.replace(hit, coverage=keyword_coverage(query, hit.snippet, weights))
    lines = text.rstrip("\n").split("\n")
    start, end = _trim(lines, 0, len(lines))
    window = "\n".join(lines[start:end])
    return dataclasses.replace(
        hit,
        start_line=start + 1,
        end_line=max(start + 1, end),
        snippet=window,
        coverage=keyword_coverage(query, window, weights),
    )


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """``start``/``end`` without the blank lines at either edge (at least one line)."""
    while end - start > 1 and not lines[end - 1].strip():
        end -= 1
    while end - start > 1 and not lines[start].strip():
        start += 1
    return start, end


def _read_inside(folder: Path, relpath: str) -> str | None:
    """The text of ``folder/relpath`` when it lies inside ``folder`` (QMD's index is not
    trusted to name only its own files: ``../`` or a link out is never read)."""
    try:
        root = folder.resolve()
        path = (folder / relpath).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return _read(path) if path.is_relative_to(root) else None


def _read(path: Path) -> str | None:
    """The file's text, or ``None`` when it is gone, unreadable, too big or binary."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return decode(path.read_bytes()).text
    except (OSError, ValueError):
        return None
