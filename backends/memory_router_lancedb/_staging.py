"""Migration into the store: a staged generation published with one pointer switch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory_router import NotFound
from memory_router.kit import Chunk, Staging

from . import _housekeeping, _transfer
from ._store import STAGING_KEY, LanceStore, Tables, in_list


class LanceStaging(Staging):
    """A generation being filled beside the live one; :meth:`publish` switches to it.

    Its name and fingerprint are recorded in ``meta`` (key ``staging``), so a killed
    migration reopens it (and a rebuild's pruning of old generations leaves it alone);
    every write to the store (opening, each batch, publish, discard) holds
    :meth:`LanceStore.writing` like a sync, so it never interleaves with another write of
    the process, waits for one given up on at most one deadline, and is itself waited for
    when given up on; writes are ``merge_insert`` by chunk id, so a batch written twice
    is written once. A copy is filled with appends of large batches (:attr:`batch_size`)
    and its FTS index is built once, by :meth:`publish`. Publish does not compact: a fresh
    copy is a few large fragments (one per batch) and every row is in its FTS index, so
    the next ``optimize`` (due ``optimize_interval_minutes`` after the switch, or after
    ``optimize_every_writes`` writes) has nothing urgent to do.
    """

    batch_size = 10_000

    def __init__(self, store: LanceStore, tables: Tables, fingerprint: dict[str, Any]) -> None:
        self.store = store
        self.tables = tables
        self.fingerprint = fingerprint
        self.dims = _dims(fingerprint)
        self._ids: set[str] | None = None

    @classmethod
    def open(
        cls, store: LanceStore, fingerprint: Mapping[str, Any], *, resume: bool
    ) -> LanceStaging:
        with store.writing("migrate"):
            opened: LanceStaging = store.guard(
                "migrate", lambda: cls._open(store, fingerprint, resume=resume), long=True
            )
            return opened

    @classmethod
    def _open(
        cls, store: LanceStore, fingerprint: Mapping[str, Any], *, resume: bool
    ) -> LanceStaging:
        recorded = store.read_meta().get(STAGING_KEY)
        if resume:
            if recorded is None:
                raise NotFound(f"no interrupted migration into {store.shown_uri}", key="staging")
            tables = store.tables(recorded["generation"])
            return cls(store, tables, recorded["fingerprint"])
        if recorded is not None:
            store.drop_generation(recorded["generation"])
        wanted = _transfer.normalised(fingerprint)
        tables = store.new_generation(_dims(wanted))
        store.write_meta(STAGING_KEY, {"generation": tables.generation, "fingerprint": wanted})
        return cls(store, tables, wanted)

    def write(self, chunks: Sequence[Chunk]) -> None:
        with self.store.writing("migrate"):
            self.store.guard("migrate", lambda: self._append(chunks), long=True)

    def _append(self, chunks: Sequence[Chunk]) -> None:
        """One append per table; rows of ids already in the copy (a batch written again by
        a resumed run) are deleted first, so each id is held once."""
        if self._ids is None:
            self._ids = _transfer.column(self.tables.chunks, "id")
        unique = list({c.id: c for c in chunks}.values())
        again = [c.id for c in unique if c.id in self._ids]
        for start in range(0, len(again), 500):
            part = again[start : start + 500]
            self.tables.chunks.delete(in_list("id", part))
            self.tables.entries.delete(in_list("chunk_id", part))
        _transfer.append(self.tables, unique)
        self._ids.update(c.id for c in unique)

    def count(self) -> int:
        count: int = self.store.guard("migrate", self.tables.chunks.count_rows)
        return count

    def publish(self) -> None:
        def run() -> None:
            _housekeeping.ensure_fts(self.tables.chunks)
            self.store.switch(self.tables, self.fingerprint, self.dims)
            self.store.delete_meta(STAGING_KEY)
            self.store.prune(self.tables.generation)

        with self.store.writing("migrate"):
            self.store.guard("migrate", run, long=True)

    def discard(self) -> None:
        def run() -> None:
            self.store.drop_generation(self.tables.generation)
            self.store.delete_meta(STAGING_KEY)

        with self.store.writing("migrate"):
            self.store.guard("migrate", run, long=True)


def _dims(fingerprint: Mapping[str, Any]) -> int | None:
    dims = fingerprint.get("vectorDims")
    return int(dims) if dims else None
