"""A snapshot of the workspace: which memory files exist now, and their chunks.

This is what :meth:`Backend.sync` receives. Listing files is cheap (stat and hash);
chunking is done on demand per document.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .._config.config import Config
from .._types import Chunk, Document, IndexFingerprint
from . import chunking as _chunking
from . import discovery as _discovery
from . import journal as _journal
from . import sessions as _sessions
from . import structure as _structure
from .decoding import decode

FTS_ONLY = "fts-only"
"""The model id of chunks indexed without embeddings (keyword-only mode)."""


def scope_hash(config: Config) -> str:
    """sha256 of what decides which files are memory (workspace, extra paths, sessions)."""
    data = {
        "workspace": str(config.workspace_path),
        "extraPaths": sorted(str(config.expand(p)) for p in config.extra_paths),
        "sessionsDir": str(config.expand(config.sessions_dir)) if config.sessions_enabled else None,
        "entries": config.entries.path,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """The memory files of one workspace at one moment, and how to chunk them.

    ``fingerprint`` identifies the index these files should produce: provider, model,
    provider key, dims, chunking, sources and scope. A backend whose stored fingerprint
    differs must rebuild. ``model`` is the embedding model id, or ``"fts-only"``.
    ``warnings`` maps a file that is not plain UTF-8 to what was done about it (read with
    a fallback encoding, or left out because it looks binary; see :mod:`._decoding`), and a
    file left out as a symbolic link or over ``[sync] max_file_bytes`` to why.
    """

    config: Config
    documents: tuple[Document, ...]
    fingerprint: Mapping[str, Any]
    model: str
    warnings: Mapping[str, str] = field(default_factory=dict)
    _cache: dict[str, Loaded] = field(default_factory=dict, repr=False, compare=False)

    @property
    def workspace(self) -> Path:
        return self.config.workspace_path

    def warning_lines(self) -> tuple[str, ...]:
        """``<path>: <warning>`` for every file in :attr:`warnings`."""
        return tuple(f"{path}: {warning}" for path, warning in self.warnings.items())

    def text(self, doc: Document) -> str:
        """What gets chunked: the Markdown, or a transcript's ``User:``/``Assistant:`` lines."""
        return self._load(doc)[0]

    def chunks(self, doc: Document) -> list[Chunk]:
        """The document's chunks, whitespace-only ones dropped, ids computed with :attr:`model`."""
        return self._load(doc)[1]

    def line_map(self, doc: Document) -> tuple[int, ...]:
        """For a transcript: the JSONL line number of each line of :meth:`text`; else ``()``."""
        return self._load(doc)[2]

    def _load(self, doc: Document) -> Loaded:
        cached = self._cache.get(doc.path)
        if cached is None:
            cached = load_document(doc, self.config, self.model)
            self._cache[doc.path] = cached
        return cached

    def release(self, doc: Document) -> None:
        """Forget a document's cached text and chunks (after indexing it)."""
        self._cache.pop(doc.path, None)


class Loaded(NamedTuple):
    """A document read and chunked: its text, chunks and (transcripts) line map."""

    text: str
    chunks: list[Chunk]
    line_map: tuple[int, ...] = ()


def load_document(doc: Document, config: Config, model: str) -> Loaded:
    """Read and chunk one document according to its kind."""
    tokens, overlap = config.chunking.tokens, config.chunking.overlap
    line_map: tuple[int, ...] = ()
    if doc.kind == "journal":
        items = _journal.read_items(Path(doc.abs_path))
        text = _journal.journal_text([item.entry for item in items])
        entry_chunks = _journal.entry_chunks(doc.path, items, model=model)
        return Loaded(scrub(text), [_scrubbed(c) for c in entry_chunks])
    if doc.kind == "session":
        session = _sessions.build_session_entry(Path(doc.abs_path))
        text = scrub(session.content)
        raw = _chunking.chunk_markdown(text, tokens=tokens, overlap=overlap)
        raw = _sessions.remap_lines(raw, session.line_map)
        line_map = tuple(session.line_map)
    else:
        text = scrub(decode(Path(doc.abs_path).read_bytes()).text or "")
        setting = config.chunking.structure
        if not _structure.by_structure(setting, doc.path, text):
            raw = _chunking.chunk_markdown(text, tokens=tokens, overlap=overlap)
        elif setting == "openclaw":
            raw = _structure.chunk_entries(text, tokens=tokens, overlap=overlap)
        else:
            raw = _structure.chunk_structured(
                text, tokens=tokens, overlap=overlap, per_item=_structure.is_curated(doc.path)
            )
    chunks = [
        Chunk(
            id=_chunking.chunk_id(doc.source, doc.path, r.start_line, r.end_line, r.hash, model),
            path=doc.path,
            source=doc.source,
            start_line=r.start_line,
            end_line=r.end_line,
            text=r.text,
            hash=r.hash,
            model=model,
        )
        for r in raw
        if r.text.strip()
    ]
    return Loaded(text, chunks, line_map)


def scrub(text: str) -> str:
    """``text`` without lone surrogates (each becomes ``?``), so it can be stored and hashed.

    A journal entry or transcript may carry them (they survive JSON and the journal's
    round trip); an index must not refuse the whole file because of one.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _scrubbed(chunk: Chunk) -> Chunk:
    clean = scrub(chunk.text)
    entry = chunk.entry
    if entry is not None and scrub(entry.text) is not entry.text:
        entry = dataclasses.replace(entry, text=scrub(entry.text))
    if clean is chunk.text and entry is chunk.entry:
        return chunk
    digest = hashlib.sha256(clean.encode("utf-8")).hexdigest()
    chunk_id = _chunking.chunk_id(
        chunk.source, chunk.path, chunk.start_line, chunk.end_line, digest, chunk.model
    )
    return dataclasses.replace(chunk, text=clean, hash=digest, id=chunk_id, entry=entry)


def take_snapshot(config: Config, *, fingerprint: Mapping[str, Any], model: str) -> Snapshot:
    """List the workspace's memory files (and transcripts when sessions are a source)."""
    found = _discovery.discover(config)
    documents: list[Document] = found.documents
    if config.sessions_enabled:
        documents.extend(_sessions.discover_sessions(config.expand(config.sessions_dir)))
    return Snapshot(
        config=config,
        documents=tuple(documents),
        fingerprint=fingerprint,
        model=model,
        warnings=found.warnings,
    )


def fingerprint_for(
    config: Config, *, provider: str, model: str, provider_key: str, dims: int | None
) -> IndexFingerprint:
    """The index fingerprint (provider, model, key, dims, chunking, sources, scope, and the
    redaction version when transcripts are indexed: a better redaction rebuilds the index)."""
    redaction = None
    if config.sessions_enabled:  # imported here: its ~60 patterns compile at import
        from .redact import REDACTION_VERSION

        redaction = REDACTION_VERSION
    return IndexFingerprint(
        provider=provider,
        model=model,
        provider_key=provider_key,
        vector_dims=dims,
        chunk_tokens=config.chunking.tokens,
        chunk_overlap=config.chunking.overlap,
        chunk_structure=config.chunking.structure,
        sources=tuple(sorted(set(config.sources))),
        scope_hash=scope_hash(config),
        chunker=_chunking.CHUNKER_VERSION,
        redaction=redaction,
    )
