"""The QMD backend against the real QMD CLI (``scripts/install-qmd.sh`` installs it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from memory_router import Router
from memory_router.kit import SearchRequest
from memory_router.testing import BackendContract
from memory_router_qmd import QmdSettings
from memory_router_qmd._locate import locate
from qmd_fakes.gguf_models import vocab_file, write_bert_embedder
from qmd_fakes.helpers import make_backend, make_router, snapshot_for

# qmd: skips where QMD is missing and fails under CI (tests/conftest.py).
pytestmark = [pytest.mark.qmd, pytest.mark.slow]

NOTES = {
    "MEMORY.md": "# Memory\n\nThe user prefers green tea over coffee.\nPriya leads billing.\n",
    "memory/2026-11-01.md": "# Trip\n\nBooked flights to Lisbon.\nThe hotel is in Alfama.\n",
    "memory/Big Notes #1.md": "# Big Notes\n\nThe zebra project launched in May.\n",
}


class TestQmdContract(BackendContract):
    backend = "qmd"

    def backend_settings(self, tmp_path: Path) -> dict[str, Any]:
        return {"update_on_boot": False}


def test_install_script_is_idempotent_and_prints_where_things_are() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "install-qmd.sh"
    env = {k: v for k, v in os.environ.items() if k != "QMD_PREFIX"}
    done = subprocess.run(
        [str(script)], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "already" in done.stdout  # nothing downloaded the second time
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines()[-2:])
    assert Path(lines["node"]).is_file()
    assert Path(lines["qmd.js"]).is_file()
    assert locate(QmdSettings(), backend="qmd").argv == (lines["node"], lines["qmd.js"])


@pytest.fixture
def workspace(write_workspace) -> Path:  # type: ignore[no-untyped-def]
    return write_workspace(NOTES)  # type: ignore[no-any-return]


def ask(query: str, **fields: Any) -> SearchRequest:
    return SearchRequest(query=query, max_results=5, min_score=0.0, candidates=10, **fields)


@pytest.mark.parametrize("use_mcp", [True, False], ids=["mcp", "cli"])
def test_keyword_question_finds_paths_and_lines(
    tmp_path: Path, workspace: Path, use_mcp: bool
) -> None:
    backend = make_backend(tmp_path, workspace, use_mcp=use_mcp, update_on_boot=False)
    try:
        backend.cycle.run(force=True)
        # A verbatim question: QMD would AND every word and find nothing.
        result = backend.search(ask("Which city did they book flights to, and where is the hotel?"))
        odd = backend.search(ask('"unbalanced -dash zebra'))
    finally:
        backend.close()
    top = result.hits[0]
    assert (top.path, top.backend, result.mode) == ("memory/2026-11-01.md", "qmd", "search")
    assert top.start_line <= 3 <= top.end_line  # "Booked flights to Lisbon." is line 3
    assert "Lisbon" in top.snippet
    assert not top.snippet.startswith("@@")
    # "city" is in no note: the hit holds the rest of the query, weighted by rarity.
    assert 0.35 < top.score < 1.0
    assert top.text_score == top.score
    assert [h.path for h in odd.hits] == ["memory/Big Notes #1.md"]


def test_update_cycle_picks_up_an_edited_file(tmp_path: Path, workspace: Path) -> None:
    backend = make_backend(tmp_path, workspace, update_interval_s=0.5)
    try:
        _wait(lambda: backend.cycle.last_update is not None)
        assert not backend.search(ask("quokka")).hits
        (workspace / "memory/2026-11-01.md").write_text(
            "# Trip\n\nSaw a quokka on Rottnest Island.\n", encoding="utf-8"
        )
        hits = _wait(lambda: backend.search(ask("quokka")).hits)
        update = backend.cycle.last_update
    finally:
        backend.close()
    assert hits[0].path == "memory/2026-11-01.md"
    assert update is not None
    assert update.status == "ok"


def _wait(check: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_status_deep_reports_index_collections_cycle_and_sidecar(
    tmp_path: Path, workspace: Path
) -> None:
    backend = make_backend(tmp_path, workspace, update_on_boot=False)
    try:
        backend.cycle.run(force=True)
        backend.search(ask("zebra"))
        status = backend.status(deep=True)
    finally:
        backend.close()
    details = status.details
    assert status.available
    assert status.files == 3
    assert details["version"].startswith("qmd 2.8.3")
    assert Path(details["index_path"]).is_file()
    assert {c["name"]: c["documents"] for c in details["collections"]} == {
        "memory-root": 1,
        "memory-dir": 2,
    }
    assert details["vectors"] == 0
    assert details["last_update"]["counts"]["added"] == 3
    assert details["last_embed"]["status"] == "skipped"
    assert details["sidecar"]["pid"] is not None
    assert details["sidecar"]["restarts"] == 0
    assert (details["configured_mode"], details["effective_mode"]) == ("search", "search")


def test_modes_without_models_degrade_to_search_and_say_so(tmp_path: Path, workspace: Path) -> None:
    not_gguf = tmp_path / "embed.gguf"
    not_gguf.write_bytes(b"this is not a model")
    backend = make_backend(
        tmp_path,
        workspace,
        search_mode="query",
        update_on_boot=False,
        models={"embed": str(not_gguf)},
    )
    try:
        backend.cycle.run(force=True)
        started = time.monotonic()
        result = backend.search(ask("zebra"))
        vsearch = backend.search(ask("zebra", mode="vsearch"))
        elapsed = time.monotonic() - started
        status = backend.status()
    finally:
        backend.close()
    assert result.mode == vsearch.mode == "search"
    assert [h.path for h in result.hits] == ["memory/Big Notes #1.md"]
    assert any("query mode unavailable" in n and "is not a GGUF file" in n for n in result.notes)
    assert any("is not a GGUF file" in n for n in vsearch.notes)
    assert elapsed < 5  # never waits on a download
    assert status.details["effective_mode"] == "search"
    assert not_gguf.read_bytes() == b"this is not a model"  # QMD deletes bad models it sees
    yaml = (tmp_path / "state/qmd/config/qmd/memrouter.yml").read_text()
    assert str(not_gguf) not in yaml


def test_sessions_are_exported_and_mapped_back(tmp_path: Path, workspace: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    lines = [
        {"type": "session", "id": "chat1"},
        {"type": "message", "message": {"role": "user", "content": "Where is the okapi exhibit?"}},
        {
            "type": "message",
            "message": {"role": "assistant", "content": "North wing, past the cafe."},
        },
    ]
    (sessions / "chat1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    config = tmp_path / "memory-router.toml"
    config.write_text(
        f"workspace = {json.dumps(str(workspace))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        f'sources = ["memory", "sessions"]\nsessions_dir = {json.dumps(str(sessions))}\n'
        '[embedding]\nprovider = "none"\n[router]\nchain = ["qmd"]\n'
        "[backends.qmd]\nupdate_on_boot = false\n"
    )
    with Router.from_config(config) as router:
        assert not router.sync()[0].errors
        response = router.search("okapi exhibit", min_score=0.0)
        memory_only = router.backend("qmd").search(ask("okapi", sources=("memory",)))
    hit = response.results[0]
    assert (hit.path, hit.source, response.backend) == ("sessions/chat1.jsonl", "sessions", "qmd")
    assert (hit.start_line, hit.end_line) == (2, 3)  # JSONL lines of the two messages
    assert "okapi" in hit.snippet
    assert memory_only.hits == ()


@pytest.fixture(scope="module")
def embed_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vocab = vocab_file()
    if vocab is None:
        pytest.skip(
            "no tokenizer for the stand-in GGUF: run .venv/bin/pip download --no-deps "
            "--no-binary :all: llama-cpp-python==0.3.36 -d .tools/sdist"
        )
    return write_bert_embedder(tmp_path_factory.mktemp("models") / "embed.gguf", vocab)


@pytest.mark.parametrize("use_mcp", [True, False], ids=["mcp", "cli"])
def test_vsearch_with_a_stand_in_embedding_model(
    tmp_path: Path, workspace: Path, embed_model: Path, use_mcp: bool
) -> None:
    backend = make_backend(
        tmp_path,
        workspace,
        search_mode="vsearch",
        use_mcp=use_mcp,
        update_on_boot=False,
        models={"embed": str(embed_model)},
    )
    try:
        before = backend.search(ask("zebra"))  # nothing embedded yet: keyword search
        _update, embed = backend.cycle.run(force=True)
        again = backend.cycle.run(force=True)[1]
        result = backend.search(ask("which animal project launched?"))
        query = backend.search(ask("zebra", mode="query"))
        status = backend.status()
    finally:
        backend.close()
    assert before.mode == "search"
    assert any("no vectors yet" in note for note in before.notes)
    assert (embed.status, embed.counts) == ("done", {"chunks": 3, "documents": 3})
    assert again.status == "nothing-to-do"
    assert result.mode == "vsearch"
    assert {h.path for h in result.hits} == set(NOTES)  # random weights: order is arbitrary
    assert all(h.vector_score == h.score and h.text_score is None for h in result.hits)
    assert query.mode == "query"  # hybrid retrieval without a rerank model: rerank off
    assert any("query without reranking" in note for note in query.notes)
    assert status.details["vectors"] == 3
    assert status.details["effective_mode"] == "vsearch"
    yaml = (tmp_path / "state/qmd/config/qmd/memrouter.yml").read_text()
    assert f'embed: "{embed_model}"' in yaml


def test_query_mode_reranks_with_stand_in_models(
    tmp_path: Path, workspace: Path, embed_model: Path
) -> None:
    vocab = vocab_file()
    assert vocab is not None
    reranker = write_bert_embedder(tmp_path / "rerank.gguf", vocab, ranker=True)
    backend = make_backend(
        tmp_path,
        workspace,
        search_mode="query",
        update_on_boot=False,
        models={"embed": str(embed_model), "rerank": str(reranker)},
    )
    try:
        embed = backend.cycle.run(force=True)[1]
        result = backend.search(ask("zebra project"))
        keyword = backend.search(ask("zebra project", mode="search"))
    finally:
        backend.close()
    assert embed.status == "done"
    assert (result.mode, result.notes) == ("query", ())
    assert {h.path for h in result.hits} == set(NOTES)
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < s <= 1.0 for s in scores)
    assert all(h.text_score is None and h.vector_score is None for h in result.hits)
    assert keyword.mode == "search"
    assert [h.path for h in keyword.hits] == ["memory/Big Notes #1.md"]


def test_killed_sidecar_is_reported_and_restarted(tmp_path: Path, workspace: Path) -> None:
    backend = make_backend(tmp_path, workspace, update_on_boot=False)
    try:
        backend.cycle.run(force=True)
        assert backend.search(ask("zebra")).hits
        first = backend.sidecar.pid
        assert first is not None
        os.killpg(first, signal.SIGKILL)
        _wait(lambda: backend.sidecar.pid is None)
        time.sleep(0.2)  # the reader thread records the exit
        hits = backend.search(ask("zebra")).hits  # a dead idle child is replaced at once
        sidecar = backend.status().details["sidecar"]
    finally:
        backend.close()
    assert [h.path for h in hits] == ["memory/Big Notes #1.md"]
    assert sidecar["crashes"] == 1
    assert sidecar["restarts"] == 1
    assert sidecar["pid"] not in (None, first)
    assert "-9" in sidecar["last_error"]


def test_lowercase_memory_md_is_indexed_too(tmp_path: Path, write_workspace) -> None:  # type: ignore[no-untyped-def]
    workspace = write_workspace(
        {"memory.md": "# Memory\nThe wifi password hint is the dog's name.\n"}
    )
    backend = make_backend(tmp_path, workspace, update_on_boot=False)
    try:
        backend.sync(snapshot_for(backend))
        result = backend.search(ask("wifi password hint"))
    finally:
        backend.close()
    assert [h.path for h in result.hits] == ["memory.md"]


FILLER = "".join(f"Line {i}: nothing much happened today.\n" for i in range(40))
DIARY = {
    "MEMORY.md": "# Memory\n\nThe user prefers green tea over coffee.\n",
    # "weather" first occurs 40 lines above the answer; QMD's own snippet is those lines.
    "memory/2026-10-05.md": "# Week\n\nThe weather was grey on Monday.\n"
    + FILLER
    + "Priya saw the dentist on Thursday; the weather was fine.\n"
    + FILLER,
}


def test_cited_lines_show_the_answer_and_min_score_drops_noise(
    tmp_path: Path, write_workspace: Any
) -> None:
    workspace = write_workspace(DIARY)
    with make_router(tmp_path, workspace, update_on_boot=False) as router:
        router.sync()
        answer = router.search("what was the weather when Priya saw the dentist")
        coffee = router.search("does the user like coffee or tea")
        noise = router.search("quantum chromodynamics lattice gauge tea")
        relaxed = router.search("which coffee roast and grinder")
        strict = router.search("which coffee roast and grinder", min_score=0.5)
    top = answer.results[0]
    assert (answer.backend, top.path) == ("qmd", "memory/2026-10-05.md")
    assert top.start_line <= 44 <= top.end_line  # the answer's line, not QMD's line 3
    assert "Priya saw the dentist" in top.snippet
    assert top.score > 0.9  # every keyword is in the cited lines
    assert [h.path for h in coffee.results] == ["MEMORY.md"]
    assert coffee.results[0].score >= 0.2  # the default min_score keeps a real match
    assert noise.backend == "qmd"
    assert not noise.results  # one stray "tea" in five keywords: under min_score
    # One keyword in three is kept by the default min_score; with a stricter one, the
    # relaxation still keeps it rather than answer nothing.
    assert [h.path for h in relaxed.results] == ["MEMORY.md"]
    assert [h.path for h in strict.results] == ["MEMORY.md"]
    assert strict.results[0].score < 0.5


@pytest.mark.parametrize("documents", ["files", "chunks"])
def test_files_that_are_not_utf_8_are_reported_for_qmd_too(
    tmp_path: Path, write_workspace: Any, documents: str
) -> None:
    workspace = write_workspace(NOTES)
    (workspace / "memory/garbage.md").write_bytes(bytes(range(256)) * 20)
    (workspace / "memory/latin.md").write_bytes("# Café\n\nRenée et Müller.\n".encode("latin-1"))
    router = make_router(tmp_path, workspace, update_on_boot=False, documents=documents)
    try:
        [report] = router.sync(backends=["qmd"])
    finally:
        router.close()
    assert not report.errors
    assert report.warnings[:2] == (
        "memory/garbage.md: looks binary (NUL bytes); not indexed",
        "memory/latin.md: not valid UTF-8; read as Windows-1252 (cp1252)",
    )
    if documents == "chunks":  # the mirror holds the chunks as the router decoded them
        assert len(report.warnings) == 2
    else:
        assert report.warnings[2].startswith(
            "qmd reads the Markdown itself: it indexes memory/garbage.md, memory/latin.md"
        )


def test_a_latin_1_note_is_cited_as_the_router_reads_it(
    tmp_path: Path, write_workspace: Any
) -> None:
    # QMD indexes the bytes as it decodes them ("é" becomes U+FFFD); citing read the file
    # as strict UTF-8, failed, and kept QMD's mangled lines.
    workspace = write_workspace(NOTES)
    note = "# Séjour\n\nRenée booked the quinta in Sintra.\n"
    (workspace / "memory/latin.md").write_bytes(note.encode("latin-1"))
    backend = make_backend(tmp_path, workspace, update_on_boot=False)
    try:
        backend.cycle.run(force=True)
        result = backend.search(ask("Which quinta in Sintra did Renée book?"))
    finally:
        backend.close()
    top = result.hits[0]
    assert top.path == "memory/latin.md"
    assert top.snippet == "# Séjour\n\nRenée booked the quinta in Sintra."
    assert (top.start_line, top.end_line) == (1, 3)


def test_a_fresh_index_reports_its_files_as_added_and_status_shows_the_update(
    tmp_path: Path, workspace: Path
) -> None:
    # The start-up cycle built the index, then the sync's own `qmd update` found every file
    # unchanged: a fresh index reported "3 unchanged", and `status` in another process (the
    # CLI beside a server) showed `last_update: None`. (QMD's own counts: "files" mode.)
    router = make_router(tmp_path, workspace, documents="files")
    try:
        backend = router.backend("qmd")
        _wait(lambda: backend.cycle.last_update is not None)  # the start-up cycle built it
        [report] = router.sync(backends=["qmd"])
    finally:
        router.close()
    assert not report.errors
    assert (report.added, report.updated, report.unchanged, report.chunks) == (3, 0, 0, 3)
    other = make_router(tmp_path, workspace, update_on_boot=False, documents="files")
    try:
        status = other.status().backends[0]
    finally:
        other.close()
    assert status.details["last_update"]["status"] == "ok"
    assert status.details["last_update"]["counts"]["unchanged"] == 3  # the sync's own run
    assert status.details["last_embed"]["status"] == "skipped"
