"""The public surface is deliberate: a change to it is a change to this test.

Three modules, one per audience: ``memory_router`` for using the library,
``memory_router.kit`` for backend and plugin authors, ``memory_router.agent`` for agent
hosts. Each module's export list is its ``if TYPE_CHECKING:`` block, written once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
import typing
from pathlib import Path

import pytest

import memory_router
import memory_router.agent
import memory_router.kit

TOP = [
    "CATEGORIES",
    "BackendError",
    "BackendStatus",
    "BackendTimeout",
    "BackendUnavailable",
    "BreakerState",
    "Category",
    "CircuitOpen",
    "Config",
    "ConfigError",
    "EmbeddingError",
    "EmbeddingStatus",
    "Entry",
    "EntryMatch",
    "Explain",
    "Fallback",
    "FileText",
    "ForgetResult",
    "Hit",
    "IndexBusy",
    "IndexFingerprint",
    "InvalidInput",
    "MemoryRouterError",
    "MigrationReport",
    "NotFound",
    "PluginError",
    "Progress",
    "RecallResult",
    "Router",
    "RouterStatus",
    "SearchResponse",
    "ServiceUnreachable",
    "Source",
    "StoreResult",
    "SyncReport",
    "Unsupported",
    "__version__",
    "hookimpl",
    "load_config",
    "migrate",
    "no_progress",
]

KIT = [
    "FUSION_METHODS",
    "Backend",
    "BackendContext",
    "BackendResult",
    "BackendSpec",
    "Chunk",
    "Decoded",
    "Document",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingProvider",
    "EntryRequest",
    "Fused",
    "FusionMethod",
    "NearestVectors",
    "ProviderContext",
    "ProviderSpec",
    "ScoredChunk",
    "SearchRequest",
    "Secret",
    "Snapshot",
    "Staging",
    "SyncTally",
    "VectorScale",
    "acquire_lock",
    "best_lines",
    "best_runs",
    "bm25_to_score",
    "build_match_query",
    "build_or_query",
    "communicate",
    "convex_fusion",
    "decode",
    "entry_weight",
    "extract_keywords",
    "fuse",
    "fuse_chunks",
    "fuse_nearest",
    "get_plugin_manager",
    "join_thread",
    "keyword_chunks",
    "keyword_coverage",
    "lazy_exports",
    "minmax_fusion",
    "normalize",
    "parse_settings",
    "prefetch",
    "provider_key",
    "query_keywords",
    "rebuild_reason",
    "rrf_fusion",
    "sha256_text",
    "signal_child",
    "spawn_child",
    "vector_scale",
    "vectors_footprint",
    "wait_event",
    "wait_future",
    "weighted_fusion",
    "zscore_fusion",
]

AGENT = [
    "NO_REPLY",
    "CaptureConfig",
    "CaptureResult",
    "CompactionConfig",
    "FlushDecision",
    "MemoryFlushConfig",
    "RecallBlock",
    "RecallConfig",
    "ServeConfig",
    "capture",
    "check_memory_flush",
    "is_silent_reply",
    "recall_block",
]

MODULES = [(memory_router, TOP), (memory_router.kit, KIT), (memory_router.agent, AGENT)]


def isort_style(name: str) -> tuple[int, str]:  # ruff RUF022: CONSTANTS, Classes, functions
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize(("module", "expected"), MODULES, ids=lambda m: getattr(m, "__name__", ""))
def test_all_is_sorted_pinned_and_resolves(module: types.ModuleType, expected: list[str]) -> None:
    assert module.__all__ == sorted(module.__all__, key=isort_style)
    assert module.__all__ == expected
    for name in expected:
        assert getattr(module, name) is not None, name
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(module, "no_such_name")  # noqa: B009 - the lazy __getattr__


def test_each_name_has_one_public_home() -> None:
    assert not set(TOP) & set(KIT)
    assert not set(TOP) & set(AGENT)
    assert not set(KIT) & set(AGENT)


@pytest.mark.parametrize(("module", "expected"), MODULES, ids=lambda m: getattr(m, "__name__", ""))
def test_classes_and_functions_name_their_public_module(
    module: types.ModuleType, expected: list[str]
) -> None:
    """Tracebacks, reprs and pickles show ``memory_router.NotFound``, not a private path."""
    for name in expected:
        value = getattr(module, name)
        if isinstance(value, type | types.FunctionType):
            assert value.__module__ == module.__name__, name
    assert repr(memory_router.Router) == "<class 'memory_router.Router'>"
    assert repr(memory_router.kit.Backend) == "<class 'memory_router.kit.Backend'>"


def test_type_hints_still_resolve_after_the_move() -> None:
    """``get_type_hints`` looks names up in ``__module__``: the annotations were resolved in
    the defining module first, so parse_settings (and pydantic, cattrs…) still work."""
    hints = typing.get_type_hints(memory_router.Config)
    assert hints["recall"] is memory_router.agent.RecallConfig
    assert typing.get_type_hints(memory_router.Hit)["explain"] == memory_router.Explain | None
    config = memory_router.kit.parse_settings(
        memory_router.Config, {"recall": {"max_results": 3}}, path="t.toml", table=""
    )
    assert config.recall.max_results == 3


def test_values_reached_only_through_the_router_name_their_public_module() -> None:
    """In a fresh interpreter: looking up ``Router`` publishes every value its modules
    define, so a returned ``Hit`` or a raised ``NotFound`` shows its public name."""
    code = """
