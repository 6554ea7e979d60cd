"""Every kind of damage to the SQLite index heals: found on open, moved aside, rebuilt.

Each case builds a real index (hashing embedder, so vectors and the embedding cache are
involved), damages the file the way a crash, a disk or a person would, then opens it
again: the damage is reported once, the index is rebuilt from the Markdown with every
vector from the embedding cache, and searches answer as before.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_router import (
    BackendStatus,
    BackendUnavailable,
    MemoryRouterError,
    Router,
    testing,
)
from memory_router.kit import SearchRequest
from memory_router_sqlite import choose_driver, connect
from memory_router_sqlite._damage import unwritable_hint

NOTES = {
    f"memory/note-{i:04d}.md": f"# note {i}\n\nfact number {i} about topic{i % 7}\n"
    for i in range(12)
}


def make(tmp_path: Path, workspace: Path, **kwargs: Any) -> Router:
    config = testing.router_config(
        tmp_path, workspace, backend="sqlite", embedding="hash", **kwargs
    )
    return Router.from_config(config, plugins=[testing])


def _sql(*statements: str) -> Callable[[Path], None]:
    def damage(db: Path) -> None:
        conn = sqlite3.connect(db)
        try:
            for statement in statements:
                conn.execute(statement)
            conn.commit()
        finally:
            conn.close()

    return damage


def _truncate_half(db: Path) -> None:
    size = db.stat().st_size
    with db.open("r+b") as file:
        file.truncate(size // 2)


def _overwrite(offset: Callable[[int], int], length: int) -> Callable[[Path], None]:
    def damage(db: Path) -> None:
        at = offset(db.stat().st_size)
        with db.open("r+b") as file:
            file.seek(at)
            file.write(os.urandom(length))

    return damage


def _replace_with(content: bytes) -> Callable[[Path], None]:
    return lambda db: db.write_bytes(content)


def _directory(db: Path) -> None:
    db.unlink()
    (db / "inside").mkdir(parents=True)


def _wrong_dimension(db: Path) -> None:
    driver = choose_driver(vector=True, extension_path="")
    conn = connect(driver, db, busy_timeout_ms=1000)
    try:
        conn.execute("DROP TABLE chunks_vec")
        conn.execute(
            "CREATE VIRTUAL TABLE chunks_vec USING vec0(id TEXT PRIMARY KEY,"
            " embedding FLOAT[8] distance_metric=cosine)"
        )
    finally:
        conn.close()


def _wal_from_a_crash(db: Path) -> None:
    """Committed frames left in the -wal, never checkpointed (the writer was killed)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("INSERT INTO meta (key, value) VALUES ('written-before-the-crash', '1')")
    conn.commit()
    saved = {suffix: Path(f"{db}{suffix}").read_bytes() for suffix in ("", "-wal")}
    conn.close()  # a clean close checkpoints; the copies taken above did not see it
    for suffix, data in saved.items():
        Path(f"{db}{suffix}").write_bytes(data)
    Path(f"{db}-shm").unlink(missing_ok=True)


def _garbage_wal(db: Path) -> None:
    Path(f"{db}-wal").write_bytes(os.urandom(8192))


def _deleted_keep_companions(db: Path) -> None:
    Path(f"{db}-wal").write_bytes(os.urandom(4096))
    db.unlink()


