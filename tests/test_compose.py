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


def test_lancedb_profile_two_replicas_share_one_store() -> None:
    spec = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    services = spec["services"]
    profile = {n for n, s in services.items() if "lancedb" in s.get("profiles", [])}
    assert profile == {"object-store", "create-bucket", "replica-1", "replica-2"}
    assert "profiles" not in services["memory-router"]  # the default deployment is unchanged
    replicas = [services["replica-1"], services["replica-2"]]
    cli = build_cli()
    for replica in replicas:
        assert replica["build"]["args"]["EXTRAS"].split(",") >= ["minilm", "watch", "lancedb"]
        assert replica["depends_on"]["create-bucket"]["condition"] == (
            "service_completed_successfully"
        )
        mounts = dict(v.split(":")[:2] for v in replica["volumes"])
        assert mounts["./config.lancedb.toml"] == "/config/config.toml"
        for name in (replica["command"][0], replica["healthcheck"]["test"][2]):
            assert CliRunner().invoke(cli, [name, "--help"]).exit_code == 0, name
    states = [next(v for v in r["volumes"] if v.endswith(":/state")) for r in replicas]
    assert states[0] != states[1]  # each replica's SQLite fallback is its own
    named = {v.split(":")[0] for s in services.values() for v in s.get("volumes", [])}
    assert {m for m in named if not m.startswith((".", "$"))} == set(spec["volumes"])
    assert "ARG EXTRAS=" in (COMPOSE / "Dockerfile").read_text()


def test_lancedb_profile_config_points_every_replica_at_the_store() -> None:
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
    spec = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    for name in ("replica-1", "replica-2"):
        env = spec["services"][name]["environment"]
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(env)
    endpoint = settings.storage_options["endpoint"].value or ""
    assert endpoint.startswith("http://object-store:")
