"""The sessions export: transcripts as Markdown files QMD can index (ref §3.5).

Each transcript becomes ``<basename>.md``: ``# Session <basename>``, a blank line, then one
``User: …``/``Assistant: …`` line per message (the snapshot's flattened text, redacted),
or ``(empty)``. Hits in an export are mapped back to JSONL line numbers through the
snapshot's line map, kept beside the exports (``.line-maps.json``; QMD skips dot files).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from memory_router.kit import Snapshot

HEADER_LINES = 2
"""Lines before the first message line in an export (title and blank line)."""
MAPS_FILE = ".line-maps.json"
REDACTION_FILE = ".redaction"


def session_markdown(name: str, text: str) -> str:
    """A transcript as QMD indexes it: a title, a blank line, the message lines."""
    return f"# Session {name}\n\n{text.strip() or '(empty)'}\n"


def export_sessions(snapshot: Snapshot, export_dir: Path) -> int:
    """Write every transcript of ``snapshot``; returns how many exports changed.

    Unchanged exports are not rewritten (QMD would re-index them); exports of transcripts
    that are gone are deleted — they are this backend's own derived files.
    """
    export_dir.mkdir(parents=True, exist_ok=True)
    produced = {f"{Path(d.path).name}.md" for d in snapshot.documents if d.source == "sessions"}
    maps: dict[str, list[int]] = {}
    changed = 0
    for doc in snapshot.documents:
        if doc.source != "sessions":
            continue
        name = Path(doc.path).name
        text = snapshot.text(doc)
        target = export_dir / f"{name}.md"
        content = session_markdown(name, text)
        if not target.is_file() or target.read_text(encoding="utf-8") != content:
            target.write_text(content, encoding="utf-8")
            changed += 1
        line_map = snapshot.line_map(doc)
        if line_map:
            maps[target.name] = list(line_map)
    for stale in export_dir.glob("*.md"):
        if stale.name not in produced:
            stale.unlink(missing_ok=True)
    (export_dir / MAPS_FILE).write_text(json.dumps(maps), encoding="utf-8")
    return changed


def load_line_maps(export_dir: Path) -> dict[str, list[int]]:
    """The line maps written by the last export (empty when there are none)."""
    try:
        data = json.loads((export_dir / MAPS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): [int(n) for n in v] for k, v in data.items()} if isinstance(data, dict) else {}


def purge_old_redaction(snapshot: Snapshot, export_dir: Path, cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` once after the redaction (``snapshot.fingerprint["redaction"]``)
    changed: QMD keeps the content of a replaced export until ``qmd cleanup``, and an export
    written by an older redaction may hold a secret the current one masks."""
    version = json.dumps(snapshot.fingerprint.get("redaction"))
    marker = export_dir / REDACTION_FILE
    try:
        if marker.read_text(encoding="utf-8") == version:
            return
    except OSError:
        pass
    cleanup()
    marker.write_text(version, encoding="utf-8")
