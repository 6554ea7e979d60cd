"""Shared helpers for the QMD backend tests: fake programs, backends and routers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from memory_router import MemoryRouterError, Router, load_config
from memory_router.kit import BackendContext
from memory_router_qmd import QmdBackend, QmdModels, QmdSettings
from memory_router_qmd._locate import locate

FAKES = Path(__file__).resolve().parent


def qmd_missing() -> str:
    """Why the real QMD CLI cannot run here, or ``""`` when it can (a skip reason)."""
    try:
        locate(QmdSettings(), backend="qmd")
    except MemoryRouterError as error:
        return error.message + (f"; {error.hint}" if error.hint else "")
    return ""


def install_fake(folder: Path, *, behaviour: str | None = None) -> Path:
    """Copy the fault-injecting fake QMD (``fake_qmd.py``) into ``folder`` as ``qmd``."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "qmd"
    shutil.copy(FAKES / "fake_qmd.py", target)
    target.chmod(0o755)
    if behaviour is not None:
        set_behaviour(target, behaviour)
    return target


def set_behaviour(fake: Path, value: str) -> None:
    """Fixed modes: ``"hang"`` (query points) or lines like ``"update=hang"``, ``"*=crash"``."""
    (fake.parent / "behaviour").write_text(value, encoding="utf-8")


def set_chaos(fake: Path, *, seed: int, rate: float, faults: list[str], **more: Any) -> None:
    """Seeded random faults: each call is faulty with probability ``rate``."""
    chaos = {"seed": seed, "rate": rate, "faults": faults, **more}
    (fake.parent / "chaos.json").write_text(json.dumps(chaos), encoding="utf-8")


def make_backend(tmp_path: Path, workspace: Path, **settings: Any) -> QmdBackend:
    """A QMD backend over ``workspace`` with its state under ``tmp_path/state``.

    ``documents`` defaults to ``"files"`` here: these tests drive QMD's update cycle over
    the memory folders without a sync (the chunk mirror is written by a sync:
    tests/backends/test_qmd_chunks.py)."""
    # Without a model given, QMD stays keyword-only (not the offline MiniLM): fast tests.
    models = {"offline": False, **(settings.pop("models", None) or {})}
    settings.setdefault("documents", "files")
    config = load_config(
        None,
        environ={},
        overrides={"workspace": str(workspace), "state_dir": str(tmp_path / "state")},
    )
    state = tmp_path / "state" / "qmd"
    state.mkdir(parents=True, exist_ok=True)
    return QmdBackend(
        BackendContext(
            name="qmd",
            config=config,
            settings=QmdSettings(models=QmdModels(**models), **settings),
            state_dir=state,
            embedder=None,
        )
    )


def make_router(tmp_path: Path, workspace: Path, *, cooldown_s: float = 1.0, **qmd: Any) -> Router:
    """A router with ``chain = ["qmd", "sqlite"]``, keyword-only, QMD set by ``qmd``
    (``documents = "files"`` unless given: the fake QMD answers ``memory-root/MEMORY.md``)."""
    qmd.setdefault("documents", "files")
    body = (
        "[router]\n"
        'chain = ["qmd", "sqlite"]\n'
        "timeout_s = 30\n"
        "[router.breaker]\n"
        f"cooldown_s = {cooldown_s}\n"
        "[embedding]\n"
        'provider = "none"\n'
        "[backends.qmd]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in qmd.items())
    )
    head = (
        f"workspace = {json.dumps(str(workspace))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
    )
    path = tmp_path / "memory-router.toml"
    path.write_text(head + body, encoding="utf-8")
    return Router.from_config(path)


def snapshot_for(backend: QmdBackend) -> Any:
    """The workspace snapshot a router would hand ``backend`` (built with its config)."""
    router = Router(backend.context.config)
    try:
        return router.snapshot()
    finally:
        router.close()
