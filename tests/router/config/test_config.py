"""Configuration: defaults equal OpenClaw's, errors name file, table and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_router import Config, ConfigError, load_config
from memory_router.kit import Secret


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_equal_openclaw() -> None:
    c = load_config(None, environ={})
    # Deliberate departures, measured in docs/performance.md: chunks sized for MiniLM's
    # window and the snippet an agent reads, curated files chunked by structure; hybrid
    # weights 0.4 / 0.6 with min_score 0.2 (OpenClaw: 0.7 / 0.3 and 0.35, the same cosine
    # threshold for a vector-only hit) and a candidate pool counted for 20 results at least.
    assert (c.chunking.tokens, c.chunking.overlap, c.chunking.structure) == (200, 40, "auto")
    assert (c.query.max_results, c.query.min_score) == (6, 0.2)
    h = c.query.hybrid
    assert (h.enabled, h.vector_weight, h.text_weight, h.candidate_multiplier) == (
        True,
        0.4,
        0.6,
        4,
    )
    assert (h.candidates(6), h.candidates(30), h.candidates(100)) == (80, 120, 200)
    assert c.query.min_score / h.vector_weight == pytest.approx(0.35 / 0.7)
    assert (c.query.temporal_decay.enabled, c.query.temporal_decay.half_life_days) == (False, 30)
    assert (c.query.mmr.enabled, c.query.mmr.lambda_) == (False, 0.7)
    assert (c.query.max_snippet_chars, c.query.max_injected_chars) == (700, 4000)
    assert c.citations == "auto"
    assert c.sources == ("memory",)
    assert c.sync.watch_debounce_ms == 1500
    assert (c.sync.sessions.delta_bytes, c.sync.sessions.delta_messages) == (100000, 50)
    assert c.router.chain == ("sqlite",)


def test_unknown_key_names_file_table_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, "[query.hybrid]\nvector_wieght = 0.5\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    error = info.value
    assert (error.path, error.table, error.key) == (str(path), "query.hybrid", "vector_wieght")
    assert "vector_weight" in error.message  # the known keys are listed


def test_wrong_type_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, '[query]\nmax_results = "ten"\n')
    with pytest.raises(ConfigError, match="expected an integer") as info:
        load_config(path, environ={})
    assert info.value.key == "max_results"


def test_bad_literal_and_bool(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'auto'"):
        load_config(write(tmp_path, 'citations = "sometimes"\n'), environ={})
    with pytest.raises(ConfigError, match="true or false"):
        load_config(write(tmp_path, "[sync]\non_search = 1\n"), environ={})


def test_malformed_toml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[query\nmax_results = 3\n")
    with pytest.raises(ConfigError, match="not valid TOML") as info:
        load_config(path, environ={})
    assert info.value.path == str(path)


def test_missing_explicit_file() -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config("/nonexistent/memory-router.toml", environ={})


def test_env_overrides_and_their_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "[query]\nmax_results = 3\n")
    env = {
        "MEMORY_ROUTER_QUERY__MAX_RESULTS": "9",
        "MEMORY_ROUTER_ROUTER__CHAIN": '["qmd", "sqlite"]',
    }
    config = load_config(path, environ=env)
    assert config.query.max_results == 9
    assert config.router.chain == ("qmd", "sqlite")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={"MEMORY_ROUTER_QUERY__MAX_RESULTZ": "9"})
    assert info.value.path == "<env MEMORY_ROUTER_QUERY__MAX_RESULTZ>"


def test_config_file_discovery_by_env(tmp_path: Path) -> None:
    path = write(tmp_path, 'agent_id = "ops"\n')
    assert load_config(None, environ={"MEMORY_ROUTER_CONFIG": str(path)}).agent_id == "ops"


def test_paths_expand_tokens_and_are_relative_to_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'agent_id = "ops"\nworkspace = "ws/{agentId}"\nstate_dir = "state"\n')
    config = load_config(path, environ={})
    assert config.workspace_path == tmp_path / "ws" / "ops"
    assert config.agent_state_path == tmp_path / "state" / "agents" / "ops"
    assert config.expand(config.cache.path) == tmp_path / "state/agents/ops/embedding-cache.sqlite"


def test_secrets_by_indirection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, '[embedding.remote]\napi_key = { env = "MY_KEY" }\n')
    config = load_config(path, environ={})
    key = config.embedding.remote.api_key
    assert isinstance(key, Secret)
    assert key.resolve() is None
    monkeypatch.setenv("MY_KEY", "sk-test")
    assert key.resolve() == "sk-test"
    assert "sk-test" not in repr(key)
    assert key.describe() == "env MY_KEY"
    with pytest.raises(ConfigError, match="exactly one"):
        load_config(
            write(tmp_path, '[embedding.remote]\napi_key = { env = "A", file = "/b" }\n'),
            environ={},
        )


def test_values_are_clamped_like_openclaw(tmp_path: Path) -> None:
    text = (
        "[chunking]\ntokens = 10\noverlap = 50\n"
        "[query.hybrid]\nvector_weight = 3\ntext_weight = 1\ncandidate_multiplier = 99\n"
    )
    config = load_config(write(tmp_path, text), environ={})
    assert config.chunking.overlap == 9
    assert config.query.hybrid.vector_weight == pytest.approx(0.5)
    assert config.query.hybrid.candidate_multiplier == 20


def test_bad_agent_id(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="agent_id must be letters"):
        load_config(write(tmp_path, 'agent_id = "../etc"\n'), environ={})


@pytest.mark.parametrize("agent", ["../../escape", "a/b", "", "ü", ".", "x\x00"])
def test_agent_id_is_checked_by_the_config_whatever_its_source(tmp_path: Path, agent: str) -> None:
    from memory_router import Router

    with pytest.raises(ValueError, match="agent_id"):
        Config(agent_id=agent)
    with pytest.raises(ValueError, match="agent_id"):
        Config().replace(agent_id=agent)
    with pytest.raises(ConfigError, match="agent_id"):
        Router.from_config(Config(state_dir=str(tmp_path)), agent_id=agent)
    assert not (tmp_path / "escape").exists()


def test_overrides_win(tmp_path: Path) -> None:
    config = load_config(
        None, environ={}, overrides={"query": {"max_results": 2}, "workspace": str(tmp_path)}
    )
    assert isinstance(config, Config)
    assert config.query.max_results == 2
    assert config.workspace_path == tmp_path
