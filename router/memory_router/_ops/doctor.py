"""``memory-router doctor``: one check per part of the setup, each with the command that fixes it.

:func:`checks` only looks (it opens backends, probes the embedding provider, reads
files) and changes nothing; :func:`repair` does what is safe: it syncs every backend
that failed its check, which moves a damaged index aside and rebuilds it from the
Markdown and the embedding cache, re-creates QMD collections, and brings a stale index
up to date. Markdown is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._config.commandline import command
from .._exceptions import MemoryRouterError, Unsupported
from .._migrate.checkpoint import checkpoint_path, clear_checkpoint, load_checkpoint, lock_path
from .._routing.indexlock import holder, lock_holder
from .._routing.status import source_counts
from .._types import BackendStatus, EmbeddingStatus, SyncReport, _ToDict
from .._workspace.checks import check_workspace
from .._workspace.discovery import LINK_WARNING
from .._workspace.snapshot import FTS_ONLY, take_snapshot

if TYPE_CHECKING:
    from .._router import Router

LOW_DISK_BYTES = 200 * 2**20


@dataclass(frozen=True, slots=True, kw_only=True)
class Check(_ToDict):
    """One line of the doctor's report. ``fix`` is the command (or step) that fixes it;
    ``repairable`` says ``doctor --fix`` can do it; ``backend`` names what it checked."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    repairable: bool = False
    backend: str | None = None


def checks(router: Router) -> list[Check]:
    """Every check, in the order a person would look (config, workspace, state, …)."""
    workspace = _workspace(router)
    found = [_config(router), workspace, _state_dir(router)]
    if workspace.ok:
        found.extend(_memory_files(router))
    status = router.status(deep=True)
    found.append(_embedding_check(router, status.embedding))
    found.extend(_backend(router, backend, workspace.ok) for backend in status.backends)
    found.extend(_lock(router, name) for name in router.config.router.chain)
    found.extend(_migrations(router))
    return found


def repair(router: Router, found: list[Check]) -> list[str]:
    """Fix what is safe to fix; a sentence per action taken."""
    names = [c.backend for c in found if not c.ok and c.repairable and c.backend]
    done = []
    for name in dict.fromkeys(names):
        try:
            report = router.sync(backends=[name], wait_s=60.0)[0]
        except MemoryRouterError as error:
            done.append(f"could not repair {name}: {error.message}")
            continue
        done.append(_repaired(report))
    return done


def _repaired(report: SyncReport) -> str:
    if report.errors:
        return f"could not repair {report.backend}: {'; '.join(report.errors)}"
    how = report.reason or "brought up to date"
    return f"repaired {report.backend}: {how} ({report.chunks} chunks, {report.embedded} embedded)"


def _config(router: Router) -> Check:
    where = router.config.file or "built-in defaults (no config file found)"
    for name in router.config.router.chain:
        unset = router.unset_secret(name)
        if unset is not None:
            return Check(name="config", ok=False, detail=unset.message, fix=unset.hint)
    return Check(name="config", ok=True, detail=str(where))


def _workspace(router: Router) -> Check:
    try:
        path = check_workspace(router.config)
    except MemoryRouterError as error:
        return Check(name="workspace", ok=False, detail=error.message, fix=error.hint)
    files = sum(source_counts(router.config).values())
    if not files:
        return Check(
            name="workspace",
            ok=False,
            detail=f"{path}: no memory files (MEMORY.md, memory.md, memory/**/*.md)",
            fix=f"write notes into {path / 'MEMORY.md'} or {path / 'memory'}/",
        )
    return Check(name="workspace", ok=True, detail=f"{path} ({files} memory files)")


def _memory_files(router: Router) -> Iterator[Check]:
    """A check when some memory files are left out or not plain UTF-8: ✗ for files left
    out (they look binary, are symbolic links, or are over ``[sync] max_file_bytes``),
    ✓ naming the files read with a fallback encoding."""
    snapshot = take_snapshot(router.config, fingerprint={}, model=FTS_ONLY)
    indexed = {doc.path for doc in snapshot.documents}
    skipped = {p: w for p, w in snapshot.warnings.items() if p not in indexed}
    decoded = [f"{p}: {w}" for p, w in snapshot.warnings.items() if p in indexed]
    if skipped:
        yield Check(
            name="memory files",
            ok=False,
            detail="; ".join(f"{p}: {w}" for p, w in skipped.items()),
            fix="; ".join(_skip_fixes(router, skipped.values())),
        )
    if decoded:
        yield Check(name="file encodings", ok=True, detail="; ".join(decoded))


