"""``import-openclaw``: from an OpenClaw install to a verified memory-router, in one step.

The steps, each reported (:class:`ImportReport`):

1. **config** — ``openclaw.json`` (found where OpenClaw finds it) converted for one agent
   (:func:`~memory_router._config.openclaw.convert`) and written as our TOML, with
   ``state_dir`` added; what could not be carried is listed with the reason;
2. **workspace** — used in place (the Markdown is the memory; nothing is copied);
3. **transcripts** — OpenClaw 2026.9 keeps them in the agent database: each session is
   written out as ``<sessions_dir>/<session id>.jsonl`` (its events, one per line, so line
   numbers match OpenClaw's citations), reset and deleted archives as
   ``<id>.jsonl.<reason>.<time>``; an older install's ``agents/<id>/sessions`` folder is
   read where it is;
4. **index** — OpenClaw's index migrated into the chain's first backend
   (:func:`~memory_router._migrate.migration.migrate`: its vectors reused when the model
   matches, embedded through the cache when not), or built from the Markdown when there
   is none; then verified with sample queries on both sides.
"""

from __future__ import annotations

import contextlib
import sqlite3
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._config.openclaw import (
    Conversion,
    agent_ids,
    convert,
    openclaw_config_path,
    openclaw_state_dir,
    read_openclaw,
    to_toml,
)
from .._exceptions import InvalidInput, MemoryRouterError, NotFound
from .._types import Progress, _ToDict, no_progress

if TYPE_CHECKING:
    from .._router import Router
    from .migration import MigrationReport

AGENT_DB = "agents/{agent}/agent/openclaw-agent.sqlite"
LEGACY_INDEX = "memory/{agent}.sqlite"
LEGACY_SESSIONS = "agents/{agent}/sessions"
WORKSPACE_FILES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "HEARTBEAT.md", "DREAMS.md")


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenClawInstall:
    """Where one OpenClaw install keeps its state, config and (per agent) index."""

    state_dir: Path
    config_path: Path
    data: dict[str, Any]

    @classmethod
    def find(cls, state_dir: str | Path | None = None) -> OpenClawInstall:
        """The install at ``state_dir`` (else ``$OPENCLAW_STATE_DIR``, else ``~/.openclaw``),
        its config at ``$OPENCLAW_CONFIG_PATH`` or ``<state>/openclaw.json``."""
        state = openclaw_state_dir(state_dir)
        if not state.is_dir():
            raise NotFound(
                f"no OpenClaw state folder at {state}",
                key="state_dir",
                hint="give the folder OpenClaw keeps its state in (OPENCLAW_STATE_DIR,"
                " ~/.openclaw by default)",
            )
        config = openclaw_config_path(state)
        data = read_openclaw(config) if config.is_file() else {}
        return cls(state_dir=state, config_path=config, data=data)

    def index_file(self, agent: str) -> Path | None:
        """The agent's index: 2026.9's agent database, else the older ``memory/<id>.sqlite``."""
        for pattern in (AGENT_DB, LEGACY_INDEX):
            path = self.state_dir / pattern.format(agent=agent)
            if path.is_file():
                return path
        return None

    def legacy_sessions(self, agent: str) -> Path | None:
        """An older install's transcripts folder, when it holds any."""
        folder = self.state_dir / LEGACY_SESSIONS.format(agent=agent)
        return folder if folder.is_dir() and any(folder.glob("*.jsonl*")) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptExport(_ToDict):
    """Transcripts written out of an agent database, and what was left behind (with why)."""

    folder: str
    sessions: int = 0
    events: int = 0
    archives: int = 0
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportReport(_ToDict):
    """What :func:`import_openclaw` moved and what it did not carry, with why."""

    state_dir: str
    agent: str
    config_file: str
    workspace: str
    layout: str
    index_file: str | None
    transcripts: TranscriptExport | None
    migration: MigrationReport | None = None
    indexed_chunks: int = 0
    not_carried: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    other_agents: tuple[str, ...] = field(default=())


def export_transcripts(database: Path, folder: Path) -> TranscriptExport:
    """Write each session of an OpenClaw 2026.9 agent database as ``<id>.jsonl`` in
    ``folder`` (existing files with the same name are replaced: the database is newer)."""
    folder.mkdir(parents=True, exist_ok=True)
    with _read_only(database) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        if "transcript_events" not in tables:
            return TranscriptExport(folder=str(folder))
        sessions, events, skipped = _write_sessions(db, folder)
        archives = 0
        if "session_transcript_archives" in tables:
            archives = _write_archives(db, folder, skipped)
    return TranscriptExport(
        folder=str(folder),
        sessions=sessions,
        events=events,
        archives=archives,
        skipped=tuple(skipped),
    )


def _write_sessions(db: sqlite3.Connection, folder: Path) -> tuple[int, int, list[str]]:
    sessions = events = 0
    skipped: list[str] = []
    current: str | None = None
    lines: list[str] = []
    rows = db.execute(
        "SELECT session_id, seq, event_json FROM transcript_events ORDER BY session_id, seq"
    )
    for session_id, _seq, event in _with_end(rows):
        if session_id != current and current is not None:
            _write(folder / f"{_safe(current)}.jsonl", lines)
            sessions += 1
            lines = []
        current = session_id
        if session_id is None:
            break
        if event is None:  # a large event OpenClaw stored zstd-compressed
            skipped.append(f"session {session_id}: an event stored compressed (zstd)")
            lines.append("{}")  # keeps the line numbers of the events after it
        else:
            lines.append(" ".join(str(event).splitlines()))
            events += 1
    return sessions, events, skipped


