"""The QMD backend: QMD (``@tobilu/qmd``) driven as a supervised sidecar.

QMD indexes a mirror of the router's chunks (:mod:`._mirror`, ``documents = "chunks"``)
or the memory files themselves (``"files"``). Queries go to a warm ``qmd mcp`` child
(or, with ``use_mcp = false``, one-shot ``qmd query`` calls); ``update`` and ``embed``
are one-shot calls run by the update cycle.
Each agent has its own QMD state under the backend's state directory. See
:mod:`._results` for how hits and scores are mapped and :mod:`._models` for modes.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from memory_router import (
    BackendError,
    BackendStatus,
    BackendUnavailable,
    InvalidInput,
    MemoryRouterError,
    Progress,
    SyncReport,
    no_progress,
)
from memory_router.kit import (
    Backend,
    BackendContext,
    BackendResult,
    SearchRequest,
    Snapshot,
    query_keywords,
)

from . import _queries
from ._cite import RUNS_PER_DOCUMENT, recite, whole
from ._collections import Collection, declared_names, ensure_config, managed_collections
from ._export import export_sessions, load_line_maps, purge_old_redaction
from ._index import keyword_weights, read_stats
from ._locate import locate
from ._mcp import McpSidecar
from ._mirror import COLLECTION as MIRROR
from ._mirror import Manifest, MirrorReport, write_mirror
from ._models import Preflight, with_offline_embed
from ._process import QmdRunner
from ._results import (
    RELAXED_COVERAGE,
    SCORING,
    RawHit,
    calibrated,
    explained_score,
    parse_items,
    rank_score,
    to_hits,
)
from ._settings import MODES, QmdSettings
from ._update import UpdateCycle, reported_counts

CITE_WHOLE_CHUNKS = True
"""With ``documents = "chunks"``, cite each hit's whole chunk (QMD ranked the chunk) rather
than runs of lines of it."""


class QmdBackend(Backend):
    """Search through QMD; see the package docstring for the whole contract."""

    sync_in_background = True

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        self.settings: QmdSettings = context.settings or QmdSettings()
        self.command = locate(self.settings, backend=self.name, expand=context.config.expand)
        self.runner = QmdRunner(
            self.command,
            index=self.settings.index,
            state_dir=context.state_dir,
            backend=self.name,
            kill_grace_s=self.settings.kill_grace_s,
        )
        self.export_dir = context.state_dir / "sessions-export"
        self.mirror_dir = context.state_dir / "chunks"
        self.manifest = Manifest(self.mirror_dir)
        self.chunked = self.settings.documents == "chunks"
        self.models, self.model_note = with_offline_embed(self.settings.models, context.state_dir)
        self.preflight = Preflight.check(self.models)
        self._collections: dict[str, Collection] = {}
        self._line_maps = load_line_maps(self.export_dir)
        self._lock = threading.Lock()
        self._version: str | None = None
        self.sidecar = McpSidecar(
            self.runner,
            start_timeout=self.settings.command_timeout_s,
            max_backoff=context.config.router.breaker.cooldown_s,
        )
        self.cycle = UpdateCycle(
            self.runner,
            update_timeout=self.settings.update_timeout_s,
            embed_timeout=self.settings.embed_timeout_s,
            failure_backoff=self.settings.failure_backoff_s,
            can_embed=lambda: self.preflight.usable("embed"),
            prepare=self._prepare,
            record=context.state_dir / "last-cycle.json",
        )
        self._prepare(rewrite=False)
        self.cycle.start(
            interval=self.settings.update_interval_s, on_boot=self.settings.update_on_boot
        )

    # -- collections --------------------------------------------------------------------

    def _prepare(self, *, rewrite: bool = True) -> None:
        """Declare the managed collections and models in the index YAML (idempotent).

        With ``rewrite=False`` (at start, which may be a search) an existing YAML is left
        as it is, so a collection dropped from the config disappears only at the next
        sync, never on the search path; searches use the collections the YAML declares.
        """
        collections, models = self._wanted()
        path = self.runner.config_path
        if rewrite or not path.is_file():
            ensure_config(path, collections, models)
        declared = declared_names(path)
        with self._lock:
            self._collections = {c.name: c for c in collections if c.name in declared}

    def _wanted(self) -> tuple[list[Collection], dict[str, str]]:
        """The collections and model paths the index YAML should declare: the chunk
        mirror alone (``documents = "chunks"``), or the memory folders themselves."""
        if self.chunked:
            self.mirror_dir.mkdir(parents=True, exist_ok=True)
            collections = [Collection(name=MIRROR, path=self.mirror_dir, pattern="**/*.md")]
        else:
            collections = managed_collections(self.context.config, self.export_dir)
        models = {
            role: str(Path(getattr(self.models, role)).expanduser())
            for role in ("embed", "generate", "rerank")
            if self.preflight.usable(role)
        }
        return collections, models

    def _files(self, snapshot: Snapshot) -> str:
        """A fingerprint of what a sync's update indexes: the memory files (path and
        content), the collections and models declared, and the snapshot's fingerprint."""
        collections, models = self._wanted()
        described = {
            "documents": sorted((d.path, d.hash) for d in snapshot.documents),
            "collections": sorted((c.name, str(c.path), c.pattern) for c in collections),
            "models": models,
            "fingerprint": snapshot.fingerprint,
        }
        text = json.dumps(described, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    # -- search -------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> BackendResult:
        """Keyword, vector or hybrid search through QMD (see :mod:`._models`)."""
        wanted = request.mode or self.settings.search_mode
        if wanted not in MODES:
            raise InvalidInput(
                f"unknown QMD mode {wanted!r} (modes: {', '.join(MODES)})", key="mode"
            )
        mode, notes = self.effective_mode(wanted)
        with self._lock:
            collections = {
                n: c
                for n, c in self._collections.items()
                # The mirror holds every source: its hits are filtered once mapped.
                if request.sources is None or c.source in request.sources or self.chunked
            }
        items = _queries.searches(mode, request.query)
        if not collections or not items:
            return BackendResult(hits=(), mode=mode, relaxed_min_score=0.0, notes=notes)
        timeout = self.settings.timeout_for(mode)
        if request.timeout is not None:
            timeout = max(0.1, min(timeout, request.timeout))
        # QMD ranks each named collection on its own and merges them by score; without
        # reranking a score is 1/rank, so every collection's first hit would tie at 1.
        # Vector and hybrid modes search the whole index (all ours) as one ranked list
        # when every collection is wanted, and drop unknown collections afterwards.
        every = mode != "search" and set(collections) == set(self._collections)
        names = [] if every else sorted(collections)
        raw = parse_items(self._query(mode, request, items, names, timeout), backend=self.name)
        # QMD's snippet is 300 characters around the first keyword in the chunk with the
        # most keywords (without a reranker, in every mode): cite runs of lines instead.
        raw = self._cite(raw, collections, request.query)
        # Unreranked hybrid: QMD's fused rank (keywords and the vector) orders the
        # documents, the cited lines' keyword coverage the runs, as in ``search`` mode.
        keyed = mode == "search" or (mode == "query" and not self.preflight.usable("rerank"))
        hits = to_hits(
            raw,
            collections=collections,
            workspace=self.context.config.workspace_path,
            backend=self.name,
            scoring="coverage" if keyed else SCORING.get(mode, "qmd"),
            side={"search": "text", "vsearch": "vector"}.get(mode),
            line_maps=self._line_maps,
            manifest=self.manifest.entries() if self.chunked else None,
        )
        if request.sources is not None:
            hits = [h for h in hits if h.source in request.sources]
        return BackendResult(
            hits=tuple(hits[: request.candidates]),
            mode=mode,
            relaxed_min_score=calibrated(RELAXED_COVERAGE) if keyed else 0.0,
            notes=notes,
        )

    def _cite(
        self, raw: list[RawHit], collections: dict[str, Collection], query: str
    ) -> list[RawHit]:
        """Cite each document's lines with the most (rarity-weighted) query keywords."""
        weights = keyword_weights(self.runner.index_path, query_keywords(query))
        max_chars = self.context.config.query.max_snippet_chars
        cited = []
        for hit in raw:
            folder = collections[hit.collection].path if hit.collection in collections else None
            if self.chunked and CITE_WHOLE_CHUNKS and folder is not None:
                cited.append(whole(hit, folder, query, weights=weights))
                continue
            cited += recite(
                hit, folder, query, max_chars=max_chars, weights=weights, runs=RUNS_PER_DOCUMENT
            )
        return cited

    def effective_mode(self, wanted: str) -> tuple[str, tuple[str, ...]]:
        """The mode that will run for ``wanted``, and notes on any degradation."""
        mode, notes = self.preflight.effective(wanted)
        if mode != "search" and not self._has_vectors():
            notes = (*notes, f"qmd: {mode} mode unavailable (no vectors yet: embed has not run)")
            mode = "search"
        return mode, notes

    def _has_vectors(self) -> bool:
        return read_stats(self.runner.index_path).vectors > 0

    def _query(
        self,
        mode: str,
        request: SearchRequest,
        items: list[dict[str, str]],
        collections: list[str],
        timeout: float,
    ) -> Any:
        expand = mode == "query" and self.preflight.usable("generate")
        rerank = mode == "query" and self.preflight.usable("rerank")
        if mode != "search" and not rerank and not self._one_ranked_list(collections):
            # QMD ranks each collection on its own and merges them by score; without the
            # reranker a score is 1/rank, so every collection's first hit ties at 1. The
            # CLI's --explain gives each hit's real backend scores: rank by those.
            return self._explained(request, items, collections, timeout, mode)
        if self.settings.use_mcp:
            arguments: dict[str, Any] = {
                "limit": request.candidates,
                "candidateLimit": _candidate_limit(request),
                "rerank": rerank,
            }
            if collections:
                arguments["collections"] = collections
            if expand:
                arguments["query"] = _queries.vec_text(request.query)
            else:
                arguments["searches"] = items
            result = self.sidecar.call_tool("query", arguments, timeout=timeout)
            structured = result.get("structuredContent")
            if not isinstance(structured, dict):
                raise BackendError(
                    "qmd mcp query answered without structuredContent", backend=self.name
                )
            found = structured.get("results")
            return found if rerank else _rank_scored(found)
        document = _queries.vec_text(request.query) if expand else _queries.typed_document(items)
        args = ["query", "--format", "json", "-n", str(request.candidates)]
        args += ["-C", str(_candidate_limit(request))]
        args += [] if rerank else ["--no-rerank"]
        for name in collections:
            args += ["-c", name]
        output = self.runner.run([*args, "--", document], timeout=timeout, abandon=True).stdout
        try:
            return json.loads(output)
        except ValueError:
            # A broken install or runtime, not a bad query: take QMD out of service.
            raise BackendUnavailable(
                f"qmd query printed something that is not JSON: {output.strip()[:200]!r}",
                backend=self.name,
            ) from None

    def _one_ranked_list(self, collections: list[str]) -> bool:
        """Whether QMD's own unreranked order can be used: the sidecar is on and one
        collection holds every document searched (``collections``; none: all of them).

        QMD searches each collection on its own (all of its collections when none is
        named) and fuses the lists by rank, so only then is its order the vectors'. The
        warm sidecar keeps the model loaded; a ``qmd query`` process per search (the
        ``--explain`` path) loads it again each time (~4 s on 2 loaded cores).
        """
        if not self.settings.use_mcp:
            return False
        documents = read_stats(self.runner.index_path).documents
        searched = collections or list(documents)
        return sum(1 for name in searched if documents.get(name, 0) > 0) <= 1

    def _explained(
        self,
        request: SearchRequest,
        items: list[dict[str, str]],
        collections: list[str],
        timeout: float,
        mode: str,
    ) -> list[Any]:
        """``query --no-rerank --explain``, each hit scored by its backend scores (see
        :func:`._results.explained_score`) and sorted by them."""
        args = ["query", "--format", "json", "--no-rerank", "--explain"]
        args += ["-n", str(request.candidates)]
        for name in collections:
            args += ["-c", name]
        document = _queries.typed_document(items)
        output = self.runner.run([*args, "--", document], timeout=timeout, abandon=True).stdout
        try:
            found = json.loads(output)
        except ValueError:
            raise BackendUnavailable(
                f"qmd query printed something that is not JSON: {output.strip()[:200]!r}",
                backend=self.name,
            ) from None
        if not isinstance(found, list):
            return found  # type: ignore[no-any-return]  # parse_items reports the shape
        for item in found:
            if isinstance(item, dict):
                item["score"] = explained_score(item.get("explain"), mode)
        return sorted(found, key=lambda i: -i["score"] if isinstance(i, dict) else 0.0)

    # -- sync ---------------------------------------------------------------------------

    def sync(
        self, snapshot: Snapshot, *, force: bool = False, progress: Progress = no_progress
    ) -> SyncReport:
        """Write the chunk mirror (``documents = "chunks"``) or export transcripts
        (``"files"``), declare collections, ``update``, then ``embed`` when possible.

        With chunks, counts are source files whose chunks the mirror added, changed or
        removed, and ``chunks`` the chunk files QMD holds. With files, counts are QMD's own
        (``Indexed: …`` lines), those of background cycles since the last sync included
        (the start-up cycle may have built the index just before), and ``chunks`` the
        documents QMD holds (QMD chunks only for vectors, and those are its own).

        QMD's vectors are its own, so the snapshot's fingerprint does not apply; ``force``
        re-embeds everything.

        Without ``force``, a sync whose files the last update (of any process) indexed as
        they are, with nothing left to embed, starts no QMD process: a one-shot command's
        first search would only start an update it then ends.
        """
        started = time.perf_counter()
        files = self._files(snapshot)
        if not force and self.cycle.indexed(files, embeds=self.preflight.usable("embed")):
            return self._already_indexed(snapshot, started)
        progress(done=0, total=2, label="qmd update")
        mirrored = self._write_derived(snapshot)
        update, embed = self.cycle.run(force=True, embed_force=force, files=files)
        counts = reported_counts(update, self.cycle.take_changes())
        if mirrored is not None:  # files, not QMD's chunk files
            counts = mirrored.files
        if snapshot.config.sessions_enabled:
            derived = self.mirror_dir if self.chunked else self.export_dir
            purge_old_redaction(snapshot, derived, self.cycle.cleanup)
        progress(done=2, total=2, label="qmd embed")
        errors = (embed.error,) if embed.status == "failed" and embed.error else ()
        indexed = sum(read_stats(self.runner.index_path).documents.values())
        return SyncReport(
            backend=self.name,
            added=counts["added"],
            updated=counts["updated"],
            removed=counts["removed"],
            unchanged=counts["unchanged"],
            chunks=indexed,
            embedded=embed.counts.get("chunks", 0),
            full_rebuild=force,
            reason=f"embed {embed.status}",
            duration_ms=(time.perf_counter() - started) * 1000,
            errors=errors,
            warnings=() if self.chunked else own_reading(snapshot),
        )

    def _write_derived(self, snapshot: Snapshot) -> MirrorReport | None:
        """Write what QMD indexes besides the memory files: the chunk mirror (every
        chunk, ``documents = "chunks"``: its report) or the transcript export
        (``"files"``)."""
        if self.chunked:
            target, what = self.mirror_dir, "the chunk mirror"
        elif snapshot.config.sessions_enabled:
            target, what = self.export_dir, "session transcripts"
        else:
            return None
        try:
            if self.chunked:
                return write_mirror(snapshot, target)
            export_sessions(snapshot, target)
        except OSError as error:
            raise BackendError(
                f"cannot write {what} to {target}: {error}", backend=self.name
            ) from error
        self._line_maps = load_line_maps(self.export_dir)
        return None

    def _already_indexed(self, snapshot: Snapshot, started: float) -> SyncReport:
        """The report of a sync that found QMD's index up to date (see :meth:`sync`)."""
        changes = self.cycle.take_changes()  # what a start-up cycle changed, if anything
        indexed = files = sum(read_stats(self.runner.index_path).documents.values())
        if self.chunked:  # QMD's counts are chunk files; the mirror was not rewritten
            changes = {"added": 0, "updated": 0, "removed": 0}
            files = self.manifest.sources()
        fresh = changes["added"] + changes["updated"]
        return SyncReport(
            backend=self.name,
            added=changes["added"],
            updated=changes["updated"],
            removed=changes["removed"],
            unchanged=max(0, files - fresh),
            chunks=indexed,
            reason="already indexed: no file changed since the last qmd update",
            duration_ms=(time.perf_counter() - started) * 1000,
            warnings=() if self.chunked else own_reading(snapshot),
        )

    # -- status -------------------------------------------------------------------------

    def status(self, *, deep: bool = False) -> BackendStatus:
        """Documents, vectors, the update cycle, the sidecar and the effective mode."""
        self.cycle.refresh()  # another process may have updated since
        stats = read_stats(self.runner.index_path)
        mode, notes = self.effective_mode(self.settings.search_mode)
        details: dict[str, Any] = {
            "command": list(self.command.argv),
            "found_in": self.command.origin,
            "index": self.settings.index,
            "index_path": str(self.runner.index_path),
            "config_path": str(self.runner.config_path),
            "configured_mode": self.settings.search_mode,
            "documents": self.settings.documents,
            "effective_mode": mode,
            "mode_notes": list(notes),
            "models": {r: p or "ok" for r, p in self.preflight.problems.items()},
            "model_note": self.model_note,
            "collections": self._collection_status(stats.documents),
            "vectors": stats.vectors,
            "last_update": self.cycle.last_update.to_dict() if self.cycle.last_update else None,
            "last_embed": self.cycle.last_embed.to_dict() if self.cycle.last_embed else None,
            "sidecar": {"enabled": self.settings.use_mcp, **self.sidecar.status()},
        }
        error = stats.error if stats.error != "no index yet" else None
        update = self.cycle.last_update
        if error is None and update is not None and update.status == "failed":
            # As a search would (the router falls back when a sync failed): not ready.
            error = f"qmd update failed: {update.error}"
        if self.settings.use_mcp:
            error = error or self.sidecar.down_reason()
        if deep:
            details["version"], version_error = self._probe_version()
            error = error or version_error
        if error is not None and self._recent_hang() is not None:
            details["hint"] = (
                f"QMD does not answer: run `{' '.join(self.command.argv)} --version` to see"
                " why; searches go to the next backend of the chain meanwhile"
            )
        documents = sum(stats.documents.values())
        files = self.manifest.sources() if self.chunked else documents
        return BackendStatus(
            name=self.name,
            available=error is None,
            files=files,
            chunks=documents,
            error=error,
            details=details,
        )

    def _collection_status(self, documents: dict[str, int]) -> list[dict[str, Any]]:
        with self._lock:
            collections = list(self._collections.values())
        return [
            {
                "name": c.name,
                "path": str(c.path),
                "pattern": c.pattern,
                "source": c.source,
                "documents": documents.get(c.name, 0),
            }
            for c in collections
        ]

    def _recent_hang(self) -> str | None:
        return self.runner.recent_hang(self.settings.failure_backoff_s)

    def _probe_version(self) -> tuple[str | None, str | None]:
        """QMD's ``--version`` (asked once), or why it cannot be had; not asked while a
        call hung recently (it would hang ``command_timeout_s`` too)."""
        if self._version is None:
            hung = self._recent_hang()
            if hung is not None:
                return None, hung
            try:
                result = self.runner.run(["--version"], timeout=self.settings.command_timeout_s)
            except MemoryRouterError as error:
                return None, error.message
            self._version = result.stdout.strip()
        return self._version, None

    def close(self) -> None:
        """Stop the update cycle and the sidecar, killing any child still running (those
        given up on included: this returns once they are reaped)."""
        self.cycle.close()
        self.sidecar.close()
        self.runner.close()


def _candidate_limit(request: SearchRequest) -> int:
    """QMD fuses its sub-queries' lists and keeps 40 documents by default; ask for as many
    as the router wants (each ``lex`` list still holds at most 20)."""
    return max(40, request.candidates)


def _rank_scored(found: Any) -> Any:
    """Unreranked MCP results (QMD's fused order, scored ``1/rank``) scored by
    :func:`._results.rank_score` instead: the order is kept, the scores fall gently."""
    if isinstance(found, list):
        for rank, item in enumerate(found, start=1):
            if isinstance(item, dict):
                item["score"] = rank_score(rank)
    return found


def own_reading(snapshot: Snapshot) -> tuple[str, ...]:
    """A warning when memory files are not plain UTF-8: QMD reads the Markdown itself, so
    the router's decoding (a fallback encoding, binary files left out) does not apply."""
    if not snapshot.warnings:
        return ()
    names = ", ".join(snapshot.warnings)
    return (
        f"qmd reads the Markdown itself: it indexes {names} as QMD decodes them"
        " (files that look binary included); fix or move them to be sure",
    )
