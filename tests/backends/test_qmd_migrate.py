"""QMD as a migration target: it re-indexes the Markdown itself and is verified the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_router import migrate
from qmd_fakes.helpers import make_router

# qmd: skips where QMD is missing and fails under CI (tests/conftest.py).
pytestmark = [pytest.mark.qmd, pytest.mark.slow]

NOTES = {
    "MEMORY.md": "# Memory\n\nThe user prefers green tea over coffee.\nPriya leads billing.\n",
    "memory/2026-11-01.md": "# Trip\n\nBooked flights to Lisbon for the conference.\n",
    "memory/2026-11-02.md": "# CI\n\nThe flaky job depended on the local timezone.\n",
}


def test_sqlite_to_qmd_re_indexes_the_markdown_and_verifies(
    tmp_path: Path, write_workspace
) -> None:  # type: ignore[no-untyped-def]
    workspace = write_workspace(NOTES)
    with make_router(tmp_path, workspace, update_on_boot=False) as router:
        router.sync(backends=["sqlite"])
        report = migrate(router, "qmd", source="sqlite", verify=3, queries=["Lisbon conference"])
        assert report.mode == "rebuild"
        assert "'qmd' builds its own index from the Markdown" in report.reason
        assert report.embedded == 0
        checked = report.verify
        assert checked is not None
        assert checked.queries == 4
        assert checked.target_chunks > 0
        assert 0.0 < checked.overlap <= 1.0  # reported, not assumed: another engine ranks
        assert checked.top_hit_share == 1.0  # each query finds its own passage first
        hits = router.search("Lisbon conference").results
        assert hits[0].path == "memory/2026-11-01.md"
        assert hits[0].backend == "qmd"
