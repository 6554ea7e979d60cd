"""Copying a source's chunks into a target's staging area: batch by batch, read ahead,
with a :mod:`checkpoint <memory_router._migrate.checkpoint>` after each batch, so a killed
copy resumes where it stopped; published in one step at the end."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._backend import Backend, Staging
from .._embedding.embedder import Embedder
from .._exceptions import InvalidInput
from .._types import Chunk, Progress
from .._util.pipeline import prefetch
from .._workspace.chunking import chunk_id
from .checkpoint import Checkpoint, clear_checkpoint, load_checkpoint, save_checkpoint
from .endpoints import Source, Target
from .indexfile import IndexFile


@dataclass(frozen=True, slots=True, kw_only=True)
class Copied:
    """What a copy did: the target's ``chunks`` once live, those ``written`` by this run
    and those a resumed run found already written (``skipped``)."""

    chunks: int
    written: int
    skipped: int


class Copier:
    """Streams the source into a staging area batch by batch, checkpointing each batch
    in ``path``. ``mode`` is ``reuse`` (chunks copied with their vectors) or ``re-embed``
    (embedded again by ``embedder``); a resumed copy must have the same source, mode and
    ``wanted`` fingerprint. A ``None`` staging is a copy published already (resumed after
    the switch): only the checkpoint is left to clear.
    """

    def __init__(
        self,
        src: Source,
        dest: Target,
        staging: Staging | None,
        path: Path,
        *,
        mode: str,
        wanted: dict[str, Any],
        embedder: Embedder | None,
    ) -> None:
        self.src = src
        self.backend = dest.backend
        self.label = dest.label
        self.staging = staging
        self.path = path
        self.mode = mode
        self.wanted = wanted
        self.embedder = embedder

    def run(self, resume: bool, *, batch: int, progress: Progress) -> Copied:
        state = self._start(resume)
        skipped = state.done
        if self.staging is not None:
            try:
                if state.phase == "copying":
                    _check_copy(self.staging, state)
                    state = self._copy(state, batch, progress)
                save_checkpoint(self.path, dataclasses.replace(state, phase="publishing"))
                self.staging.publish()
            finally:
                self.staging.close()
        clear_checkpoint(self.path)
        chunks = self.backend.status().chunks
        return Copied(chunks=chunks, written=state.done - skipped, skipped=skipped)

    def _start(self, resume: bool) -> Checkpoint:
        fresh = Checkpoint(
            source=self.src.name,
            target=self.label,
            mode=self.mode,
            fingerprint=self.wanted,
            total=_count(self.src),
        )
        saved = load_checkpoint(self.path)
        if not resume or saved is None:
            save_checkpoint(self.path, fresh)
            return fresh
        same = (saved.source, saved.mode, saved.fingerprint) == (
            fresh.source,
            fresh.mode,
            fresh.fingerprint,
        )
        if not same:
            raise InvalidInput(
                f"the interrupted migration into {self.label!r} came from"
                f" {saved.source} ({saved.mode}); this one differs",
                key="resume",
                hint="run without --resume to start clean",
            )
        return saved

    def _copy(self, state: Checkpoint, batch: int, progress: Progress) -> Checkpoint:
        assert self.staging is not None
        stream = self.src.export_chunks()
        _skip(stream, state)
        progress(done=state.done, total=state.total, label="migrating")
        # The next batch is read from the source while this one is written.
        for chunks in prefetch(_batches(stream, batch), name="migrate-read"):
            self.staging.write(self._convert(chunks))
            state = state.advance(len(chunks), chunks[-1].id)
            save_checkpoint(self.path, state)
            progress(done=state.done, total=max(state.total, state.done), label="migrating")
        return state

    def _convert(self, batch: list[Chunk]) -> list[Chunk]:
        if self.mode == "reuse":
            return batch
        embedder = self.embedder
        model = embedder.model if embedder else "fts-only"
        vectors: list[Any] = (
            list(embedder.embed_documents([c.text for c in batch]))
            if embedder
            else [None] * len(batch)
        )
        return [
            dataclasses.replace(
                c,
                id=chunk_id(c.source, c.path, c.start_line, c.end_line, c.hash, model),
                model=model,
                embedding=tuple(v.tolist()) if v is not None else None,
            )
            for c, v in zip(batch, vectors, strict=True)
        ]


def _check_copy(staging: Staging, state: Checkpoint) -> None:
    """Refuse to resume into a copy holding fewer chunks than the checkpoint says were
    written (the copy is written without fsyncs: a machine crash can lose its tail)."""
    if state.done and staging.count() < state.done:
        raise InvalidInput(
            f"the interrupted migration's copy holds fewer chunks than its checkpoint"
            f" ({staging.count()} < {state.done}): it lost writes",
            key="resume",
            hint="run without --resume to start clean",
        )


def _count(src: Source) -> int:
    if isinstance(src, IndexFile):
        return src.count()
    assert isinstance(src, Backend)
    return src.status().chunks


def _skip(stream: Iterator[Chunk], state: Checkpoint) -> None:
    """Advance past the chunks a resumed migration already wrote, checking the last one."""
    last: Chunk | None = None
    for _ in range(state.done):
        last = next(stream, None)
        if last is None:
            break
    if state.done and (last is None or last.id != state.last_id):
        raise InvalidInput(
            "the source changed since the interrupted migration started",
            key="resume",
            hint="run without --resume to start clean",
        )


def _batches(stream: Iterator[Chunk], size: int) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for chunk in stream:
        batch.append(chunk)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
