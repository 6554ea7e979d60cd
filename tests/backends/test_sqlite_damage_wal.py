"""A file cut short in the middle of a WAL checkpoint is not damage: the WAL completes it.

Seen as a migration that could not resume: a SIGKILL during a checkpoint of the staging
file left its header counting pages the file did not have yet, the size check called it
truncated, and the staging store refused every write.
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
from pathlib import Path

from memory_router_sqlite import choose_driver
from memory_router_sqlite._damage import diagnose


def _mid_checkpoint_copy(tmp_path: Path) -> Path:
    live = tmp_path / "live.sqlite"
    conn = sqlite3.connect(live)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t(x TEXT)")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
    conn.commit()
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(live, copy)  # taken while the WAL holds the new pages
    shutil.copyfile(f"{live}-wal", f"{copy}-wal")
    conn.close()
    with copy.open("r+b") as file:  # the header of page 1 already checkpointed, the rest not
        header = bytearray(file.read(100))
        header[28:32] = struct.pack(">I", struct.unpack(">I", header[28:32])[0] + 20)
        header[92:96] = header[24:28]
        file.seek(0)
        file.write(header)
    return copy


def test_a_file_shorter_than_its_header_is_sound_while_its_wal_holds_the_pages(
    tmp_path: Path,
) -> None:
    copy = _mid_checkpoint_copy(tmp_path)
    driver = choose_driver(vector=False, extension_path="")
    assert diagnose(copy, driver, busy_timeout_ms=1000) is None
    rows = sqlite3.connect(copy).execute("SELECT COUNT(*) FROM t").fetchone()[0]
    assert rows == 200


def test_without_its_wal_the_same_file_is_truncated(tmp_path: Path) -> None:
    copy = _mid_checkpoint_copy(tmp_path)
    Path(f"{copy}-wal").unlink()
    driver = choose_driver(vector=False, extension_path="")
    assert "truncated" in (diagnose(copy, driver, busy_timeout_ms=1000) or "")
