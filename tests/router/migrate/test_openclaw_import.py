"""Coming from OpenClaw 2026.9: files made by the real CLI (tests/fixtures/openclaw-2026.9).

The fixture's agent `main` embedded with all-MiniLM-L6-v2 served as an OpenAI-compatible
endpoint; here the same endpoint is served on loopback (real vectors, real HTTP), so
"the model matches" is true exactly as it would be for a user of a remote provider.
"""

from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memory_router import Router, testing
from memory_router._config.openclaw import convert, read_openclaw
from memory_router._migrate.indexfile import IndexFile
from memory_router._migrate.migration import migrate
from memory_router.cli import build_cli
from memory_router.kit import get_plugin_manager

FIXTURE = Path(__file__).parents[2] / "fixtures" / "openclaw-2026.9" / "openclaw"


def run(args: list[str]) -> Result:
    return CliRunner().invoke(build_cli(get_plugin_manager(plugins=[testing])), args)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME whose ~/.openclaw is the fixture (databases decompressed)."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURE, home / ".openclaw")
    for packed in (home / ".openclaw" / "agents").glob("*/agent/*.sqlite.xz"):
        packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
        packed.unlink()
    monkeypatch.setenv("HOME", str(home))
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "MEMORY_ROUTER_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return home


class EmbeddingServer:
    """``POST /v1/embeddings`` with real MiniLM vectors; remembers every text sent."""

    def __init__(self, state: Path) -> None:
        config = state / "minilm.toml"
        config.write_text(
            f'workspace = "{state}"\nstate_dir = "{state}"\n[embedding]\nprovider = "minilm"\n'
            "[cache]\nenabled = false\n",
            encoding="utf-8",
        )
        self.router = Router.from_config(config)
        self.texts: list[str] = []
        self.url = ""

    def handle(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.texts.extend(texts)
        assert self.router.embedder is not None
        vectors = self.router.embedder.embed_documents(texts)
        data = [{"index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)]
        return {"data": data, "model": body.get("model")}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddingServer]:
    (tmp_path / "server").mkdir()
    embeddings = EmbeddingServer(tmp_path / "server")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps(embeddings.handle(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    embeddings.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield embeddings
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
        embeddings.router.close()


def point_at(home: Path, server: EmbeddingServer) -> None:
    """The fixture's config names the loopback port of the run that made it: use ours."""
    config = home / ".openclaw" / "openclaw.json"
    text = config.read_text(encoding="utf-8")
    old = text.split('baseUrl: "', 1)[1].split('"', 1)[0]
    config.write_text(text.replace(old, server.url), encoding="utf-8")


def agent_db(home: Path, agent: str) -> Path:
    return home / ".openclaw" / "agents" / agent / "agent" / "openclaw-agent.sqlite"


def test_config_from_openclaw_finds_the_2026_9_config_and_maps_it(home: Path) -> None:
    result = run(["config", "from-openclaw"])  # no path: ~/.openclaw/openclaw.json
    assert result.exit_code == 0, result.output
    toml = tomllib.loads(result.stdout)
    state = home / ".openclaw"
    assert toml["agent_id"] == "main"
    assert toml["workspace"] == str(state / "workspace")
    assert toml["embedding"]["provider"] == "openai"  # its openai-compatible adapter
    assert toml["embedding"]["model"] == "all-MiniLM-L6-v2"
    assert toml["embedding"]["remote"]["base_url"].startswith("http://127.0.0.1:")
    assert toml["sources"] == ["memory", "sessions"]  # rememberAcrossConversations' default
    assert toml["extra_paths"] == [str(state / "workspace" / "USER.md")]
    assert toml["citations"] == "on"
    assert toml["query"]["min_score"] == 0.3
    assert toml["chunking"] == {"tokens": 400, "overlap": 80, "structure": "openclaw"}
    assert toml["router"] == {"chain": ["sqlite"]}  # plugins.slots.memory = memory-core
    assert "not carried over: memory.search.remote.apiKey: secrets stay out" in result.stderr
    assert "fixture-key" not in result.stdout


def test_the_per_agent_override_and_openclaw_s_environment(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = tmp_path / "elsewhere.json"
    shutil.copyfile(home / ".openclaw" / "openclaw.json", moved)
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(moved))
    (home / ".openclaw" / "openclaw.json").unlink()  # only $OPENCLAW_CONFIG_PATH is left
    result = run(["config", "from-openclaw", "--agent-id", "work"])
    assert result.exit_code == 0, result.output
    toml = tomllib.loads(result.stdout)
    state = home / ".openclaw"
    assert toml["workspace"] == str(state / "workspace-work")
    assert toml["embedding"]["provider"] == "none"  # the agent's own value wins
    assert toml["query"] == {"min_score": 0.3, "max_results": 8}
    assert toml["extra_paths"] == [
        str(state / "workspace-work" / "USER.md"),
        str(state / "shared-notes"),
    ]
    missing = run(["config", "from-openclaw", "--agent-id", "nobody"])
    assert missing.exit_code == 1
    assert "no agent 'nobody'" in missing.output


def test_openclaw_chunking_reproduces_every_chunk_of_its_index(home: Path) -> None:
    """``structure = "openclaw"`` cuts each memory file exactly as OpenClaw 2026.9 did."""
    conversion = convert(read_openclaw(home / ".openclaw" / "openclaw.json"))
    overrides = {k: conversion.config[k] for k in ("workspace", "extra_paths", "chunking")}
    with Router.from_config(None, state_dir=str(home / "ours"), **overrides) as router:
        snapshot = router.snapshot()
        ours = {
            (c.path, c.start_line, c.end_line, c.hash)
            for doc in snapshot.documents
            for c in snapshot.chunks(doc)
        }
    with sqlite3.connect(agent_db(home, "main")) as db:
        theirs = set(
            db.execute(
                "SELECT path, start_line, end_line, hash FROM memory_index_chunks"
                " WHERE source = 'memory'"
            )
        )
    assert len(theirs) == 23
    assert theirs == ours


def test_import_openclaw_moves_everything_and_embeds_nothing_when_the_model_matches(
    home: Path, server: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_at(home, server)
    monkeypatch.setenv("OPENAI_API_KEY", "fixture-key")  # carried as a hint, not a value
    config = tmp_path / "memory-router.toml"
    args = ["import-openclaw", "-o", str(config), "--state-dir", str(tmp_path / "ours")]
    result = run([*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    moved = report["migration"]
    assert (report["agent"], report["layout"]) == ("main", "2026.9")
    assert moved["chunks"] == 24  # 23 memory chunks + the transcript's
    assert (moved["seeded"], moved["embedded"]) == (24, 0)
    assert moved["verify"]["overlap"] >= 0.8
    with sqlite3.connect(agent_db(home, "main")) as db:
        texts = {t for (t,) in db.execute("SELECT text FROM memory_index_chunks")}
    assert not texts & set(server.texts)  # no chunk text was sent to the provider
    sessions = report["transcripts"]
    assert (sessions["sessions"], sessions["events"]) == (1, 6)
    (transcript,) = Path(sessions["folder"]).glob("*.jsonl")
    assert len(transcript.read_text(encoding="utf-8").splitlines()) == 6
    not_carried = dict(map(tuple, report["not_carried"]))
    assert "memory.search.remote.apiKey" in not_carried
    assert "workspace/SOUL.md" in not_carried
    assert report["other_agents"] == ["work"]
    with Router.from_config(config) as router:
        hits = router.search("how big is the staging volume now?").results
        assert any(h.source == "sessions" and "200 GB" in h.snippet for h in hits)
        assert router.search("rescue greyhound").results[0].path == "memory/2026-09-02.md"
    again = run(args)
    assert again.exit_code == 1
    assert "exists" in again.output
    assert "--force" in again.output


def test_a_failed_import_says_the_config_is_written_and_how_to_run_again(
    home: Path, server: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_at(home, server)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the import cannot embed
    config = tmp_path / "memory-router.toml"
    args = ["import-openclaw", "-o", str(config), "--state-dir", str(tmp_path / "ours")]
    failed = run(args)
    assert failed.exit_code == 1
    assert "Error: no API key found for provider openai" in failed.output
    assert "Hint: export OPENAI_API_KEY" in failed.output
    assert f"the config is written to {config}: run again with --force" in failed.output
    assert config.is_file()
    monkeypatch.setenv("OPENAI_API_KEY", "fixture-key")
    again = run([*args, "--force"])
    assert again.exit_code == 0, again.output


def test_an_agent_database_of_another_model_is_re_embedded_through_the_cache(
    home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "hash.toml"
    config.write_text(
        f'workspace = "{home / ".openclaw" / "workspace"}"\nstate_dir = "{tmp_path / "s"}"\n'
        '[embedding]\nprovider = "hash"\n',
        encoding="utf-8",
    )
    source = agent_db(home, "main")
    assert IndexFile(source).index_fingerprint()["provider"] == "openai"  # type: ignore[index]
    pm = get_plugin_manager(plugins=[testing])
    with Router.from_config(config, plugin_manager=pm) as router:
        first = migrate(router, "sqlite", source_path=str(source))
        assert (first.mode, first.seeded) == ("rebuild", 0)
        assert first.embedded == first.chunks > 0
        second = migrate(router, "sqlite", source_path=str(source))
        assert (second.embedded, second.cache_hits) == (0, second.chunks)


def test_migrate_from_path_reads_an_fts_only_agent_database_and_names_both_layouts(
    home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "hash.toml"
    config.write_text(
        f'workspace = "{home / ".openclaw" / "workspace-work"}"\nstate_dir = "{tmp_path}"\n'
        '[embedding]\nprovider = "hash"\n',
        encoding="utf-8",
    )
    work = agent_db(home, "work")
    result = run(["--config", str(config), "migrate", "--from-path", str(work), "--verify", "3"])
    assert result.exit_code == 0, result.output
    assert "rebuild" in result.output
    bogus = tmp_path / "not-an-index.sqlite"
    sqlite3.connect(bogus).close()
    refused = run(["--config", str(config), "migrate", "--from-path", str(bogus)])
    assert refused.exit_code == 1
    assert "openclaw-agent.sqlite" in refused.output
    assert "memory/<agent>.sqlite" in refused.output
