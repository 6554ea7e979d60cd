"""The way in from OpenClaw: its memory index (vectors reused) and its openclaw.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_router import InvalidInput, migrate
from memory_router._config.config import Config
from memory_router._config.json5 import Json5Error, loads
from memory_router._config.openclaw import convert, to_toml
from memory_router._config.settings import parse_settings
from memory_router.testing import write_workspace
from migrate_support import CountingEmbedder, config_for, corpus, make_router, write_openclaw_index

LATER = "# Later\n\nA note written after the switch, embedded by OpenClaw on another agent.\n"


def test_an_openclaw_index_fills_the_embedding_cache_so_indexing_embeds_nothing(
    tmp_path: Path,
) -> None:
    workspace = write_workspace(tmp_path / "workspace", {**corpus(12), "memory/later.md": LATER})
    with make_router(config_for(tmp_path, workspace, "new")) as router:
        snapshot = router.snapshot()
        chunks = [c for doc in snapshot.documents for c in snapshot.chunks(doc)]
        later = [c for c in chunks if c.path == "memory/later.md"]
        seed = write_openclaw_index(
            tmp_path / "main.sqlite",
            [c for c in chunks if c not in later],
            provider="counting",
            model="count-384",
            cached=[later[0].text],  # only in its embedding_cache table
        )
        CountingEmbedder.calls.clear()
        report = migrate(router, "sqlite", source_path=seed)
        assert report.mode == "rebuild"  # its chunking and scope are not recorded as ours
        assert report.seeded == 13  # 12 chunk vectors + 1 from its embedding_cache
        assert (report.embedded, report.cache_hits, report.chunks) == (0, 13, 13)
        (sync,) = router.sync()
        assert sync.embedded == 0
        assert CountingEmbedder.calls == []
        hits = router.search("note written after the switch").results
        assert hits[0].path == "memory/later.md"


def test_an_openclaw_index_of_another_model_is_re_embedded(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "workspace", corpus(5))
    with make_router(config_for(tmp_path, workspace, "new")) as router:
        snapshot = router.snapshot()
        chunks = [c for doc in snapshot.documents for c in snapshot.chunks(doc)]
        seed = write_openclaw_index(
            tmp_path / "main.sqlite", chunks, provider="openai", model="text-embedding-3-small"
        )
        CountingEmbedder.calls.clear()
        report = migrate(router, "sqlite", source_path=seed)
        assert (report.seeded, report.embedded) == (0, 5)
        assert sum(CountingEmbedder.calls) == 5


OPENCLAW_JSON = """
// openclaw.json as people write it: JSON5
{
  agents: {
    defaults: {
      workspace: '~/agent',
      memorySearch: {
        provider: "openai", model: 'text-embedding-3-small',
        remote: { baseUrl: "https://example.invalid/v1", apiKey: "sk-secret", },
        sources: ["memory", "sessions"],
        experimental: { sessionMemory: true },
        extraPaths: ["notes"],
        chunking: { tokens: 300, overlap: 60 },
        query: { maxResults: 8, minScore: .3,
                 hybrid: { vectorWeight: 0.6, textWeight: 0.4, mmr: { enabled: true } } },
        store: { path: "~/.openclaw/memory/{agentId}.sqlite", vector: { enabled: true } },
        cache: { maxEntries: 50000 },
        multimodal: { enabled: false },
        sparkle: 3, /* a key OpenClaw never had */
      },
    },
    list: [ { id: "ops", memorySearch: { extraPaths: ["runbooks"], query: { maxResults: 4 } } } ],
  },
  memory: { backend: "qmd", citations: "on", qmd: { paths: [ { path: "~/docs" } ],
            limits: { timeoutMs: 4000 } } },
}
"""


def test_openclaw_json_becomes_our_toml_and_names_what_it_leaves(tmp_path: Path) -> None:
    conversion = convert(loads(OPENCLAW_JSON), agent="ops")
    config = conversion.config
    assert config["embedding"] == {
        "provider": "openai",
        "model": "text-embedding-3-small",
        "remote": {"base_url": "https://example.invalid/v1"},
    }
    assert config["sources"] == ["memory", "sessions"]
    # The only agent is the default one: agents.defaults.workspace is its workspace, and
    # relative extra paths are OpenClaw's, against that workspace; QMD paths are carried
    # as extra paths, as OpenClaw's doctor does.
    home = Path.home()
    assert (conversion.agent, conversion.layout) == ("ops", "legacy")
    assert config["workspace"] == str(home / "agent")
    assert config["extra_paths"] == [
        str(home / "agent/notes"),
        str(home / "agent/runbooks"),
        str(home / "docs"),
    ]
    assert config["query"]["max_results"] == 4  # the agent's own value wins
    assert config["query"]["mmr"] == {"enabled": True}
    assert config["router"] == {"chain": ["qmd", "sqlite"]}
    assert config["backends"]["qmd"] == {"search_timeout_s": 4.0}
    # The legacy chunker, with the file's own sizes: its vectors stay reusable.
    assert config["chunking"] == {"tokens": 300, "overlap": 60, "structure": "off"}
    dropped = dict(conversion.dropped)
    level = "agents.defaults.memorySearch."
    assert set(dropped) == {
        level + "remote.apiKey",
        level + "store.path",
        level + "multimodal.enabled",
        level + "sparkle",
    }
    assert dropped[level + "sparkle"] == "unknown key"
    assert "migrate --from-path" in dropped[level + "store.path"]
    text = to_toml(conversion, origin="openclaw.json")
    assert "sk-secret" not in text
    assert "#   agents.defaults.memorySearch.remote.apiKey: secrets stay out" in text
    import tomllib

    parsed = tomllib.loads(text)
    assert parse_settings(Config, parsed, path="converted", table="").query.max_results == 4


def test_json5_reader_handles_what_openclaw_files_contain() -> None:
    assert loads("{a: 1, 'b': [0x10, +2, -.5, 3.,], /* c */ c: 'it\\'s', // x\n}") == {
        "a": 1,
        "b": [16, 2, -0.5, 3],
        "c": "it's",
    }
    with pytest.raises(Json5Error, match="line 2"):
        loads("{\n a: }")
    with pytest.raises(InvalidInput, match="no agent 'nobody'"):
        convert({"agents": {"list": []}}, agent="nobody")
