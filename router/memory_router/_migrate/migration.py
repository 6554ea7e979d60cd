""":func:`migrate`: copy an index from one backend (or an index file) into another.

Three ways, chosen by comparing the source's stored fingerprint with what the target
needs (the router's :meth:`~memory_router.Router.fingerprint`):

* ``reuse`` — everything matches: chunks are copied with their vectors and the embedding
  provider is never called;
* ``re-embed`` — only the embedding space differs: the source's chunks are embedded again
  through the shared embedding cache (cached texts cost nothing);
* ``rebuild`` — chunking, sources or scope differ (or the target keeps vectors of its own,
  as QMD does): the target re-indexes the Markdown with ``sync``.

Before ``re-embed`` and ``rebuild``, a source whose provider, model and size match ours
hands its vectors to the embedding cache, so nothing it already had is embedded again.
Copies stream in batches into a :class:`~memory_router.kit.Staging` beside the live index,
with a :mod:`checkpoint <memory_router._migrate.checkpoint>` after each batch, and go live in one
step at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._backend import Backend, Staging
from .._embedding.embedder import Embedder, normalize
from .._exceptions import MemoryRouterError, NotFound, Unsupported
from .._routing.backends import closed_error
from .._routing.indexlock import lock_file
from .._types import Progress, _ToDict, no_progress
from .checkpoint import (
    Checkpoint,
    checkpoint_path,
    clear_checkpoint,
    load_checkpoint,
    lock_path,
)
from .copier import Copier
from .endpoints import (
    Source,
    Target,
    check_distinct,
    open_source,
    open_target,
    target_key,
)
from .indexfile import IndexFile
from .verify import VerifyReport, verify_backends

if TYPE_CHECKING:
    from .._router import Router

Mode = Literal["reuse", "re-embed", "rebuild", "none"]
BATCH = 1000
EMBEDDING_KEYS = ("provider", "model", "providerKey", "vectorDims")
SHAPE_KEYS = ("chunkTokens", "chunkOverlap", "chunker", "sources", "scopeHash")


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationReport(_ToDict):
    """What :func:`migrate` did.

    ``mode`` is ``reuse``, ``re-embed``, ``rebuild`` (or ``none`` when only verifying)
    and ``reason`` says why (why vectors
    could not be reused, when they were not). ``written`` counts chunks written by this
    run, ``skipped`` those a resumed run found already written; ``embedded`` counts texts
    sent to the embedding provider (0 when vectors were reused), ``cache_hits`` texts the
    shared cache answered, and ``seeded`` vectors handed from the source to that cache.
    """

    source: str
    target: str
    mode: Mode
    reason: str
    chunks: int
    written: int = 0
    skipped: int = 0
    embedded: int = 0
    cache_hits: int = 0
    seeded: int = 0
    resumed: bool = False
    duration_ms: float = 0.0
    verify: VerifyReport | None = None
    notes: tuple[str, ...] = ()


def choose_mode(stored: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> tuple[Mode, str]:
    """How to migrate an index with fingerprint ``stored`` into one that needs ``wanted``."""
    if stored is None:
        return "rebuild", "the source records no index fingerprint"
    shape = [k for k in SHAPE_KEYS if stored.get(k) != wanted.get(k)]
    if shape:
        return "rebuild", f"the chunks differ ({', '.join(shape)} changed)"
    space = [k for k in EMBEDDING_KEYS if stored.get(k) != wanted.get(k)]
    if space:
        was = f"{stored.get('provider')}/{stored.get('model')}"
        now = f"{wanted.get('provider')}/{wanted.get('model')}"
        return "re-embed", f"the embedding space differs ({', '.join(space)}: {was} -> {now})"
    return "reuse", "fingerprints match: vectors copied"


def same_space(stored: Mapping[str, Any] | None, embedder: Embedder | None) -> bool:
    """Whether the source's vectors are ours: same provider, model (and size when known)."""
    if stored is None or embedder is None:
        return False
    dims = stored.get("vectorDims")
    return (
        stored.get("provider") == embedder.provider_id
        and stored.get("model") == embedder.model
        and (dims is None or embedder.dims is None or dims == embedder.dims)
    )