DAMAGE: dict[str, tuple[Callable[[Path], None], bool]] = {
    # name: (how to damage it, whether the file must be moved aside as damaged)
    "empty file": (_replace_with(b""), False),
    "half-truncated file": (_truncate_half, True),
    "random header": (_overwrite(lambda size: 0, 100), True),
    "not a SQLite file": (_replace_with(b"# just some notes\n" * 400), True),
    "a directory in its place": (_directory, True),
    "a damaged page in the middle": (_overwrite(lambda size: size // 2, 8192), True),
    "dropped chunk rows": (_sql("DELETE FROM chunks WHERE rowid % 2 = 0"), True),
    # Chunks without file rows are what a migration leaves: the next sync adopts them.
    "dropped file rows": (_sql("DELETE FROM files"), False),
    "missing FTS table": (_sql("DROP TABLE chunks_fts"), True),
    "emptied FTS table": (_sql("DELETE FROM chunks_fts"), True),
    "vector table of the wrong dimension": (_wrong_dimension, True),
    "missing chunks table": (_sql("DROP TABLE chunks"), True),
    "lost index metadata": (_sql("DELETE FROM meta"), False),
    "WAL left from a crash": (_wal_from_a_crash, False),
    "garbage WAL": (_garbage_wal, False),
    "index deleted, companions left": (_deleted_keep_companions, False),
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return testing.write_workspace(tmp_path / "ws", NOTES)


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_every_kind_of_damage_heals(tmp_path: Path, workspace: Path, kind: str) -> None:
    with make(tmp_path, workspace) as router:
        built = router.sync()[0]
    db = tmp_path / "state/agents/main/memory.sqlite"
    damage, moved = DAMAGE[kind]
    damage(db)

    with make(tmp_path, workspace, sync={"on_search": False}) as router:
        before = router.status().backends[0]
        assert before.available is not moved, before
        if moved:  # found on open; the status names the way out
            assert "damaged" in (before.error or "")
            assert "memory-router index" in (before.error or "")
        report = router.sync()[0]
        assert not report.errors
        assert report.chunks == built.chunks  # nothing lost
        assert report.embedded == 0  # every vector came from the embedding cache
        aside = _aside(db)
        if moved:
            assert report.full_rebuild
            assert "damaged" in (report.reason or ""), report
            assert len(aside) == 1
        assert router.status().backends[0].available
        hits = router.search("fact number 5 about topic5").results
        assert hits
        assert hits[0].path == "memory/note-0005.md"
        again = router.sync()[0]
        assert (again.full_rebuild, again.reason) == (False, None)  # reported once
    assert db.is_file()


def test_a_file_that_fails_as_corrupt_later_is_healed_by_the_next_sync(
    tmp_path: Path, workspace: Path
) -> None:
    """Damage that appears while the index is open (past the checks on open) is flagged."""
    no_cooldown = {"chain": ["sqlite"], "fallback": "none", "breaker": {"cooldown_s": 0.001}}
    with make(tmp_path, workspace, sync={"on_search": False}, router=no_cooldown) as router:
        router.sync()
        db = router.config.agent_state_path / "memory.sqlite"
        with db.open("r+b") as file:  # same file, so open connections read the damage
            file.write(b"not a database any more" * 300)
        with pytest.raises(MemoryRouterError, match="damaged"):
            router.search("topic5")
        assert not router.status().can_answer
        report = router.sync()[0]
        assert "damaged" in (report.reason or "")
        assert router.search("topic5").results
        assert router.status().can_answer


READ_DOORS: dict[str, Callable[[Any], object]] = {
    "search": lambda backend: backend.search(
        SearchRequest(query="topic5", max_results=5, min_score=0.0, candidates=5)
    ),
    "export_chunks": lambda backend: list(backend.export_chunks()),
    "index_fingerprint": lambda backend: backend.index_fingerprint(),
    "status": lambda backend: backend.status(deep=True),
}


@pytest.mark.parametrize("door", READ_DOORS)
def test_every_door_translates_and_flags_a_file_that_fails_as_corrupt(
    tmp_path: Path, workspace: Path, door: str
) -> None:
    """One translating block for all of them: no driver error leaves the backend, and a
    corrupt file is flagged whichever call met it first, so the next sync heals it."""
    with make(tmp_path, workspace, sync={"on_search": False}) as router:
        router.sync()
        backend = router.backend("sqlite")
        with (router.config.agent_state_path / "memory.sqlite").open("r+b") as file:
            file.write(b"not a database any more" * 300)
        if door == "status":
            status = READ_DOORS[door](backend)
            assert isinstance(status, BackendStatus)
            assert not status.available
            assert "is damaged" in (status.error or "")
            assert "memory-router index" in (status.error or "")  # the way out
        else:
            with pytest.raises(BackendUnavailable, match="is damaged") as raised:
                READ_DOORS[door](backend)
            assert type(raised.value.__cause__).__name__ == "DatabaseError"  # sqlite3/sqlean
            assert raised.value.hint
        assert backend.store.damage is not None
        assert "damaged" in (router.sync()[0].reason or "")
        assert list(backend.export_chunks())


def test_an_unwritable_index_folder_is_a_clear_error(tmp_path: Path, workspace: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the index folder should be\n")
    settings = {"path": str(blocked / "memory.sqlite")}
    config = testing.router_config(tmp_path, workspace, backend="sqlite", settings=settings)
    with Router.from_config(config, plugins=[testing]) as router:
        status = router.status()
        assert not status.can_answer
        assert str(blocked) in (status.backends[0].error or "")
        report = router.sync()[0]
        assert str(blocked) in report.errors[0]
        with pytest.raises(MemoryRouterError) as caught:
            router.search("topic5")
    assert str(blocked) in caught.value.message


def test_a_folder_that_refuses_writes_is_not_called_no_folder(
    tmp_path: Path, workspace: Path
) -> None:
    settings = {"path": "/sys/kernel/memory.sqlite"}  # sysfs refuses even root
    config = testing.router_config(tmp_path, workspace, backend="sqlite", settings=settings)
    with Router.from_config(config, plugins=[testing]) as router:
        report = router.sync()[0]
    assert report.errors[0].startswith("cannot write the index folder /sys/kernel: ")
    assert "not a folder" not in report.errors[0]
    assert "/sys/kernel" in (report.hint or "")


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        (errno.EROFS, "/idx is on a read-only file system: set [backends.sqlite] path"),
        (errno.EACCES, "make /idx writable (e.g. chmod u+w /idx) or set [backends.sqlite] path"),
    ],
)
def test_the_hint_for_a_folder_fits_why_it_refuses(code: int, advice: str) -> None:
    # A read-only mount cannot be made to fail in a test without privileges: the hint's
    # choice is checked on the error itself (the message carries strerror, tested above).
    hint = unwritable_hint(Path("/idx"), OSError(code, os.strerror(code)))
    assert hint.startswith(advice)
    assert ("chmod" in hint) == (code != errno.EROFS)


@pytest.mark.slow
def test_damaged_copies_are_capped(tmp_path: Path, workspace: Path) -> None:
    db = tmp_path / "state/agents/main/memory.sqlite"
    for _ in range(5):
        with make(tmp_path, workspace) as router:
            router.sync()
        db.write_bytes(b"garbage" * 1000)
        with make(tmp_path, workspace) as router:
            assert router.sync()[0].full_rebuild
    assert len(_aside(db)) == 3


def _aside(db: Path) -> list[Path]:
    return [
        p for p in db.parent.glob(f"{db.name}.damaged-*") if not p.name.endswith(("-wal", "-shm"))
    ]
