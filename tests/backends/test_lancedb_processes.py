"""Several processes share one LanceDB store: 2 writers and 4 readers, a few seconds.

The writers store entries in one workspace and sync; the readers search throughout. At
the end nothing is lost or duplicated, no reader saw an error, and every long-lived reader
comes to see the final state (how fast is timed by ``bench/bench_lancedb.py --processes``,
which runs the same for 30 s, on local disk or the loopback S3 server — no timed
assertions here, the machine is shared).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memory_router import Router, testing

pytestmark = pytest.mark.slow

WORKER = Path(__file__).resolve().parent.parent / "s3_helpers" / "lance_worker.py"
SECONDS = 3.0
INTERVAL_S = 0.5


def start(role: str, config: Path, out: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), role, str(config), str(SECONDS), str(out), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def finish(process: subprocess.Popen[bytes], out: Path) -> dict[str, Any]:
    try:
        _, stderr = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=10)
        raise
    assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def test_two_writers_four_readers_share_one_store(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", {"MEMORY.md": "# Kiln log\n"})
    settings = {"uri": str(tmp_path / "lance"), "read_consistency_interval_s": INTERVAL_S}
    config = testing.router_config(
        tmp_path, workspace, backend="lancedb", embedding="hash", settings=settings
    )
    assert config.file is not None
    config_path = Path(config.file)
    with Router.from_config(config, plugins=[testing]) as router:
        router.sync()  # the first generation exists before the race starts
    outs = [tmp_path / f"out-{n}.json" for n in range(6)]
    writers = [start("writer", config_path, outs[n], str(n)) for n in range(2)]
    readers = [start("reader", config_path, outs[n]) for n in range(2, 6)]
    try:
        written, read = _run(config, writers, readers, outs)
    finally:
        for process in (*writers, *readers):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    _check(written, read, *_final_state(config))


def _final_state(config: Any) -> tuple[set[str], list[str], list[str]]:
    with Router.from_config(config, plugins=[testing]) as router:
        journal = {e.id for e in router.entries()}
        lance: Any = router.backend("lancedb")
        tables = lance.store.tables(lance.store.pointer().generation)
        entry_ids = tables.entries.to_arrow().column("id").to_pylist()
        chunk_ids = tables.chunks.to_arrow().column("id").to_pylist()
    return journal, entry_ids, chunk_ids


def _run(
    config: Any,
    writers: list[subprocess.Popen[bytes]],
    readers: list[subprocess.Popen[bytes]],
    outs: list[Path],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    written = [finish(p, out) for p, out in zip(writers, outs[:2], strict=True)]
    with Router.from_config(config, plugins=[testing]) as router:
        assert not router.sync()[0].errors  # a writer may have synced an older journal last
        total = len(router.entries())
    for out in outs[2:]:
        # Renamed into place: a reader polling for it never reads it empty.
        partial = out.with_suffix(".done-partial")
        partial.write_text(str(total), encoding="utf-8")
        partial.replace(out.with_suffix(".done"))
    read = [finish(p, out) for p, out in zip(readers, outs[2:], strict=True)]
    return written, read


def _check(
    written: list[dict[str, Any]],
    read: list[dict[str, Any]],
    journal: set[str],
    entry_ids: list[str],
    chunk_ids: list[str],
) -> None:
    stored = {i for w in written for i in w["ids"]}
    assert all(w["ids"] for w in written), "each writer stored something"
    assert not [e for w in written for e in w["errors"]]
    assert stored == journal
    assert set(entry_ids) == journal  # nothing lost
    assert not [i for i, n in Counter(entry_ids).items() if n > 1]  # nothing twice
    assert not [i for i, n in Counter(chunk_ids).items() if n > 1]
    for result in read:
        assert result["errors"] == []
        assert result["searches"] > 0
        assert result["final_count"] == len(journal)