import json
from memory_router import Router
from memory_router import _exceptions, _types
print(json.dumps([_types.Hit.__module__, _exceptions.NotFound.__module__]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout) == ["memory_router", "memory_router"]


def test_errors_raised_through_kit_alone_name_their_public_module() -> None:
    """In a fresh interpreter: a plugin that imports only ``memory_router.kit`` and gets a
    ``ConfigError`` from ``parse_settings`` sees ``memory_router.ConfigError`` in its
    traceback (a lookup in any public module publishes the loaded names of all)."""
    code = """
import dataclasses, sys, traceback
from memory_router.kit import parse_settings

@dataclasses.dataclass(frozen=True)
class Settings:
    x: int = 1

try:
    parse_settings(Settings, {"y": 2}, path="c.toml", table="backends.t")
except Exception:
    print(traceback.format_exc().splitlines()[-1])
print(sys.modules["memory_router._exceptions"].ConfigError.__module__)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    last_line, module = out.stdout.splitlines()
    assert last_line.startswith("memory_router.ConfigError: file c.toml"), last_line
    assert module == "memory_router"


def test_moved_names_still_resolve_with_a_deprecation_warning() -> None:
    """``from memory_router import Backend`` (a third-party plugin written before the split)
    works for one more release, warning at the plugin's own import line. In a fresh
    interpreter: the warning is the point, and the test session turns warnings into errors."""
    code = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    from memory_router import Backend, NO_REPLY
    import memory_router, memory_router.agent, memory_router.kit
    same = [Backend is memory_router.kit.Backend, NO_REPLY is memory_router.agent.NO_REPLY]
print(json.dumps({
    "same": same,
    "warnings": [(w.category.__name__, str(w.message), w.filename, w.lineno) for w in caught],
    "listed": [n in dir(memory_router) + memory_router.__all__ for n in ("Backend", "NO_REPLY")],
}))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    found = json.loads(out.stdout)
    assert found["same"] == [True, True]
    assert found["listed"] == [False, False]
    hint = "(the old name will be removed in the next minor release)"
    expected = [
        (
            "DeprecationWarning",
            f"memory_router.{name} moved to memory_router.{home}.{name}; import it from"
            f" memory_router.{home} {hint}",
            "<string>",
            5,  # the `from memory_router import` line
        )
        for name, home in (("Backend", "kit"), ("NO_REPLY", "agent"))
    ]
    # Each twice: the import system's hasattr() probe for a submodule, then the import.
    assert sorted(map(tuple, found["warnings"])) == sorted(2 * expected)


def test_exception_tree() -> None:
    m = memory_router
    for cls in (
        m.ConfigError,
        m.PluginError,
        m.NotFound,
        m.InvalidInput,
        m.EmbeddingError,
        m.BackendError,
    ):
        assert issubclass(cls, m.MemoryRouterError)
    for cls in (m.BackendUnavailable, m.BackendTimeout, m.Unsupported):
        assert issubclass(cls, m.BackendError)


def write_package(root: Path, block: str) -> None:
    package = root / "exports_probe"
    package.mkdir()
    (package / "_impl.py").write_text(
        "from __future__ import annotations\nclass Size(int): ...\nclass Thing:\n    size: Size\n"
    )
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """\
            from __future__ import annotations
            from typing import TYPE_CHECKING
            from memory_router._util.lazy import public_api
            if TYPE_CHECKING:
                {block}
            else:
                __all__, __getattr__, __dir__ = public_api(__name__)
            """
        ).format(block=block)
    )


def test_a_package_of_ours_exports_what_its_block_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_package(tmp_path, "from ._impl import Thing as Thing")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "exports_probe", raising=False)
    probe = __import__("exports_probe")
    assert probe.__all__ == ["Thing"]
    assert "exports_probe._impl" not in sys.modules  # not until the name is used
    assert repr(probe.Thing) == "<class 'exports_probe.Thing'>"
    # "Size" is a name of _impl, not of the package: resolved before the move.
    assert typing.get_type_hints(probe.Thing) == {"size": sys.modules["exports_probe._impl"].Size}
    for name in ("exports_probe", "exports_probe._impl"):
        monkeypatch.delitem(sys.modules, name)


@pytest.mark.parametrize(
    ("block", "error"),
    [
        ("from ._impl import Thing", "write `Thing as Thing`"),
        ("from ._impl import Thing as Other", "write `Thing as Thing`"),
        ("from ._impl import Thing as Thing, Thing as Thing", "once per name"),
        ("import os", "expected `from .module import`"),
        ("from os import sep as sep", "expected `from .module import`"),
    ],
)
def test_the_export_block_holds_only_explicit_reexports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: str, error: str
) -> None:
    """Only ``from .module import Name as Name`` lines: the form mypy and pyright read as a
    re-export, so the lazy table and what type checkers see cannot drift apart."""
    write_package(tmp_path, block)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "exports_probe", raising=False)
    with pytest.raises(ImportError, match=error):
        __import__("exports_probe")
    assert "exports_probe" not in sys.modules
