"""QMD's vector modes with the offline model: all-MiniLM-L6-v2 written as GGUF by the
backend itself (no model configured, nothing downloaded), run by the real QMD CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_router.kit import SearchRequest
from memory_router_qmd._models import OFFLINE_NAME
from qmd_fakes.helpers import make_backend, qmd_missing

MISSING = qmd_missing()

pytestmark = [pytest.mark.qmd, pytest.mark.skipif(bool(MISSING), reason=MISSING)]

NOTES = {
    "MEMORY.md": "# Memory\n\n- Dana adopted a rescue greyhound called Biscuit.\n",
    "memory/2026-11-01.md": "# Trip\n\nBooked flights to Lisbon for the March conference.\n",
    "memory/2026-11-02.md": "# Build\n\nThe flaky CI job depended on the local timezone.\n",
}
PARAPHRASE = "which pet did they take in from the shelter"  # no word of its note
PARAPHRASES = {  # more pairs, each sharing no word with its note
    PARAPHRASE: "MEMORY.md",
    "when are we visiting portugal": "memory/2026-11-01.md",
    "what made our pipeline break unpredictably": "memory/2026-11-02.md",
}


def ask(query: str, **fields: Any) -> SearchRequest:
    return SearchRequest(query=query, max_results=3, min_score=0.0, candidates=10, **fields)


@pytest.mark.slow
def test_vsearch_answers_a_paraphrase_with_the_offline_model(
    tmp_path: Path, write_workspace: Any
) -> None:
    pytest.importorskip("gguf")
    for query, path in PARAPHRASES.items():
        assert not set(query.split()) & set(NOTES[path].lower().replace(".", " ").split())
    workspace = write_workspace(NOTES)
    backend = make_backend(
        tmp_path, workspace, search_mode="vsearch", update_on_boot=False, models={"offline": True}
    )
    try:
        _update, embed = backend.cycle.run(force=True)
        keyword = backend.search(ask(PARAPHRASE, mode="search"))
        vector = backend.search(ask(PARAPHRASE))
        answers = {q: backend.search(ask(q)).hits[0].path for q in PARAPHRASES}
        hybrid = backend.search(ask(PARAPHRASE, mode="query"))
        status = backend.status()
    finally:
        backend.close()
    model = tmp_path / "state" / "qmd" / "models" / OFFLINE_NAME
    assert model.read_bytes()[:4] == b"GGUF"
    assert embed.status == "done"
    assert not keyword.hits or keyword.hits[0].path != "MEMORY.md"  # no shared word
    assert vector.mode == "vsearch"
    assert vector.hits[0].path == "MEMORY.md"
    assert hybrid.mode == "query"  # not degraded to search: rerank off instead
    assert any("query without reranking" in note for note in hybrid.notes)
    assert hybrid.hits[0].path == "MEMORY.md"
    assert answers == PARAPHRASES
    assert status.details["models"]["embed"] == "ok"
    assert "all-MiniLM-L6-v2" in status.details["model_note"]


@pytest.mark.slow
def test_one_collection_is_searched_through_the_warm_sidecar(
    tmp_path: Path, write_workspace: Any
) -> None:
    """With one collection holding every note, QMD's own order is the vectors': the
    searches go to the ``qmd mcp`` child (the model loaded once), not a process each."""
    pytest.importorskip("gguf")
    notes = {f"memory/{path.replace('/', '-')}": text for path, text in NOTES.items()}
    workspace = write_workspace(notes)
    backend = make_backend(
        tmp_path, workspace, search_mode="vsearch", update_on_boot=False, models={"offline": True}
    )
    try:
        backend.cycle.run(force=True)
        answers = {q: backend.search(ask(q)).hits[0].path for q in PARAPHRASES}
        hybrid = backend.search(ask(PARAPHRASE, mode="query"))
        status = backend.status()
    finally:
        backend.close()
    assert answers == {q: f"memory/{p.replace('/', '-')}" for q, p in PARAPHRASES.items()}
    assert hybrid.mode == "query"
    assert hybrid.hits[0].path == "memory/MEMORY.md"
    assert status.details["sidecar"]["starts"] == 1
