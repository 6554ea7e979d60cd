"""The QMD backend's pure parts: locating QMD, settings, sub-queries, parsing, preflight."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_router import BackendUnavailable, ConfigError, Router, load_config
from memory_router_qmd import QmdModels, QmdSettings
from memory_router_qmd._collections import Collection, ensure_config, managed_collections
from memory_router_qmd._locate import locate
from memory_router_qmd._models import Preflight
from memory_router_qmd._queries import clean_term, lex_terms, searches, typed_document
from memory_router_qmd._results import parse_items, parse_snippet, split_file, to_hits
from memory_router_qmd._update import Outcome, parse_embed, parse_indexed, reported_counts


def test_missing_command_names_what_is_missing_and_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable) as raised:
        locate(QmdSettings(command=str(tmp_path / "nope" / "qmd.js")), backend="qmd")
    assert "does not exist" in raised.value.message
    assert raised.value.hint is not None
    assert "scripts/install-qmd.sh" in raised.value.hint


def test_non_executable_command_is_refused_and_js_runs_under_node(tmp_path: Path) -> None:
    program = tmp_path / "qmd"
    program.write_text("#!/bin/sh\n")
    with pytest.raises(BackendUnavailable, match="not executable"):
        locate(QmdSettings(command=str(program)), backend="qmd")
    script = tmp_path / "qmd.js"
    script.write_text("")
    node = tmp_path / "node"
    node.write_text("#!/bin/sh\n")
    node.chmod(0o755)
    found = locate(QmdSettings(command=str(script), node=str(node)), backend="qmd")
    assert found.argv == (str(node), str(script))


def test_the_launcher_runs_under_the_chosen_node_and_relative_paths_follow_the_config(
    tmp_path: Path,
) -> None:
    # QMD's bin/qmd is `#!/usr/bin/env node`: left to its shebang it runs under the first
    # node on PATH (Node 20 segfaults), whatever `node` says.
    launcher = tmp_path / "project/.tools/qmd/bin/qmd"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/usr/bin/env node\nimport './x.js'\n")
    launcher.chmod(0o755)
    node = tmp_path / "project/.tools/node"
    node.write_text("#!/bin/sh\n")
    node.chmod(0o755)
    config = tmp_path / "project/memory-router.toml"
    config.write_text(f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n")
    expand = load_config(config, environ={}).expand
    settings = QmdSettings(command=".tools/qmd/bin/qmd", node=".tools/node")
    found = locate(settings, backend="qmd", expand=expand)
    assert found.argv == (str(node), str(launcher))
    with pytest.raises(BackendUnavailable) as raised:
        locate(QmdSettings(command="bin/qmd"), backend="qmd", expand=expand)
    assert str(tmp_path / "project/bin/qmd") in raised.value.message
    assert "config file's folder" in str(raised.value.hint)


def test_settings_are_validated_through_the_config(tmp_path: Path) -> None:
    def router(line: str) -> Router:
        path = tmp_path / "c.toml"
        path.write_text(f"state_dir = {json.dumps(str(tmp_path))}\n[backends.qmd]\n{line}\n")
        return Router(load_config(path, environ={}))

    with pytest.raises(ConfigError, match="search_mode"):
        router('search_mode = "fuzzy"')
    with pytest.raises(ConfigError, match="timeout"):
        router("search_timeout_s = 0")
    with pytest.raises(ConfigError, match="absolute"):
        router('models = { embed = "models/e.gguf" }')
    with pytest.raises(ConfigError, match="index"):
        router('index = "../escape"')
    with pytest.raises(ConfigError, match="unknown key"):
        router('comand = "qmd"')


@pytest.mark.parametrize(
    ("term", "clean"),
    [('"quoted', "quoted"), ("-neg --x", "neg x"), ("a\nb\x01c", "a b c"), ("---", "")],
)
def test_terms_are_sanitised_for_qmds_parser(term: str, clean: str) -> None:
    assert clean_term(term) == clean


def test_lex_sub_queries_come_from_keywords_with_a_raw_token_fallback() -> None:
    terms = lex_terms("What did Caroline say about the adoption agency?")
    assert "caroline" in terms
    assert "adoption" in terms
    assert "the" not in terms
    assert lex_terms("the of and") == ["the", "of", "and"]  # only stop words: raw tokens
    assert len(lex_terms(" ".join(f"word{i}" for i in range(30)))) == 10
    assert searches("vsearch", "-x how to ship") == [{"type": "vec", "query": "x how to ship"}]
    query = searches("query", "ship rollback")
    assert [s["type"] for s in query] == ["lex", "lex", "vec"]
    assert typed_document(query) == "lex: ship\nlex: rollback\nvec: ship rollback"


def test_files_and_snippet_headers_are_parsed() -> None:
    assert split_file("qmd://memory-dir/a b/#c.md?index=memrouter") == ("memory-dir", "a b/#c.md")
    assert split_file("memory-root/MEMORY.md") == ("memory-root", "MEMORY.md")
    # MCP numbers every line, header included, starting at `line` (off by two).
    mcp = "4: @@ -3,4 @@ (2 before, 3 after)\n5: - Bob\n6: - rollback\n7: \n8: ## Other"
    assert parse_snippet(mcp, 4) == (3, 6, "- Bob\n- rollback\n\n## Other")
    cli = "@@ -7,2 @@ (6 before, 0 after)\n\nIf the canary fails"
    assert parse_snippet(cli, 8) == (7, 8, "If the canary fails")
    assert parse_snippet("plain\ntext", 5) == (5, 6, "plain\ntext")


def test_hits_map_to_workspace_paths_with_rank_scores(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    collections = {
        "memory-dir": Collection(name="memory-dir", path=workspace / "memory", pattern="**/*.md"),
        "extra-1": Collection(name="extra-1", path=tmp_path / "notes", pattern="**/*.md"),
        "sessions": Collection(
            name="sessions", path=tmp_path / "export", pattern="**/*.md", source="sessions"
        ),
    }
    raw = parse_items(
        [
            {"file": "qmd://memory-dir/x/a.md?index=m", "score": 0.2, "snippet": "@@ -2,1 @@\nA"},
            {"file": "qmd://gone/b.md", "score": 0.9, "snippet": "@@ -1,1 @@\nB"},
            {"file": "extra-1/c.md", "score": 0.1, "snippet": "@@ -1,1 @@\nC"},
            {"file": "sessions/s.jsonl.md", "score": 0.1, "snippet": "@@ -3,2 @@\nUser: hi"},
        ],
        backend="qmd",
    )
    hits = to_hits(raw, collections=collections, workspace=workspace, backend="qmd", scoring="rank")
    assert [(h.path, h.start_line, h.end_line) for h in hits] == [
        ("memory/x/a.md", 2, 2),
        ("../notes/c.md", 1, 1),
        ("sessions/s.jsonl", 1, 2),
    ]
    assert [round(h.score, 3) for h in hits] == [1.0, 0.909, 0.833]
    assert hits[2].source == "sessions"
    mapped = to_hits(
        raw,
        collections=collections,
        workspace=workspace,
        backend="qmd",
        scoring="rank",
        line_maps={"s.jsonl.md": [4, 7]},
    )
    assert (mapped[2].start_line, mapped[2].end_line) == (4, 7)  # JSONL lines


def test_update_and_embed_outputs_are_classified() -> None:
    output = (
        "Indexed: 1 new, 2 updated, 3 unchanged, 0 removed\n"
        "Indexed: 0 new, 0 updated, 4 unchanged, 1 removed\n"
    )
    assert parse_indexed(output) == {"added": 1, "updated": 2, "unchanged": 7, "removed": 1}
    assert parse_embed("✓ Done! Embedded 12 chunks from 3 documents in 3s") == (
        "done",
        {"chunks": 12, "documents": 3},
    )
    assert parse_embed("✓ All content hashes already have embeddings.")[0] == "nothing-to-do"
    assert parse_embed("Another embed process is already running. Skipping.")[0] == "busy"
    assert parse_embed("⚠ 2 chunks still failed after retries")[0] == "partial"


def test_a_sync_reports_what_earlier_cycles_changed_and_not_as_unchanged() -> None:
    own = Outcome(
        step="update",
        status="ok",
        at=datetime.now(UTC),
        counts={"added": 1, "updated": 0, "unchanged": 9, "removed": 0},
    )
    # The start-up cycle added 8 files and updated 1; this sync's update added 1 more.
    changes = {"added": 9, "updated": 1, "removed": 2}
    assert reported_counts(own, changes) == {
        "added": 9,
        "updated": 1,
        "removed": 2,
        "unchanged": 0,
    }
    alone = {"added": 1, "updated": 0, "removed": 0}
    assert reported_counts(own, alone)["unchanged"] == 9
    # What to_dict writes (the record status reads in another process) reads back.
    assert Outcome.from_dict("update", own.to_dict()) == own
    assert Outcome.from_dict("update", {"status": "ok"}) is None
    assert Outcome.from_dict("update", None) is None


def test_preflight_checks_gguf_magic_and_picks_the_strongest_mode(tmp_path: Path) -> None:
    good = tmp_path / "e.gguf"
    good.write_bytes(b"GGUF\x03\x00\x00\x00")
    bad = tmp_path / "r.gguf"
    bad.write_bytes(b"<html>")
    check = Preflight.check(QmdModels(embed=str(good), rerank=str(bad)))
    mode, notes = check.effective("query")
    assert mode == "query"  # hybrid retrieval, rerank off
    assert notes == (f"qmd: query without reranking (rerank model {bad} is not a GGUF file)",)
    assert Preflight.check(QmdModels()).effective("vsearch")[0] == "search"
    missing = Preflight.check(QmdModels(embed=str(tmp_path / "none.gguf")))
    assert "does not exist" in str(missing.problems["embed"])


def test_index_yaml_is_written_only_when_it_changes(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (tmp_path / "extra").mkdir()
    (tmp_path / "one.md").write_text("# one\n")
    config = load_config(
        None,
        environ={},
        overrides={
            "workspace": str(workspace),
            "extra_paths": [
                str(tmp_path / "extra"),
                str(tmp_path / "one.md"),
                str(tmp_path / "no"),
            ],
        },
    )
    collections = managed_collections(config, tmp_path / "export")
    assert [(c.name, c.path, c.pattern) for c in collections] == [
        ("memory-root", workspace, "MEMORY.md"),
        ("memory-dir", workspace / "memory", "**/*.md"),
        ("extra-1", tmp_path / "extra", "**/*.md"),
        ("extra-2", tmp_path, "one.md"),
    ]
    target = tmp_path / "cfg" / "memrouter.yml"
    assert ensure_config(target, collections, {"embed": "/m/e.gguf"})
    assert not ensure_config(target, collections, {"embed": "/m/e.gguf"})
    text = target.read_text()
    assert '"memory-dir":\n    path: "' + str(workspace / "memory") + '"' in text
    assert 'embed: "/m/e.gguf"' in text
    assert 'rerank: "hf:' in text


def test_install_script_fails_clearly_when_the_prefix_cannot_be_made(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "install-qmd.sh"
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = subprocess.run(
        [str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "QMD_PREFIX": str(blocker / "qmd")},
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == f"install-qmd: cannot create {blocker / 'qmd'}"


@pytest.mark.parametrize("folder", ["team #2", "50% done", "why?"])
def test_index_stats_read_paths_with_uri_characters(tmp_path: Path, folder: str) -> None:
    import sqlite3
    from contextlib import closing

    from memory_router_qmd._index import read_stats

    path = tmp_path / folder / "memrouter.sqlite"
    path.parent.mkdir()
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE documents (collection TEXT, path TEXT, active INTEGER)")
        db.executemany(
            "INSERT INTO documents VALUES (?, ?, 1)",
            [("memory-dir-main", "a.md"), ("memory-dir-main", "b.md")],
        )
        db.commit()
    stats = read_stats(path)
    assert stats.error is None
    assert stats.documents == {"memory-dir-main": 2}


def test_the_chunk_mirror_maps_every_line_back_and_names_files_qmd_indexes(
    tmp_path: Path, write_workspace: Any
) -> None:
    from memory_router_qmd._mirror import MANIFEST, load_manifest, write_mirror

    workspace = write_workspace(
        {
            ".hidden.md": "# Dot\n\nA dotted note.\n",
            "memory/a.md": "x\n",
            "memory/pets.md": "# Pets\n\n- Dana adopted Biscuit.\n- Tom has a cat.\n",
        }
    )
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    records = [
        {"type": "message", "message": {"role": role, "content": f"turn {n}"}}
        for n, role in enumerate(["user", "assistant"] * 3)
    ]
    lines = [json.dumps({"type": "session", "id": "s"})]
    lines += [json.dumps(r) for r in records]
    (sessions / "chat.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = load_config(
        None,
        environ={},
        overrides={
            "workspace": str(workspace),
            "state_dir": str(tmp_path / "state"),
            "sources": ["memory", "sessions"],
            "sessions_dir": str(sessions),
        },
    )
    router = Router(config)
    try:
        snapshot = router.snapshot()
    finally:
        router.close()
    folder = tmp_path / "mirror"
    report = write_mirror(snapshot, folder)
    manifest = load_manifest(folder / MANIFEST)
    assert report.files["added"] == len({e.path for e in manifest.values()}) >= 2
    for name, entry in manifest.items():
        assert not any(part.startswith(".") for part in name.split("/"))
        text = (folder / name).read_text(encoding="utf-8").rstrip("\n").split("\n")
        if entry.path == "sessions/chat.jsonl":
            # each mirror line maps to the JSONL line of its message
            assert [entry.source_line(k) for k in range(1, len(text) + 1)] == list(range(2, 8))
            assert entry.source == "sessions"
        else:
            source = (workspace / entry.path).read_text(encoding="utf-8").split("\n")
            assert text[entry.lead :] == source[entry.start - 1 : entry.end]
            assert entry.source_line(1) == entry.start  # a context line stands for it
            assert entry.source_line(len(text)) == entry.end
    # each bullet is a chunk led by its headings: "# Pets" then the bullet's own line
    bullets = [e for e in manifest.values() if e.path == "memory/pets.md" and e.lead]
    assert sorted((e.start, e.end, e.lead) for e in bullets) == [(3, 3, 1), (4, 4, 1)]
    again = write_mirror(snapshot, folder)
    assert (again.written, again.removed, again.files["unchanged"]) == (0, 0, report.files["added"])
