"""``documents = "chunks"``: QMD indexes a mirror of the router's own chunks, one file each,
in one collection; hits map back to the source file and lines. Run by the real QMD CLI
with the offline all-MiniLM-L6-v2 written as GGUF by the backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_router.kit import SearchRequest
from memory_router_qmd._mirror import MANIFEST
from qmd_fakes.helpers import make_backend, qmd_missing, snapshot_for

MISSING = qmd_missing()

pytestmark = [pytest.mark.qmd, pytest.mark.skipif(bool(MISSING), reason=MISSING)]

FILLER = [f"- Routine entry {n}: checked the mailbox and watered the ferns." for n in range(90)]
LONG = "\n".join(
    [
        "# Journal",
        "",
        *FILLER[:60],
        "- Dana adopted a rescue greyhound called Biscuit.",
        *FILLER[60:],
    ]
)
FACT_LINE = 63  # 1-based line of the greyhound in LONG
NOTES = {
    "MEMORY.md": "# Memory\n\n- The flaky CI job depended on the local timezone.\n",
    "memory/journal.md": LONG + "\n",
    "memory/2026-11-01.md": "# Trip\n\nBooked flights to Lisbon for the March conference.\n",
}
PARAPHRASE = "which pet did they take in from the shelter"  # no word of its line


def ask(query: str, **fields: Any) -> SearchRequest:
    return SearchRequest(query=query, max_results=5, min_score=0.0, candidates=10, **fields)


def mirror_files(state: Path) -> dict[str, int]:
    """Mirror file name → inode (a rewritten file gets a new one)."""
    folder = state / "qmd" / "chunks"
    return {
        p.relative_to(folder).as_posix(): p.stat().st_ino
        for p in folder.rglob("*.md")
        if not p.name.startswith(".")
    }


@pytest.mark.slow
def test_vsearch_cites_the_source_lines_of_a_paraphrase_through_one_warm_sidecar(
    tmp_path: Path, write_workspace: Any
) -> None:
    pytest.importorskip("gguf")
    fact = LONG.split("\n")[FACT_LINE - 1].lower()
    assert not set(PARAPHRASE.split()) & set(fact.replace(".", " ").split())
    workspace = write_workspace(NOTES)
    backend = make_backend(
        tmp_path,
        workspace,
        search_mode="vsearch",
        documents="chunks",
        update_on_boot=False,
        models={"offline": True},
    )
    try:
        report = backend.sync(snapshot_for(backend))
        keyword = backend.search(ask(PARAPHRASE, mode="search"))
        vector = backend.search(ask(PARAPHRASE))
        hybrid = backend.search(ask(PARAPHRASE, mode="query"))
        status = backend.status()
    finally:
        backend.close()
    assert report.embedded > 3  # the journal is several chunks, each embedded
    assert not any(h.start_line <= FACT_LINE <= h.end_line for h in keyword.hits)
    assert vector.mode == "vsearch"
    top = vector.hits[0]
    assert top.path == "memory/journal.md"
    assert top.start_line <= FACT_LINE <= top.end_line  # the source's lines, not the mirror's
    source = (workspace / top.path).read_text(encoding="utf-8").split("\n")
    # the chunk's text: the source's lines, led by the headings above them (context)
    assert top.snippet.endswith("\n".join(source[top.start_line - 1 : top.end_line]))
    assert hybrid.mode == "query"
    assert hybrid.hits[0].path == "memory/journal.md"
    # MEMORY.md and memory/ in one collection: the warm child served every vector search.
    assert [c["name"] for c in status.details["collections"]] == ["chunks"]
    assert status.details["sidecar"]["starts"] == 1
    assert status.files == 3
    assert status.chunks > 3


@pytest.mark.slow
def test_editing_one_note_re_mirrors_and_re_embeds_only_its_chunks(
    tmp_path: Path, write_workspace: Any
) -> None:
    pytest.importorskip("gguf")
    workspace = write_workspace(NOTES)
    backend = make_backend(
        tmp_path, workspace, documents="chunks", update_on_boot=False, models={"offline": True}
    )
    state = tmp_path / "state"
    try:
        backend.sync(snapshot_for(backend))
        before = mirror_files(state)
        (workspace / "memory/2026-11-01.md").write_text(
            "# Trip\n\nBooked flights to Porto for the March conference.\n", encoding="utf-8"
        )
        report = backend.sync(snapshot_for(backend))
        hits = backend.search(ask("Porto flights")).hits
    finally:
        backend.close()
    after = mirror_files(state)
    gone, new = set(before) - set(after), set(after) - set(before)
    assert len(gone) == len(new) == 1  # the trip note is one chunk
    assert all(name.endswith("/2026-11-01.md") for name in gone | new)
    assert all(before[name] == after[name] for name in set(before) & set(after))  # untouched
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 1, 0, 2)
    assert report.embedded == 1  # QMD embedded the one new chunk file only
    assert report.chunks == len(after)
    assert hits[0].path == "memory/2026-11-01.md"
    assert hits[0].start_line <= 3 <= hits[0].end_line


@pytest.mark.slow
def test_an_interrupted_mirror_write_loses_and_mis_cites_nothing(
    tmp_path: Path, write_workspace: Any
) -> None:
    """What a write killed before its manifest leaves: a new chunk file the manifest does
    not name (QMD may index it) and a temporary. Its hits are dropped; the chunks the
    manifest names are cited as before; the next write removes both leftovers."""
    workspace = write_workspace(NOTES)
    backend = make_backend(tmp_path, workspace, documents="chunks", update_on_boot=False)
    folder = tmp_path / "state" / "qmd" / "chunks"
    try:
        backend.sync(snapshot_for(backend))
        manifest = (folder / MANIFEST).read_text(encoding="utf-8")
        stray = folder / "0123456789abcdef0123" / "2026-11-01.md"
        stray.parent.mkdir()
        stray.write_text("Booked flights to Lisbon and a greyhound.\n", encoding="utf-8")
        (folder / "0123456789abcdef0123" / ".2026-11-01.md.99.tmp").write_text("Lisbon\n")
        backend.cycle.run(force=True)  # QMD indexes the stray file, not the dot file
        hits = backend.search(ask("Lisbon flights")).hits
        assert (folder / MANIFEST).read_text(encoding="utf-8") == manifest
        backend.sync(snapshot_for(backend), force=True)
    finally:
        backend.close()
    assert [(h.path, h.end_line) for h in hits] == [("memory/2026-11-01.md", 3)]
    assert not stray.parent.exists()
    names = set(json.loads((folder / MANIFEST).read_text(encoding="utf-8")))
    assert set(mirror_files(tmp_path / "state")) == names
