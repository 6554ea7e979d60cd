"""rebuild_reason and SyncTally on their own: why a sync rebuilds, and what it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_router._backend import SyncTally, rebuild_reason
from memory_router.kit import Embedder, EmbeddingCache
from memory_router.testing import HashingEmbedder

STORED = {"model": "hash-384", "vectorDims": 384, "sources": ["memory"], "chunkTokens": 200}


@pytest.mark.parametrize(
    ("stored", "wanted", "force", "reason"),
    [
        (STORED, STORED, True, "forced"),
        (None, STORED, True, "forced"),
        (None, STORED, False, "no index yet"),
        (STORED, dict(STORED), False, None),
        # compared as JSON: the tuple a caller built equals the list the index recorded
        (STORED, {**STORED, "sources": ("memory",)}, False, None),
        # a key the index recorded and the snapshot no longer has changes nothing
        ({**STORED, "redaction": 2}, STORED, False, None),
        # a wanted None is not known yet: it matches whatever the index recorded
        (STORED, {**STORED, "vectorDims": None}, False, None),
        ({**STORED, "vectorDims": None}, STORED, False, "fingerprint changed: vectorDims"),
        # a key the index never recorded is a change (e.g. a new chunker version)
        (STORED, {**STORED, "chunker": 3}, False, "fingerprint changed: chunker"),
        # the first differing key in sorted order, whatever order the dicts were built in
        (
            STORED,
            {"vectorDims": 768, "model": "other", "sources": ["memory"], "chunkTokens": 200},
            False,
            "fingerprint changed: model",
        ),
    ],
)
def test_rebuild_reason(
    stored: dict[str, object] | None, wanted: dict[str, object], force: bool, reason: str | None
) -> None:
    assert rebuild_reason(stored, wanted, force=force) == reason


def test_the_tally_reports_what_was_counted_and_embedded_since_it_started(
    tmp_path: Path,
) -> None:
    embedder = Embedder(HashingEmbedder(), cache=EmbeddingCache(tmp_path / "cache.sqlite"))
    try:
        embedder.embed_documents(["before the sync"])  # not this sync's work
        tally = SyncTally("sqlite", embedder)
        embedder.embed_documents(["before the sync", "new text", "more new text"])
        tally.added, tally.updated, tally.removed, tally.unchanged = 3, 1, 2, 4
        report = tally.report(chunks=9, reason=None)
    finally:
        embedder.close()
    assert (report.backend, report.added, report.updated, report.removed) == ("sqlite", 3, 1, 2)
    assert (report.unchanged, report.chunks) == (4, 9)
    assert (report.embedded, report.cache_hits) == (2, 1)
    assert (report.full_rebuild, report.reason, report.errors) == (False, None, ())
    assert report.duration_ms > 0


def test_a_reason_is_a_full_rebuild_and_errors_are_kept() -> None:
    tally = SyncTally("lancedb", None)
    report = tally.report(chunks=0, reason="forced", errors=["housekeeping failed: x"])
    assert (report.full_rebuild, report.reason) == (True, "forced")
    assert report.errors == ("housekeeping failed: x",)
    assert (report.embedded, report.cache_hits) == (0, 0)
