"""``store`` duplicate reporting, ``recall`` and ``forget --query`` from the command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner, Result

from memory_router.cli import build_cli

KEYWORD_ONLY = '[embedding]\nprovider = "none"\n'


def run(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), list(args))


def test_store_recall_forget_by_query(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    base = ["--config", str(write_config(KEYWORD_ONLY))]
    stored = run(*base, "store", "Prefers aisle seats", "--category", "preference")
    assert stored.stdout.startswith("Stored e-")
    dup = run(*base, "store", "prefers aisle seats", "--json")
    assert dup.exit_code == 0, dup.output
    data = json.loads(dup.stdout)
    assert (data["action"], data["text"], data["similarity"]) == (
        "duplicate",
        "Prefers aisle seats",
        1.0,
    )
    human = run(*base, "store", "Prefers aisle seats")
    assert human.stdout.startswith("Not stored: duplicate of e-")
    run(*base, "store", "Aisle seats on the left side of trains", "--category", "fact")
    recalled = run(*base, "recall", "aisle seats", "--category", "preference")
    assert recalled.exit_code == 0, recalled.output
    assert recalled.stdout.startswith("1. [preference] Prefers aisle seats (")
    assert "trains" not in recalled.stdout
    found = json.loads(run(*base, "recall", "aisle", "--json", "--limit", "1").stdout)
    assert len(found["results"]) == 1
    assert found["results"][0]["path"] == "memory/entries.md"
    assert run(*base, "recall", "zebra").stdout == "No matching entries.\n"
    vague = run(*base, "forget", "--query", "aisle seats")
    assert vague.exit_code == 0, vague.output
    assert "nothing forgotten. Candidates:" in vague.stdout
    hint = vague.stdout.splitlines()[-1]
    # The command to paste repeats the --config in use (hints that paste).
    assert hint.startswith(
        f"Hint: forget one by its id: memory-router {base[0]} {base[1]} forget e-"
    )
    assert hint.split()[-1] in vague.stdout.splitlines()[1]  # the best candidate's id
    assert len(json.loads(run(*base, "entries", "--json").stdout)) == 2
    sure = run(*base, "forget", "--query", "Prefers aisle seats", "--json")
    result = json.loads(sure.stdout)
    assert (result["action"], result["deleted"]["text"]) == ("deleted", "Prefers aisle seats")
    assert len(json.loads(run(*base, "entries", "--json").stdout)) == 1
    neither = run(*base, "forget")
    assert neither.exit_code == 2
    assert "give an entry ID or --query TEXT" in neither.output