def _skip_fixes(router: Router, warnings: Iterable[str]) -> list[str]:
    """What to do about each reason a file was left out, once per reason."""
    fixes: dict[str, None] = {}
    where = router.config.file or "the config file"
    for warning in warnings:
        if warning == LINK_WARNING:
            fixes["replace each link with the note itself (links are never followed)"] = None
        elif "max_file_bytes" in warning:
            fixes[f"split large notes, or raise [sync] max_file_bytes in {where}"] = None
        else:
            fixes["move binary files out of the memory folders, or save them as Markdown"] = None
    return list(fixes)


def workspace_fix(router: Router, then: str) -> str:
    """What to do while the workspace is missing: correct the setting, or create it."""
    where = router.config.file
    setting = f"fix `workspace` in {where}" if where else "set `workspace` (or pass --workspace)"
    return f"{setting} or create {router.config.workspace_path}, then {then}"


def _state_dir(router: Router) -> Check:
    folder = router.config.agent_state_path
    quoted = shlex.quote(str(folder))
    fix = f"mkdir -p {quoted} && chmod u+rwx {quoted}, or set state_dir to a writable folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".doctor-{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        return Check(
            name="state dir", ok=False, detail=f"{folder}: {error.strerror or error}", fix=fix
        )
    free = shutil.disk_usage(folder).free
    detail = f"{folder} (writable, {free / 2**30:.1f} GiB free)"
    if free < LOW_DISK_BYTES:
        return Check(name="state dir", ok=False, detail=detail, fix="free some disk space")
    return Check(name="state dir", ok=True, detail=detail)


def _embedding_check(router: Router, info: EmbeddingStatus) -> Check:
    if not info.available:
        return Check(
            name="embeddings",
            ok=False,
            detail=f"{info.requested}: {info.error}",
            fix='see docs/configuration.md#embedding, or set [embedding] provider = "none"',
        )
    if not info.provider:
        why = info.unavailable_reason or "provider = none"
        return Check(name="embeddings", ok=True, detail=f"keyword-only ({why})")
    name = f"{info.provider} {info.model}"
    if info.probe == "failed":
        return Check(
            name="embeddings",
            ok=False,
            detail=f"{name}: {info.error}",
            fix=f"`{command(router.config, 'status', '--deep')}` shows the provider's error",
        )
    latency = info.latency_ms or 0.0
    return Check(name="embeddings", ok=True, detail=f"{name} ({info.dims} dims, {latency:.0f} ms)")


def _backend(router: Router, status: BackendStatus, workspace_ok: bool = True) -> Check:
    name = status.name
    label = f"backend {name}"
    try:
        router.backend(name)
    except MemoryRouterError as error:  # cannot even start (not installed, misconfigured)
        return Check(name=label, ok=False, detail=error.message, fix=error.hint, backend=name)
    if not status.available:
        hint = status.details.get("hint")  # the backend knows what to do about its error
        return Check(
            name=label,
            ok=False,
            detail=status.error or "unavailable",
            fix=str(hint) if hint else command(router.config, "doctor", "--fix"),
            repairable=not hint,
            backend=name,
        )
    problem = _stale(router, status)
    if problem and not workspace_ok:  # indexing now would fail: the workspace comes first
        return Check(
            name=label,
            ok=False,
            detail=f"{problem}; kept as it is while the workspace cannot be read",
            fix=workspace_fix(router, command(router.config, "index", "--backend", name)),
            backend=name,
        )
    if problem:
        return Check(
            name=label,
            ok=False,
            detail=problem,
            fix=command(router.config, "index", "--backend", name),
            repairable=True,
            backend=name,
        )
    return Check(name=label, ok=True, detail=_summary(status), backend=name)


def _stale(router: Router, status: BackendStatus) -> str | None:
    """Why the backend's index does not match the workspace and the config, if it does not."""
    meta = status.details.get("meta")
    if isinstance(meta, Mapping):
        wanted = router.fingerprint().to_dict()
        for key, value in wanted.items():
            if value is not None and key in meta and meta[key] != value:
                if key == "scopeHash":  # a hash of the paths: the hashes say nothing
                    return "built for another workspace or other memory paths"
                return f"built for another {key} ({meta[key]!r}, config wants {value!r})"
    on_disk = sum(source_counts(router.config).values())
    if status.files != on_disk:
        return f"{status.files} files indexed, {on_disk} on disk"
    return None


def _summary(status: BackendStatus) -> str:
    parts = [f"{status.files} files", f"{status.chunks} chunks"]
    details = status.details
    for key in ("schema_version", "fts", "vector", "effective_mode"):
        if details.get(key) is not None:
            parts.append(f"{key.replace('_', ' ')} {details[key]}")
    return ", ".join(parts)


def _lock(router: Router, name: str) -> Check:
    pid = holder(router.config.agent_state_path / name)
    label = f"index lock {name}"
    if pid is None:
        return Check(name=label, ok=True, detail="free")
    return Check(name=label, ok=True, detail=f"held by process {pid} (a sync is running)")


def _migrations(router: Router) -> Iterator[Check]:
    """A migration whose checkpoint is still there did not finish: its copy sits beside
    the target's live index (disk space) until it is resumed or started again."""
    folder = router.config.agent_state_path / "migrations"
    for path in sorted(folder.glob("*.json")):
        saved = load_checkpoint(path)
        if saved is None:
            continue
        name = f"migration into {saved.target}"
        progress = f"from {saved.source} ({saved.mode}), {saved.done} of {saved.total} chunks"
        pid = lock_holder(lock_path(router.config.agent_state_path, path.stem))
        if pid is not None:
            yield Check(name=name, ok=True, detail=f"running in process {pid}: {progress}")
            continue
        resume = command(
            router.config,
            "migrate",
            *_option("from", saved.source),
            *_option("to", saved.target),
            "--resume",
        )
        yield Check(
            name=name,
            ok=False,
            detail=f"unfinished: {progress} written (interrupted); its copy is kept beside"
            " the live index",
            fix=f"{resume} (without --resume it starts clean)",
        )


def _option(name: str, label: str) -> tuple[str, str]:
    """``--from NAME`` or ``--from-path PATH`` for a checkpoint's source or target label."""
    if label.startswith("file:"):
        return f"--{name}-path", label.removeprefix("file:")
    return f"--{name}", label


def lines(found: list[Check]) -> Iterator[str]:
    """``✓ name: detail`` or ``✗ name: detail`` and, under a ✗, ``  fix: …``."""
    for check in found:
        yield f"{'✓' if check.ok else '✗'} {check.name}: {' '.join(check.detail.split())}"
        if not check.ok and check.fix:
            yield f"    fix: {check.fix}"


def derived_paths(router: Router, name: str) -> list[Path]:
    """The folder the router gives backend ``name`` for its state (never a source folder)."""
    folder = router.config.agent_state_path / name
    sources = [router.config.workspace_path, router.config.expand(router.config.sessions_dir)]
    sources += [router.config.expand(p) for p in router.config.extra_paths]
    if any(_overlaps(folder, s) for s in sources):
        return []
    return [folder] if folder.exists() else []


def _overlaps(a: Path, b: Path) -> bool:
    a, b = Path(os.path.abspath(a)), Path(os.path.abspath(b))
    return a == b or a in b.parents or b in a.parents


def reset(router: Router, names: list[str]) -> list[str]:
    """Delete the derived state of backends ``names`` (never Markdown); what was removed.

    Any installed backend, in the chain or not; :class:`NotFound` for another name,
    before anything is deleted."""
    router.check_backend_names(names)
    removed: list[str] = []
    for name in names:
        try:
            backend = router.backend(name)
        except MemoryRouterError:  # it cannot start: its state folder still goes
            backend = None
        with contextlib.suppress(Unsupported):
            removed.extend(backend.reset() if backend is not None else ())
        # The reset dropped a migration's copy too: its checkpoint has nothing to resume.
        checkpoint = checkpoint_path(router.config.agent_state_path, name)
        if checkpoint.exists():
            clear_checkpoint(checkpoint)
            removed.append(str(checkpoint))
        for folder in derived_paths(router, name):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
    return removed
