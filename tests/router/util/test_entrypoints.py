"""Entry points read from the metadata files: the same as importlib.metadata, cheaper."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

from memory_router._plugins import GROUP
from memory_router._util.entrypoints import distribution, entry_points


def dist(folder: Path, name: str, entry_points_txt: str, *, egg: bool = False) -> None:
    meta = folder / (f"{name}.egg-info" if egg else f"{name}-1.0.dist-info")
    meta.mkdir(parents=True)
    (meta / "entry_points.txt").write_text(entry_points_txt, encoding="utf-8")
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")


def test_same_entry_points_as_importlib_metadata() -> None:
    ours = {(e.name, e.value) for e in entry_points(GROUP)}
    theirs = {(e.name, e.value) for e in importlib.metadata.entry_points(group=GROUP)}
    assert ours == theirs
    assert {"sqlite", "minilm"} <= {name for name, _ in ours}


def test_sections_comments_extras_and_first_on_the_path_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    dist(first, "alpha", "# comment\n[console_scripts]\nsqlite = wrong:main\n\n"
                         "[memory_router]\n; also a comment\nsqlite = json:dumps [extra]\n"
                         "pkg = os.path\n")  # fmt: skip
    dist(second, "beta", "[memory_router]\nsqlite = shadowed\nother = json:decoder.JSONDecoder\n")
    dist(second, "gamma", "[memory_router]\nlegacy = json\n", egg=True)
    (second / "not-metadata.dist-info").write_text("a file, not a folder")
    found = {e.name: e for e in entry_points(GROUP, [str(first), str(second), "/no/such/dir"])}
    assert {name: e.value for name, e in found.items()} == {
        "sqlite": "json:dumps [extra]",
        "pkg": "os.path",
        "other": "json:decoder.JSONDecoder",
        "legacy": "json",
    }
    import json
    import os

    assert found["sqlite"].load() is json.dumps
    assert found["pkg"].load() is os.path
    assert found["other"].load() is json.decoder.JSONDecoder
    assert distribution(found["other"]) == ("beta", "1.0")


def test_the_default_path_is_sys_path() -> None:
    assert entry_points(GROUP) == entry_points(GROUP, sys.path)