def migrate(
    router: Router,
    target: str | None = None,
    *,
    source: str | None = None,
    source_path: str | os.PathLike[str] | None = None,
    target_path: str | os.PathLike[str] | None = None,
    resume: bool = False,
    verify: int | None = None,
    queries: Sequence[str] = (),
    copy: bool = True,
    batch_size: int | None = None,
    progress: Progress = no_progress,
) -> MigrationReport:
    """Copy the index of ``router``'s backend ``source`` (or the index file ``source_path``)
    into its backend ``target`` (or the SQLite index file ``target_path``), reusing vectors
    when the fingerprints match; built beside the live index and switched over when
    complete. ``resume`` continues a killed run; ``verify`` runs that many corpus queries
    (plus ``queries``) on both sides; ``copy = False`` only verifies; ``batch_size``
    (chunks per write and checkpoint) defaults to what the target writes best.
    """
    if router.is_closed:
        raise closed_error()
    router.check_workspace()  # a target that indexes the Markdown would be emptied
    from_path = os.fspath(source_path) if source_path is not None else None
    to_path = os.fspath(target_path) if target_path is not None else None
    check_distinct(source, target, from_path, to_path)
    started = time.perf_counter()
    src, is_file = open_source(router, source, from_path)
    dest: Target | None = None
    try:
        dest = open_target(router, target, to_path)
        if copy:
            with migration_lock(router, dest):
                report = _run(router, src, dest, resume, batch_size, progress)
        else:
            report = MigrationReport(
                source=src.name, target=dest.label, mode="none", reason="verify only", chunks=0
            )
        if verify is not None:
            checked = verify_backends(router, src, dest.backend, count=verify, queries=queries)
            report = dataclasses.replace(report, verify=checked)
    finally:
        if dest is not None:
            dest.close()
        if is_file:
            assert isinstance(src, IndexFile)
            src.close()
    return dataclasses.replace(report, duration_ms=(time.perf_counter() - started) * 1000)


def migration_lock(router: Router, dest: Target) -> contextlib.AbstractContextManager[None]:
    """One migration into a target at a time, across processes: a second one would
    discard the first's copy and mix up their checkpoint (:class:`IndexBusy` at once)."""
    return lock_file(
        lock_path(router.config.agent_state_path, dest.key),
        doing=f"migrating into {dest.label!r}",
        hint="let it finish, or stop it and continue it with --resume",
        wait_s=0,
    )


def interrupted(router: Router, target: str | None, target_path: str | None) -> Checkpoint | None:
    """The checkpoint a failed or interrupted migration into ``target`` (or the index file
    ``target_path``) left, which ``resume`` continues from; ``None`` when there is none."""
    key = target_key(target, target_path)
    return load_checkpoint(checkpoint_path(router.config.agent_state_path, key))


def _run(
    router: Router,
    src: Source,
    dest: Target,
    resume: bool,
    batch_size: int | None,
    progress: Progress,
) -> MigrationReport:
    backend, target = dest.backend, dest.label
    wanted = router.fingerprint().to_dict()
    stored = src.index_fingerprint()
    mode, reason = choose_mode(stored, wanted)
    embedder = router.embedder
    before = (embedder.embedded, embedder.cache_hits) if embedder else (0, 0)
    batch = max(1, batch_size or BATCH)
    seeded = 0
    if mode != "reuse" and same_space(stored, embedder):
        assert embedder is not None
        seeded = seed_cache(embedder, src, batch, progress)
    base = MigrationReport(
        source=src.name, target=target, mode=mode, reason=reason, chunks=0, seeded=seeded
    )
    staging: Staging | None = None
    if mode != "rebuild":
        try:
            staging = _stage(backend, wanted, resume, dest, router)
        except Unsupported:
            mode = "rebuild"
            reason = f"{reason}; backend {target!r} builds its own index from the Markdown"
            if same_space(stored, embedder):  # its sync then embeds nothing we had
                assert embedder is not None
                seeded = seed_cache(embedder, src, batch, progress)
            base = dataclasses.replace(base, mode=mode, reason=reason, seeded=seeded)
    if mode == "rebuild":
        report = _rebuild(router, dest, base, progress)
    else:
        report = _copy(router, src, dest, staging, base, wanted, resume, batch_size, progress)
    after = (embedder.embedded, embedder.cache_hits) if embedder else (0, 0)
    return dataclasses.replace(
        report, embedded=after[0] - before[0], cache_hits=after[1] - before[1]
    )


