"""The Compose deployment is validated here, not run (no Docker engine on these machines)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml
from click.testing import CliRunner

from memory_router import load_config
from memory_router.cli import build_cli

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "compose"


def test_compose_service_builds_from_files_that_exist() -> None:
    spec = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    service = spec["services"]["memory-router"]
    context = (COMPOSE / service["build"]["context"]).resolve()
    assert context == ROOT
    dockerfile = context / service["build"]["dockerfile"]
    assert dockerfile.is_file()
    for line in dockerfile.read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (context / source).exists(), source
    mounts = [v.split(":")[0] for v in service["volumes"]]
    assert "./config.toml" in mounts
    assert set(spec["volumes"]) == {m for m in mounts if not m.startswith((".", "$"))}


def test_compose_commands_are_real_cli_commands() -> None:
    spec = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    service = spec["services"]["memory-router"]
    cli = build_cli()
    commands = [service["command"][0], service["healthcheck"]["test"][2]]
    for name in commands:
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)


def test_compose_config_is_valid(tmp_path: Path) -> None:
    config = load_config(COMPOSE / "config.toml", environ={})
    assert str(config.workspace_path) == "/workspace"
    assert config.router.chain == ("sqlite",)
    assert tomllib.loads((COMPOSE / "config.toml").read_text())


def test_compose_serves_with_a_token_and_checks_health() -> None:
    spec = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    service = spec["services"]["memory-router"]
    assert service["command"] == ["serve"]
    assert service["healthcheck"]["test"] == ["CMD", "memory-router", "health"]
    config = load_config(COMPOSE / "config.toml", environ={})
    assert config.serve.host == "0.0.0.0"
    assert config.serve.token is not None
    assert config.serve.token.env in service["environment"]
