"""``get`` cannot be raced out of the workspace (issue #14.6).

A writer thread keeps swapping a folder on the path for a symbolic link to a folder
outside the workspace (and back) while ``get`` reads the same path thousands of times:
no read may return the outside file.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from memory_router import InvalidInput, Router

pytestmark = pytest.mark.slow

INSIDE = "# Inside\n\nthe real note\n"
OUTSIDE = "# Outside\n\nTOP SECRET from outside the workspace\n"


def swap_forever(folder: Path, outside: Path, stop: threading.Event) -> int:
    real = folder.with_name(folder.name + ".real")
    swaps = 0
    while not stop.is_set():
        os.rename(folder, real)
        os.symlink(outside, folder)
        os.unlink(folder)
        os.rename(real, folder)
        swaps += 1
    return swaps


def test_a_folder_swapped_for_a_link_never_leads_outside(
    tmp_path: Path,
    write_workspace,
    write_config,  # type: ignore[no-untyped-def]
) -> None:
    workspace = write_workspace({"MEMORY.md": "# M\n", "memory/deep/note.md": INSIDE})
    outside = tmp_path / "outside" / "deep"
    outside.mkdir(parents=True)
    (outside / "note.md").write_text(OUTSIDE)
    router = Router.from_config(write_config('[embedding]\nprovider = "none"\n'))
    stop = threading.Event()
    swaps: list[int] = []
    writer = threading.Thread(
        target=lambda: swaps.append(swap_forever(workspace / "memory" / "deep", outside, stop))
    )
    seen = {"inside": 0, "missing": 0, "refused": 0}
    writer.start()
    try:
        deadline = time.monotonic() + 3.0
        reads = 0
        while reads < 5000 or (time.monotonic() < deadline and reads < 200_000):
            try:
                text = router.get("memory/deep/note.md").text
            except InvalidInput:
                seen["refused"] += 1
            else:
                assert "TOP SECRET" not in text
                seen["inside" if text == INSIDE else "missing"] += 1
                assert text in (INSIDE, "")
            reads += 1
    finally:
        stop.set()
        writer.join(timeout=10)
        router.close()
    assert swaps
    assert swaps[0] > 100
    assert seen["inside"] > 0
    assert seen["missing"] + seen["refused"] > 0
