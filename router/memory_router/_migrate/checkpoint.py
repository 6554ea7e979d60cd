"""The checkpoint of a migration in progress: where ``migrate --resume`` picks up.

One JSON file per target in ``<state>/agents/<agent>/migrations/``, replaced atomically
after each batch the target has made durable. A kill between the two leaves the
checkpoint one batch behind; the resumed run writes that batch again, which the target
absorbs (writes are idempotent by chunk id), so no chunk is written twice or missed.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

Phase = Literal["copying", "publishing"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """How far a migration got. ``done`` chunks of the source (in export order) are written,
    the last of them ``last_id``. ``fingerprint`` is what the target will record."""

    source: str
    target: str
    mode: str
    fingerprint: dict[str, Any]
    total: int
    done: int = 0
    last_id: str | None = None
    phase: Phase = "copying"

    def advance(self, count: int, last_id: str) -> Checkpoint:
        return replace(self, done=self.done + count, last_id=last_id)


def checkpoint_path(state_dir: Path, target: str) -> Path:
    return state_dir / "migrations" / f"{target}.json"


def lock_path(state_dir: Path, target: str) -> Path:
    """The lock a migration into ``target`` holds while it runs (see ``_routing.indexlock``)."""
    return checkpoint_path(state_dir, target).with_suffix(".lock")


def load_checkpoint(path: Path) -> Checkpoint | None:
    """The saved checkpoint, or ``None`` when there is none (or it cannot be read)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Checkpoint(**data)
    except (OSError, ValueError, TypeError):
        return None


def save_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` durably: a temporary file, fsync, then an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{path.name}.tmp")
    data = {
        "source": checkpoint.source,
        "target": checkpoint.target,
        "mode": checkpoint.mode,
        "fingerprint": checkpoint.fingerprint,
        "total": checkpoint.total,
        "done": checkpoint.done,
        "last_id": checkpoint.last_id,
        "phase": checkpoint.phase,
    }
    with temp.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def clear_checkpoint(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