def _copy(
    router: Router,
    src: Source,
    dest: Target,
    staging: Staging | None,
    base: MigrationReport,
    wanted: dict[str, Any],
    resume: bool,
    batch_size: int | None,
    progress: Progress,
) -> MigrationReport:
    """Copy (``reuse``) or re-embed (``re-embed``) the source's chunks into ``staging``."""
    size = max(1, batch_size or (staging.batch_size if staging else BATCH))
    path = checkpoint_path(router.config.agent_state_path, dest.key)
    copier = Copier(
        src, dest, staging, path, mode=base.mode, wanted=wanted, embedder=router.embedder
    )
    copied = copier.run(resume, batch=size, progress=progress)
    return dataclasses.replace(
        base, chunks=copied.chunks, written=copied.written, skipped=copied.skipped, resumed=resume
    )


def _stage(
    backend: Backend, wanted: dict[str, Any], resume: bool, dest: Target, router: Router
) -> Staging | None:
    """The target's staging area; ``None`` when a resumed run finds it published already."""
    path = checkpoint_path(router.config.agent_state_path, dest.key)
    saved = load_checkpoint(path)
    if not resume:
        return backend.stage(fingerprint=wanted, resume=False)
    if saved is None:
        raise NotFound(
            f"no interrupted migration into {dest.label!r} to resume",
            key="resume",
            hint="run the migration without --resume",
        )
    try:
        return backend.stage(fingerprint=wanted, resume=True)
    except NotFound as error:
        if saved.phase == "publishing":
            return None  # killed after the switch, before the checkpoint was removed
        raise NotFound(
            f"{error.message}: the interrupted migration's copy ({saved.done} of"
            f" {saved.total} chunks written) is gone",
            key="resume",
            hint="run without --resume to start clean (the target was reset, or its location"
            " changed since the migration was interrupted)",
        ) from None


def _rebuild(
    router: Router, dest: Target, base: MigrationReport, progress: Progress
) -> MigrationReport:
    clear_checkpoint(checkpoint_path(router.config.agent_state_path, dest.key))
    if dest.owned:  # an index file outside the chain
        reports = [dest.backend.sync(router.snapshot(), force=True, progress=progress)]
    else:
        reports = router.sync(force=True, backends=[dest.key], progress=progress)
    errors = [e for r in reports for e in r.errors]
    if errors:
        raise MemoryRouterError(
            f"re-indexing {dest.label!r} from the Markdown failed: {errors[0]}",
            hint="fix the cause and run the migration again (the embedding cache keeps"
            " what was embedded)",
        )
    return dataclasses.replace(base, chunks=reports[0].chunks, written=reports[0].chunks)


def seed_cache(embedder: Embedder, src: Source, batch: int, progress: Progress) -> int:
    """Put the source's vectors into the shared embedding cache; returns how many."""
    cache = embedder.cache
    if cache is None:
        return 0
    key = (embedder.provider_id, embedder.model, embedder.provider_key)
    seeded = 0
    pending: dict[str, Any] = {}
    for text_hash, vector in _vectors(src, embedder):
        pending[text_hash] = normalize(vector)
        if len(pending) >= batch:
            cache.put_many(*key, pending)
            seeded += len(pending)
            pending = {}
            progress(done=seeded, total=seeded, label="seeding the embedding cache")
    if pending:
        cache.put_many(*key, pending)
        seeded += len(pending)
    return seeded


def _vectors(src: Source, embedder: Embedder) -> Iterator[tuple[str, Sequence[float]]]:
    for chunk in src.export_chunks():
        if chunk.embedding:
            yield chunk.hash, chunk.embedding
    if isinstance(src, IndexFile):
        yield from src.cached_vectors(embedder.provider_id, embedder.model)
