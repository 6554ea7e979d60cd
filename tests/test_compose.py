"""The Compose deployment is validated here, not run (no Docker engine on these machines)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
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
    assert set(spec["volumes"]) >= {m for m in mounts if not m.startswith((".", "$"))}


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


def test_lancedb_deployment_two_replicas_share_one_store() -> None:
    spec = yaml.safe_load((COMPOSE / "compose.lancedb.yaml").read_text())
    services = spec["services"]
    # Its own file: `up` starts the store and the replicas, not the default service (nor
    # does it ask for that service's settings).
    assert set(services) == {"object-store", "create-bucket", "replica-1", "replica-2"}
    default = yaml.safe_load((COMPOSE / "compose.yaml").read_text())["services"]
    assert set(default) == {"memory-router"}
    replicas = [services["replica-1"], services["replica-2"]]
    for replica in replicas:
        assert replica["depends_on"]["create-bucket"]["condition"] == (
            "service_completed_successfully"
        )
        mounts = dict(v.split(":")[:2] for v in replica["volumes"])
        assert mounts["./config.lancedb.toml"] == "/config/config.toml"
    states = [next(v for v in r["volumes"] if v.endswith(":/state")) for r in replicas]
    assert states[0] != states[1]  # each replica's SQLite fallback is its own
    assert "ARG EXTRAS=" in (COMPOSE / "Dockerfile").read_text()


@pytest.mark.parametrize("file", ["compose.yaml", "compose.lancedb.yaml"])
def test_every_service_command_port_and_image_agree(file: str) -> None:
    """What a Docker engine would find out on `up`: each memory-router service runs a real
    command its image has the extras for, and `serve` publishes the port its config
    listens on (one host port per service) behind a token; every other image is pinned."""
    spec = yaml.safe_load((COMPOSE / file).read_text())
    services = spec["services"]
    published: list[str] = []
    for name, service in services.items():
        assert "profiles" not in service, name  # each file is one deployment, whole
        for needed in service.get("depends_on", {}):
            assert needed in services, (name, needed)
        if "build" not in service:
            repository, _, tag = service["image"].rpartition(":")
            assert repository, (name, service["image"])
            assert tag not in ("", "latest"), (name, service["image"])  # a pinned release
            continue
        published += _check_router_service(name, service)
    assert len(published) == len(set(published)), published
    named = {v.split(":")[0] for s in services.values() for v in s.get("volumes", [])}
    assert {m for m in named if not m.startswith((".", "$"))} == set(spec["volumes"])


def _check_router_service(name: str, service: dict[str, Any]) -> list[str]:
    """Check one memory-router service; returns the host ports it publishes."""
    default_extras = re.search(r"^ARG EXTRAS=(\S+)", (COMPOSE / "Dockerfile").read_text(), re.M)
    assert default_extras is not None
    extras = set(service["build"].get("args", {}).get("EXTRAS", default_extras[1]).split(","))
    command = service["command"]
    assert CliRunner().invoke(build_cli(), [command[0], "--help"]).exit_code == 0, name
    mounts = dict(v.split(":")[:2] for v in service["volumes"])
    config_file = next(k for k, v in mounts.items() if v == "/config/config.toml")
    environ = {key: "set" for key in service["environment"]}
    config = load_config(COMPOSE / config_file, environ=environ)
    assert service["environment"]["MEMORY_ROUTER_CONFIG"] == "/config/config.toml"
    assert {b for b in config.router.chain if b != "sqlite"} <= extras, name
    if command != ["serve"]:
        assert "ports" not in service, name
        return []
    assert {"mcp", "watch"} <= extras, name  # serve answers over MCP and watches the files
    assert service["healthcheck"]["test"] == ["CMD", "memory-router", "health"]
    assert config.serve.host == "0.0.0.0"  # reachable through the published port ...
    assert config.serve.token is not None  # ... so a token is required
    assert "?" in service["environment"][config.serve.token.env]  # and must be given
    [port] = service["ports"]
    host, host_port, container_port = port.split(":")
    assert (host, int(container_port)) == ("127.0.0.1", config.serve.port), name
    return [host_port]


def test_lancedb_config_points_every_replica_at_the_store() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    config = load_config(COMPOSE / "config.lancedb.toml", environ=environ)
    assert config.router.chain == ("lancedb", "sqlite")
    from memory_router.kit import parse_settings
    from memory_router_lancedb import LanceSettings

    settings = parse_settings(
        LanceSettings,
        config.backends["lancedb"],
        path="config.lancedb.toml",
        table="backends.lancedb",
    )
    assert settings.resolved_uri(config) == "s3://memory/agents/main"
    assert settings.storage_options["secret_access_key"].env == "AWS_SECRET_ACCESS_KEY"
    spec = yaml.safe_load((COMPOSE / "compose.lancedb.yaml").read_text())
    for name in ("replica-1", "replica-2"):
        env = spec["services"][name]["environment"]
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(env)
    endpoint = settings.storage_options["endpoint"].value or ""
    assert endpoint.startswith("http://object-store:")
