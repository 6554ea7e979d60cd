"""The watcher plugin: new and edited files are indexed after the debounce, bursts coalesce,
session transcripts wait for their delta thresholds, polling works where inotify does not."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_router import Router, load_config
from memory_router_watch import Watcher


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.fixture
def make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., tuple[Router, Watcher]]]:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGINS", "sqlite")
    made: list[tuple[Router, Watcher]] = []

    def build(*, poll: bool = False, **overrides: Any) -> tuple[Router, Watcher]:
        workspace = tmp_path / "ws"
        (workspace / "memory").mkdir(parents=True, exist_ok=True)
        (workspace / "MEMORY.md").write_text("# Memory\nThe office plant is called Gerald.\n")
        sync = {"watch_debounce_ms": 300, "on_search": False, **overrides.pop("sync", {})}
        config = load_config(
            None,
            environ={},
            overrides={
                "workspace": str(workspace),
                "state_dir": str(tmp_path / "state"),
                "embedding": {"provider": "none"},
                "sync": sync,
                **overrides,
            },
        )
        router = Router.from_config(config)
        watcher = Watcher(router, poll=poll)
        watcher.start()
        made.append((router, watcher))
        return router, watcher

    yield build
    for router, watcher in made:
        watcher.stop()
        router.close()


def paths(router: Router, query: str) -> list[str]:
    return [h.path for h in router.search(query).results]


def test_existing_files_are_indexed_at_start(make: Callable[..., tuple[Router, Watcher]]) -> None:
    router, watcher = make()
    assert watcher.stats.syncs == 1
    assert paths(router, "Gerald plant") == ["MEMORY.md"]


@pytest.mark.parametrize("poll", [False, True])
def test_new_and_edited_files_are_indexed_after_debounce(
    make: Callable[..., tuple[Router, Watcher]], tmp_path: Path, poll: bool
) -> None:
    router, _watcher = make(poll=poll)
    note = tmp_path / "ws" / "memory" / "2026-11-21.md"
    note.write_text("The quarterly zeppelin review moved to Tuesday.\n")
    assert wait_until(lambda: "memory/2026-11-21.md" in paths(router, "zeppelin review"))
    note.write_text("The quarterly airship review moved to Thursday.\n")
    assert wait_until(lambda: paths(router, "zeppelin") == [])
    assert paths(router, "airship Thursday") == ["memory/2026-11-21.md"]


def test_a_burst_of_writes_is_one_sync(
    make: Callable[..., tuple[Router, Watcher]], tmp_path: Path
) -> None:
    router, watcher = make(sync={"watch_debounce_ms": 600})
    for i in range(5):
        (tmp_path / "ws" / "memory" / f"note-{i}.md").write_text(f"burst note number {i} kumquat\n")
    assert wait_until(lambda: watcher.stats.syncs >= 2)
    time.sleep(1.0)
    assert watcher.stats.syncs == 2
    assert len(paths(router, "kumquat")) == 5


def test_reading_the_workspace_wakes_no_one(
    make: Callable[..., tuple[Router, Watcher]], tmp_path: Path
) -> None:
    """Opens and reads (every search reads the workspace) are not asked of inotify: the
    observer delivers changes only. inotify keeps a watch's events in order, so once the
    write after the reads has arrived, any read event would have arrived before it."""
    router, watcher = make()
    for _ in range(3):
        (tmp_path / "ws" / "MEMORY.md").read_text()
        list((tmp_path / "ws").iterdir())
        router.search("Gerald")
    (tmp_path / "ws" / "memory" / "after.md").write_text("written after the reads\n")
    assert wait_until(lambda: watcher.stats.events >= 1)
    assert watcher.stats.kinds
    assert not watcher.stats.kinds & {"opened", "closed_no_write"}, watcher.stats.kinds


def test_ignored_dirs_and_other_files_do_not_trigger(
    make: Callable[..., tuple[Router, Watcher]], tmp_path: Path
) -> None:
    _, watcher = make()
    (tmp_path / "ws" / "node_modules").mkdir()
    (tmp_path / "ws" / "node_modules" / "x.md").write_text("ignored\n")
    (tmp_path / "ws" / "memory" / "data.json").write_text("{}")
    time.sleep(1.0)
    assert watcher.stats.syncs == 1


def test_session_transcripts_wait_for_the_message_delta(
    make: Callable[..., tuple[Router, Watcher]], tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    router, watcher = make(
        sources=["memory", "sessions"],
        sessions_dir=str(sessions),
        sync={"sessions": {"delta_messages": 3, "delta_bytes": 1_000_000}},
    )
    transcript = sessions / "abc.jsonl"

    def say(text: str) -> None:
        record = {"type": "message", "message": {"role": "user", "content": text}}
        with transcript.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    say("remember the walrus protocol")
    time.sleep(1.0)
    assert watcher.stats.syncs == 1, "one message is below the delta"
    say("second message")
    say("third message")
    assert wait_until(lambda: watcher.stats.syncs >= 2)
    assert paths(router, "walrus protocol") == ["sessions/abc.jsonl"]


def test_a_single_file_extra_path_is_watched(
    make: Callable[..., tuple[Router, Watcher]], tmp_path: Path
) -> None:
    outside = tmp_path / "notes"
    outside.mkdir()
    (outside / "team.md").write_text("The team mascot is a heron.\n")
    (outside / "other.md").write_text("not an extra path\n")
    router, watcher = make(extra_paths=[str(outside / "team.md")])
    (outside / "team.md").write_text("The team mascot is a capybara.\n")
    assert wait_until(lambda: paths(router, "capybara mascot") == ["../notes/team.md"])
    assert wait_until(lambda: watcher.stats.syncs == 2)
    syncs = watcher.stats.syncs
    (outside / "other.md").write_text("still not an extra path\n")
    time.sleep(1.0)
    assert watcher.stats.syncs == syncs


def test_ignored_names_above_the_workspace_do_not_matter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGINS", "sqlite")
    workspace = tmp_path / "venv" / "agent"
    (workspace / "memory").mkdir(parents=True)
    config = load_config(
        None,
        environ={},
        overrides={
            "workspace": str(workspace),
            "state_dir": str(tmp_path / "state"),
            "embedding": {"provider": "none"},
            "sync": {"watch_debounce_ms": 200, "on_search": False},
        },
    )
    with Router.from_config(config) as router:
        watcher = Watcher(router)
        watcher.start()
        try:
            (workspace / "memory" / "n.md").write_text("quokka sighting\n")
            assert wait_until(lambda: paths(router, "quokka") == ["memory/n.md"])
        finally:
            watcher.stop()
