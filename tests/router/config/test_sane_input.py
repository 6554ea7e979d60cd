"""Every input encodable, every setting sane (issue #14.7).

User text is scrubbed once at the boundary, so every answer encodes as UTF-8 JSON; bad
bytes in the config file, state folders that cannot be used and numbers out of range are
:class:`ConfigError` naming the key or the path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_router import ConfigError, Router, load_config
from memory_router.cli import build_cli


def encodes(value: object) -> bool:
    json.dumps(value, ensure_ascii=False).encode("utf-8")
    return True


@pytest.fixture
def router(write_workspace, write_config) -> Router:  # type: ignore[no-untyped-def]
    write_workspace()
    return Router.from_config(write_config('[embedding]\nprovider = "none"\n'))


@pytest.mark.parametrize("query", ["\udcff\udcfe tea", "green \ud800 tea", "tea\x00\udfff"])
def test_a_search_answer_always_encodes_as_utf8_json(router: Router, query: str) -> None:
    with router:
        response = router.search(query, min_score=0.0)
    assert response.results  # the readable part of the query still searches
    assert encodes(response.to_dict())
    assert "tea" in response.query


def test_a_stored_entry_always_encodes(router: Router) -> None:
    with router:
        entry = router.store("remember \udcff this")
        assert encodes(entry.to_dict())
        assert [e.id for e in router.entries()] == [entry.id]


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("[router]\ntimeout_s = 1e300\n", "timeout_s"),
        ("[cache]\nmax_entries = -1\n", "max_entries"),
        ("[router.breaker]\ncooldown_s = -2.5\n", "cooldown_s"),
        ("[sync]\nwatch_debounce_ms = 10000000000\n", "watch_debounce_ms"),
        ("[embedding.remote]\nquery_timeout_s = -1\n", "query_timeout_s"),
    ],
)
def test_numbers_out_of_range_are_config_errors_naming_the_key(
    tmp_path: Path, body: str, key: str
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(body)
    with pytest.raises(ConfigError, match="from 0 to") as info:
        load_config(path, environ={})
    assert info.value.key == key


def test_backend_settings_out_of_range_are_config_errors(write_workspace, write_config) -> None:  # type: ignore[no-untyped-def]
    write_workspace()
    config = write_config("[backends.sqlite]\nbusy_timeout_ms = -1\n")
    with pytest.raises(ConfigError) as info:
        Router.from_config(config)
    assert (info.value.table, info.value.key) == ("backends.sqlite", "busy_timeout_ms")


def test_bad_bytes_in_the_config_file_are_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b'agent_id = "main"\n# caf\xe9\n')
    with pytest.raises(ConfigError, match="not valid UTF-8") as info:
        load_config(path, environ={})
    assert str(path) in info.value.message


def test_a_state_dir_that_cannot_be_created_is_a_config_error(
    tmp_path: Path,
    write_workspace,
    write_config,  # type: ignore[no-untyped-def]
) -> None:
    write_workspace()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    config = write_config(f'state_dir = "{blocker}/state"\n[embedding]\nprovider = "none"\n')
    config.write_text(config.read_text().replace(f'state_dir = "{tmp_path / "state"}"\n', ""))
    with Router.from_config(config) as router, pytest.raises(ConfigError) as info:
        router.search("tea")
    assert info.value.key == "state_dir"
    assert str(blocker) in info.value.message
    result = CliRunner().invoke(build_cli(), ["--config", str(config), "search", "tea"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: key 'state_dir': cannot create folder")
    assert "Hint: set state_dir to a folder" in result.stderr


def test_an_unwritable_state_dir_is_a_config_error(write_workspace, write_config) -> None:  # type: ignore[no-untyped-def]
    unwritable = Path("/sys/memory-router-state")  # refused even to root
    if not Path("/sys").is_dir():
        pytest.skip("needs /sys")
    write_workspace()
    config = write_config('[embedding]\nprovider = "none"\n')
    router = Router.from_config(config, state_dir=str(unwritable))
    with router, pytest.raises(ConfigError) as info:
        router.sync()
    assert info.value.key == "state_dir"
    assert str(unwritable) in info.value.message