def _with_end(rows: Any) -> Iterator[tuple[Any, Any, Any]]:
    yield from rows
    yield (None, None, None)


def _write_archives(db: sqlite3.Connection, folder: Path, skipped: list[str]) -> int:
    written = 0
    rows = db.execute(
        "SELECT session_id, reason, encoding, archive_blob, created_at"
        " FROM session_transcript_archives ORDER BY created_at"
    )
    for session_id, reason, encoding, blob, created in rows:
        if encoding != "identity":
            skipped.append(f"archived session {session_id} ({reason}): compressed ({encoding})")
            continue
        stamp = datetime.fromtimestamp(created / 1000, UTC).strftime("%Y-%m-%dT%H-%M-%S.%f")
        name = f"{_safe(session_id)}.jsonl.{reason}.{stamp[:-3]}Z"
        text = bytes(blob).decode("utf-8", "replace")
        _write(folder / name, text.splitlines())
        written += 1
    return written


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name))


def _write(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as error:
        raise InvalidInput(f"cannot open {path}: {error}", key="state_dir") from None
    try:
        yield db
    finally:
        db.close()


def conversion_for(install: OpenClawInstall, agent: str | None) -> Conversion:
    """The converted config of ``agent`` (default: OpenClaw's default agent)."""
    return convert(install.data, agent=agent, state_dir=install.state_dir)


def write_config(
    conversion: Conversion,
    output: Path,
    *,
    origin: str,
    extra: dict[str, Any],
    force: bool,
) -> None:
    """Write the converted TOML (plus ``extra`` top-level keys) to ``output``."""
    if output.exists() and not force:
        raise InvalidInput(
            f"{output} exists",
            key="output",
            hint="choose another file with -o, or pass --force to replace it",
        )
    config = {**extra, **conversion.config}
    text = to_toml(
        Conversion(
            config=config,
            dropped=conversion.dropped,
            notes=conversion.notes,
            agent=conversion.agent,
            workspace=conversion.workspace,
            layout=conversion.layout,
        ),
        origin=origin,
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")


def workspace_notes(workspace: Path) -> list[tuple[str, str]]:
    """Workspace files OpenClaw keeps that are not memory (there or here): named, not lost."""
    return [
        (f"workspace/{name}", "agent bootstrap file, not memory: stays in the workspace")
        for name in WORKSPACE_FILES
        if (workspace / name).is_file()
    ]


@contextlib.contextmanager
def _router_of(output: Path, plugin_manager: Any) -> Iterator[Router]:
    """The router of the config just written to ``output``. A failure says where that
    config is and how to run again: the next import refuses an existing file without
    ``--force``."""
    from .._router import Router

    try:
        with Router.from_config(output, plugin_manager=plugin_manager) as router:
            yield router
    except MemoryRouterError as error:
        kept = f"the config is written to {output}: run again with --force to replace it"
        error.hint = f"{error.hint}; {kept}" if error.hint else kept
        raise


def import_openclaw(
    state_dir: str | Path | None,
    *,
    output: Path,
    agent: str | None = None,
    our_state_dir: str | None = None,
    verify: int | None = 20,
    force: bool = False,
    plugin_manager: Any = None,
    progress: Progress = no_progress,
) -> ImportReport:
    """Config, workspace, transcripts and index of one OpenClaw agent, then verify (see the
    module docstring). Writes ``output`` (refused when it exists, unless ``force``)."""
    from .migration import migrate

    install = OpenClawInstall.find(state_dir)
    conversion = conversion_for(install, agent)
    index = install.index_file(conversion.agent)
    extra = _extra_settings(install, conversion.agent, our_state_dir)
    write_config(conversion, output, origin=str(install.config_path), extra=extra, force=force)
    with _router_of(output, plugin_manager) as router:
        transcripts = None
        if index is not None and index.name == "openclaw-agent.sqlite":
            sessions = router.config.expand(router.config.sessions_dir)
            transcripts = export_transcripts(index, sessions)
        if index is not None:
            target = router.config.router.chain[0]
            migration = migrate(
                router, target, source_path=str(index), verify=verify, progress=progress
            )
            chunks = migration.chunks
        else:
            migration, chunks = None, sum(r.chunks for r in router.sync(progress=progress))
    not_carried = [*conversion.dropped, *workspace_notes(Path(conversion.workspace))]
    not_carried.extend(("transcripts", why) for why in (transcripts.skipped if transcripts else ()))
    return ImportReport(
        state_dir=str(install.state_dir),
        agent=conversion.agent,
        config_file=str(output),
        workspace=conversion.workspace,
        layout=conversion.layout,
        index_file=str(index) if index else None,
        transcripts=transcripts,
        migration=migration,
        indexed_chunks=chunks,
        not_carried=tuple(not_carried),
        notes=conversion.notes,
        other_agents=tuple(a for a in agent_ids(install.data) if a != conversion.agent),
    )


def _extra_settings(
    install: OpenClawInstall, agent: str, our_state_dir: str | None
) -> dict[str, Any]:
    """Settings beside the converted ones: our state folder, OpenClaw's old sessions folder."""
    extra: dict[str, Any] = {}
    if our_state_dir:
        extra["state_dir"] = str(Path(our_state_dir).expanduser().resolve())
    legacy = install.legacy_sessions(agent)
    if legacy is not None:
        extra["sessions_dir"] = str(legacy)
    return extra
