"""Start-up stays light: importing the package, discovering every plugin and building the
CLI import none of the heavy dependencies; a backend or provider loads them when used.

Speed targets (``--help`` ≤ 150 ms, keyword-only ``search`` ≤ 250 ms on an idle machine)
are measured by ``bench/bench_startup.py``; these tests guard the imports that make them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

HEAVY = ("numpy", "httpx", "tenacity", "lancedb", "pyarrow", "mcp", "onnxruntime", "rich",
         "watchdog", "sqlite_vec", "tokenizers", "memory_router_qmd._backend",
         "memory_router_sqlite._backend")  # fmt: skip

DISCOVER = """
import json, sys
import memory_router
from memory_router import _plugins
from memory_router.cli import build_cli
pm = memory_router.get_plugin_manager()
backends, providers = _plugins.backend_specs(pm), _plugins.provider_specs(pm)
build_cli(pm)
print(json.dumps({
    "heavy": [m for m in json.loads(sys.argv[1]) if m in sys.modules],
    "plugins": sorted(name for name, _ in pm.list_name_plugin()),
    "backends": sorted(backends), "providers": sorted(providers),
}))
"""


def run_python(code: str, *args: str, cwd: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
        cwd=cwd,
    )
    return out.stdout


def test_discovering_every_plugin_imports_no_heavy_dependency() -> None:
    found = json.loads(run_python(DISCOVER, json.dumps(HEAVY)))
    assert found["heavy"] == [], (
        "loading the memory_router entry points imported heavy modules; keep a plugin's"
        " top-level module light and import them inside its factory (docs/plugins.md)"
    )
    # Every entry point of the group was loaded (so plugins added later are checked too).
    group = {ep.name for ep in entry_points(group="memory_router")}
    assert group <= set(found["plugins"])
    assert {"sqlite", "qmd", "lancedb"} <= set(found["backends"])
    assert {"minilm", "minilm-int8", "openai"} <= set(found["providers"])


def test_keyword_only_search_never_loads_numpy(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Notes\n\nDeploys run on Tuesdays.\n")
    config = tmp_path / "config.toml"
    config.write_text(
        f'workspace = "{workspace}"\nstate_dir = "{tmp_path / "state"}"\n'
        '[embedding]\nprovider = "none"\n'
    )
    code = """
import io, json, sys, contextlib
from memory_router._cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--config", sys.argv[1], "search", "deploys"])
    except SystemExit:
        pass
print(json.dumps({"heavy": [m for m in json.loads(sys.argv[2]) if m in sys.modules],
                  "out": out.getvalue()}))
"""
    heavy = [m for m in HEAVY if m not in ("memory_router_sqlite._backend", "sqlite_vec")]
    found = json.loads(run_python(code, str(config), json.dumps(heavy)))
    assert "MEMORY.md" in found["out"]
    assert found["heavy"] == []


def test_lazy_exports_still_reach_every_public_name() -> None:
    import memory_router_lancedb
    import memory_router_llama
    import memory_router_minilm
    import memory_router_qmd
    import memory_router_sqlite
    import memory_router_watch

    for module in (memory_router_lancedb, memory_router_llama, memory_router_minilm,
                   memory_router_qmd, memory_router_sqlite, memory_router_watch):  # fmt: skip
        for name in module.__all__:
            assert getattr(module, name) is not None, (module.__name__, name)
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(memory_router_qmd, "no_such_name")  # noqa: B009 - the lazy __getattr__
