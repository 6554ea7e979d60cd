"""Reads through pylance (``reader = "auto"``) against reads through lancedb on one store.

A process that has not written reads a local store through pylance: a one-shot CLI
search imports no lancedb. The two paths must give the same hits on the same table
(hybrid, keyword-only, filtered by source or category), a sync that finds nothing to
write must stay on the light path, the first write must move the store to lancedb, and
object storage always reads through lancedb.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from memory_router import Hit, Router, testing
from memory_router.kit import SearchRequest
from s3_helpers.moto_server import BUCKET, S3Server

FILES = {
    "MEMORY.md": "# Memory\n\nThe kiln reached 1240 degrees on the glaze firing.\n",
    "memory/a.md": "# Pottery\n\nTrimmed six bowls; the celadon glaze crawled on two.\n",
    "memory/b.md": "# Garden\n\nPlanted garlic before the first frost in October.\n",
    "memory/c.md": "# Kiln\n\nThe glaze firing took nine hours; the kiln cooled overnight.\n",
}
QUERIES = ("glaze firing", "kiln degrees 1240", "garlic frost", "celadon bowls", "zebra")
FILTERS: list[dict[str, Any]] = [{}, {"sources": ("memory",)}, {"category": "fact"}]


def router(tmp_path: Path, embedding: str = "hash", **settings: Any) -> Router:
    workspace = tmp_path / "workspace"
    if not workspace.exists():
        testing.write_workspace(workspace, FILES)
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="lancedb",
        embedding=embedding,
        settings={"uri": str(tmp_path / "lance"), **settings},
        sync={"on_search": False},
    )
    return Router.from_config(config, plugins=[testing])


def hits(r: Router, query: str, **filters: Any) -> tuple[Hit, ...]:
    request = SearchRequest(query=query, max_results=10, min_score=0.0, candidates=20, **filters)
    return r.backend("lancedb").search(request).hits


def light(r: Router) -> bool:
    return bool(r.backend("lancedb").store.light)  # type: ignore[attr-defined]


@pytest.mark.parametrize("embedding", ["hash", "none"])
def test_light_reads_give_the_same_hits_as_lancedb(tmp_path: Path, embedding: str) -> None:
    with router(tmp_path, embedding, reader="lancedb") as writer:
        writer.sync()
        writer.store("The glaze firing schedule is set by the kiln log", category="fact")
        writer.store("Garlic goes in before the frost", category="decision")
        writer.sync()
    with (
        router(tmp_path, embedding, reader="lancedb") as heavy,
        router(tmp_path, embedding) as fast,
    ):
        for query in QUERIES:
            for filters in FILTERS:
                expected = hits(heavy, query, **filters)
                assert hits(fast, query, **filters) == expected, (query, filters)
        assert light(fast)
        assert not light(heavy)
        assert hits(fast, "glaze firing")  # the comparison compared something
        assert any(h.entry is not None for h in hits(fast, "glaze firing schedule"))


def test_a_sync_with_nothing_to_write_stays_light_and_a_write_leaves_it(tmp_path: Path) -> None:
    with router(tmp_path, reader="lancedb") as writer:
        writer.sync()
    with router(tmp_path) as r:
        report = r.sync()[0]
        assert (report.unchanged, report.added, report.chunks) == (4, 0, 4)
        assert not report.errors
        assert light(r)
        (tmp_path / "workspace" / "memory" / "d.md").write_text(
            "# Bread\n\nFed the sourdough starter twice today.\n", encoding="utf-8"
        )
        report = r.sync()[0]
        assert (report.added, report.chunks) == (1, 5)
        assert not light(r)  # the write went through lancedb, and so do reads now
        assert hits(r, "sourdough starter")[0].path == "memory/d.md"


def test_a_light_reader_follows_another_writer(tmp_path: Path) -> None:
    with router(tmp_path, reader="lancedb") as writer, router(tmp_path) as reader:
        writer.sync()
        assert hits(reader, "glaze firing")
        assert "memory/d.md" not in {h.path for h in hits(reader, "sourdough starter")}
        (tmp_path / "workspace" / "memory" / "d.md").write_text(
            "# Bread\n\nFed the sourdough starter twice today.\n", encoding="utf-8"
        )
        (tmp_path / "workspace" / "memory" / "b.md").unlink()
        writer.sync()
        assert hits(reader, "sourdough starter")[0].path == "memory/d.md"
        assert "memory/b.md" not in {h.path for h in hits(reader, "garlic frost")}
        assert light(reader)


def test_lancedbs_own_vector_search_gives_the_same_hits_light(tmp_path: Path) -> None:
    with router(tmp_path, reader="lancedb", vector_search="lance") as heavy:
        heavy.sync()
        expected = [hits(heavy, q) for q in QUERIES]
    with router(tmp_path, vector_search="lance") as fast:
        assert [hits(fast, q) for q in QUERIES] == expected
        assert light(fast)


@pytest.mark.slow
def test_object_storage_reads_through_lancedb(tmp_path: Path, s3_server: S3Server) -> None:
    settings = {
        "uri": f"s3://{BUCKET}/light/{uuid.uuid4().hex}",
        "storage_options": s3_server.options(),
    }
    with router(tmp_path / "s3", **settings) as remote, router(tmp_path / "local") as local:
        remote.sync()
        local.sync()
        assert not light(remote)
        found = hits(remote, "glaze firing")
        assert [(h.path, h.score) for h in found] == [
            (h.path, h.score) for h in hits(local, "glaze firing")
        ]


# Which of these modules the command imported, printed at exit (lance.lance: pylance's
# compiled engine; lance: its Python package, which imports pyarrow.dataset and .compute;
# a thread pool and shutil: what a local read needs neither of).
WATCHED = ("lancedb", "lance", "lance.lance", "pyarrow.dataset", "pyarrow.compute",
           "concurrent.futures", "shutil")  # fmt: skip
CHECK = (
    "import atexit, runpy, sys\n"
    f"atexit.register(lambda: print('IMPORTED', *(m for m in {WATCHED!r} if m in sys.modules),"
    " file=sys.stderr))\n"
    "sys.argv = ['memory-router', *sys.argv[1:]]\n"
    "runpy.run_module('memory_router', run_name='__main__')\n"
)


def imported(process: subprocess.CompletedProcess[str]) -> set[str]:
    line = next(x for x in process.stderr.splitlines() if x.startswith("IMPORTED"))
    return set(line.split()[1:])


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHECK, "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")},
    )


@pytest.mark.slow
def test_a_cli_search_imports_no_lancedb_and_answers_as_lancedb_would(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", FILES)
    configs = {}
    for reader in ("auto", "lancedb"):
        configs[reader] = testing.write_config(
            tmp_path / f"{reader}.toml",
            {
                "workspace": str(workspace),
                "state_dir": str(tmp_path / "state"),
                "embedding": {"provider": "none"},
                "router": {"chain": ["lancedb"]},
                "backends": {"lancedb": {"reader": reader}},
            },
        )
    assert cli(configs["lancedb"], "index").returncode == 0
    fast = cli(configs["auto"], "search", "glaze firing", "--json", "--local")
    heavy = cli(configs["lancedb"], "search", "glaze firing", "--json", "--local")
    assert fast.returncode == 0, fast.stderr
    assert heavy.returncode == 0, heavy.stderr
    # pylance's engine read it; neither lancedb nor pylance's Python package was loaded
    assert imported(fast) == {"lance.lance"}
    assert "lancedb" in imported(heavy)
    answer = json.loads(fast.stdout)
    assert answer["results"] == json.loads(heavy.stdout)["results"]
    assert answer["results"][0]["path"] in {"MEMORY.md", "memory/c.md"}
    (workspace / "memory" / "d.md").write_text("# Bread\n\nThe sourdough starter.\n", "utf-8")
    edited = cli(configs["auto"], "search", "sourdough", "--json", "--local")
    assert "lancedb" in imported(edited)  # its sync wrote the new file through lancedb
    assert json.loads(edited.stdout)["results"][0]["path"] == "memory/d.md"
