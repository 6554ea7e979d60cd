"""BM25 over an OR of phrases from postings held in memory, ranked as FTS5 ranks it.

FTS5 computes ``bm25()`` for every row a query matches (~1.5 µs a row: a median bench
query matches 3,000 of 100k chunks) and has no top-k pruning. Its score is additive over
the query's phrases: ``bm25(p1 OR p2 …) = Σ bm25(pi)`` for every row, each phrase's part
taking its statistics (IDF, document length, average length) from the whole index, not
from the other phrases; an unmatched phrase adds ``0.0``. So each phrase's postings —
``(rowid, −bm25)`` of a one-phrase query, with the query's row filter — are fetched from
FTS5 once and kept; a query sums them with numpy, in phrase order as FTS5 does (the same
float64 additions: equal ranks to the last bit), and selects the best rows with
``argpartition``, ties by rowid as ``ORDER BY rank, rowid`` does.

The postings belong to one state of the full-text index: every call first reads its
structure record (``chunks_fts_data`` row 10, rewritten by every write to the index, in
this process or another), and postings fetched under another are dropped. They are
bounded by :data:`MAX_POSTINGS` (least recently used dropped first).
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ._db import Connection

MAX_POSTINGS = 2_000_000
"""Postings kept at most (16 bytes each: an int64 rowid and a float64 weight, ~32 MB)."""

_STATE = "SELECT block FROM chunks_fts_data WHERE id = 10"  # FTS5's structure record


class Postings:
    """Per-phrase BM25 postings of one full-text index (thread-safe; see the module)."""

    def __init__(
        self,
        reader: Callable[[], contextlib.AbstractContextManager[Connection]] | None = None,
        max_postings: int = MAX_POSTINGS,
    ) -> None:
        """``reader`` opens a connection for fetches in the background (``None``: none)."""
        self._reader = reader
        self.max_postings = max_postings
        self._pending: set[tuple[str, str, tuple[object, ...]]] = set()
        self._queued: list[list[tuple[str, str, tuple[object, ...]]]] = []
        self._lock = threading.Lock()
        self._state: bytes | None = None
        self._kept: OrderedDict[tuple[str, str, tuple[object, ...]], Any] = OrderedDict()
        self._size = 0

    def __len__(self) -> int:
        """How many phrases' postings are kept."""
        return len(self._kept)

    @property
    def fetching(self) -> int:
        """How many phrases' postings are being fetched in the background."""
        return len(self._pending)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._size = 0
            self._state = None

    def ranked(
        self,
        conn: Connection,
        phrases: Sequence[str],
        where: str,
        params: Sequence[object],
        limit: int,
        *,
        wait: bool = True,
    ) -> list[tuple[int, float]] | None:
        """``(rowid, bm25)`` of the best ``limit`` rows matching any of ``phrases`` (FTS5
        quoted strings) and ``where`` (a filter on ``chunks_fts``'s columns), best first:
        what ``… MATCH 'p1 OR p2 …' AND where ORDER BY bm25(chunks_fts), rowid LIMIT
        limit`` returns.

        Without ``wait`` only postings kept already answer: ``None`` when a phrase has
        none kept, and its postings are fetched in the background after
        :meth:`fetch_asked` (a fetch costs more than FTS5's own ranking of the query,
        which the caller does instead).
        """
        key = (where, tuple(params))
        with _snapshot(conn):  # the state read and every posting fetched: one snapshot
            state = self._follow(conn)
            if wait:
                parts = [self._postings(conn, phrase, *key, state) for phrase in phrases]
            elif (kept := self._all_kept(phrases, *key, state)) is None:
                return None
            else:
                parts = kept
        parts = [p for p in parts if len(p[0])]
        if not parts or limit <= 0:
            return []
        rowids, total = _summed(parts)
        return _best(rowids, -total, limit)

    def _all_kept(
        self, phrases: Sequence[str], where: str, params: tuple[object, ...], state: bytes
    ) -> list[Any] | None:
        """Every phrase's kept postings, or ``None`` after asking for the missing ones."""
        with self._lock:
            if state != self._state:
                return None
            found = [self._kept.get((phrase, where, params)) for phrase in phrases]
            missing = [
                key
                for phrase, part in zip(phrases, found, strict=True)
                if part is None and (key := (phrase, where, params)) not in self._pending
            ]
            self._pending.update(missing)
        if any(part is None for part in found):
            if missing:
                with self._lock:
                    self._queued.append(missing)
            return None
        return found

    def fetch_asked(self) -> None:
        """Start fetching, in the background, the postings queries found missing (the
        backend calls this once its answer is ready: a fetch started mid-search would
        take the core its other half runs on)."""
        with self._lock:
            queued, self._queued = self._queued, []
        for keys in queued:
            _background().put(functools.partial(self._fill, keys))

    def _fill(self, keys: list[tuple[str, str, tuple[object, ...]]]) -> None:
        """Fetch and keep the postings of ``keys`` (on the background thread)."""
        try:
            if self._reader is not None:
                with self._reader() as conn, _snapshot(conn):
                    state = self._follow(conn)
                    for phrase, where, params in keys:
                        self._postings(conn, phrase, where, params, state)
        except Exception:  # a closed or damaged index: a later search asks again
            pass
        finally:
            with self._lock:
                self._pending.difference_update(keys)

    def _follow(self, conn: Connection) -> bytes:
        """The index's state now; every posting is dropped if it changed since they were
        fetched."""
        row = conn.execute(_STATE).fetchone()
        state = bytes(row[0]) if row and row[0] is not None else b""
        with self._lock:
            if state != self._state:
                self._kept.clear()
                self._size = 0
                self._state = state
        return state

    def _postings(
        self, conn: Connection, phrase: str, where: str, params: tuple[object, ...], state: bytes
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """One phrase's postings in index state ``state``: kept ones while the kept
        postings are of that state, else fetched (and kept if they are)."""
        import numpy as np

        key = (phrase, where, params)
        with self._lock:
            found = self._kept.get(key) if state == self._state else None
            if found is not None:
                self._kept.move_to_end(key)
                return found  # type: ignore[no-any-return]
        rows = conn.execute(
            f"SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? AND {where}",
            [phrase, *params],
        ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        weights = np.fromiter((-r[1] for r in rows), dtype=np.float64, count=len(rows))
        with self._lock:
            if state == self._state and key not in self._kept:
                self._kept[key] = (ids, weights)
                self._size += len(ids)
                while self._size > self.max_postings and len(self._kept) > 1:
                    _, (old, _) = self._kept.popitem(last=False)
                    self._size -= len(old)
        return ids, weights


@functools.cache
def _background() -> queue.SimpleQueue[Callable[[], None]]:
    """The inbox of the thread that fetches postings (started on first use)."""
    inbox: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

    def serve() -> None:
        while True:
            inbox.get()()

    threading.Thread(target=serve, daemon=True, name="sqlite-postings").start()
    return inbox


@contextlib.contextmanager
def _snapshot(conn: Connection) -> Iterator[None]:
    """One read transaction around the block (the connection is in autocommit mode)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _summed(
    parts: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """``(rowids, −ranks)``: each row any phrase matched, once, its weights summed in
    phrase order (``0 + w1 + w2 …``, FTS5's additions).

    A stable sort of the phrases' rowids, one run after the other, keeps each row's
    weights in phrase order, and ``np.add.at`` adds them in that order; each phrase's
    rowids come sorted, so the sort merges runs (a third of ``np.unique``'s time)."""
    import numpy as np

    rowids = np.concatenate([ids for ids, _ in parts])
    order = np.argsort(rowids, kind="stable")
    ordered = rowids[order]
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    total = np.zeros(int(np.count_nonzero(first)), dtype=np.float64)
    np.add.at(total, np.cumsum(first) - 1, np.concatenate([w for _, w in parts])[order])
    return ordered[first], total


def _best(
    rowids: npt.NDArray[np.int64], ranks: npt.NDArray[np.float64], limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` lowest ranks, ties by lower rowid, as ``(rowid, rank)`` pairs."""
    import numpy as np

    if len(ranks) > limit:
        kth = np.partition(ranks, limit - 1)[limit - 1]
        keep = np.flatnonzero(ranks <= kth)  # every row tied with the last one kept
        rowids, ranks = rowids[keep], ranks[keep]
    order = np.lexsort((rowids, ranks))[:limit]
    return [(int(rowids[i]), float(ranks[i])) for i in order]
