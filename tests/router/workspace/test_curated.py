"""Curated facts are findable: a bullet-list MEMORY.md chunked by its structure.

A new user's 34-line MEMORY.md of bullets, asked the questions that used to return
"No matches." on the defaults: each answer must be the bullet itself, above the default
``min_score``, with the offline MiniLM model (and keyword-only for literal words). Each
bullet is a chunk of its own (one vector per fact), led by the path of its headings.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_router import Router, testing
from memory_router._workspace.structure import blocks, chunk_structured

MEMORY = """# Memory

## Preferences

- Coffee: flat white with oat milk, no sugar.
- Tea in the afternoon, green or jasmine.
- Breakfast: porridge with berries on weekdays.
- Music while working: ambient, no lyrics.

## Health

- Allergic to penicillin (hives in 2019); carry the note in the wallet.
- Runs three times a week, 5 km loop by the river.

## Setup

- Shell: fish with the starship prompt.
- Editor: Neovim (LazyVim), light theme during the day.
- Laptop: 14-inch, Linux, external keyboard with brown switches.

## Travel

- Seats: aisle seat on long-haul flights, window on short hops.
- Prefers trains under four hours over flying.
- Passport renewal due in March 2027.

## People

- Ana is the sister; birthday on 12 June, likes orchids.
- Tomás is the manager; weekly one-to-one on Thursdays.
- Lena from the climbing gym lends the belay device.

## Work

- Standup at 09:30; no meetings on Friday mornings.
- Deploys go through the staging cluster first.
"""

QUESTIONS = {
    "what kind of coffee do I like": "flat white",
    "am I allergic to any medicine": "penicillin",
    "what seat do I want on a long flight": "aisle seat",
    "flat white": "flat white",
}


def test_every_bullet_is_a_chunk_cited_by_its_own_lines_and_led_by_its_headings() -> None:
    chunks = chunk_structured(MEMORY, tokens=200, overlap=40)
    lines = MEMORY.split("\n")
    bullets = [n for n, line in enumerate(lines, start=1) if line.startswith("- ")]
    assert [c.start_line for c in chunks] == bullets
    assert all(c.end_line == c.start_line for c in chunks)
    coffee = next(c for c in chunks if "Coffee" in c.text)
    assert coffee.text == "# Memory › Preferences\n" + lines[coffee.start_line - 1]
    assert next(c for c in chunks if "Deploys" in c.text).text.startswith("# Memory › Work\n")


def test_continuation_lines_and_nested_items_stay_with_their_bullet() -> None:
    text = "# Notes\n\n## People\n\n- Ana: sister;\n  birthday 12 June.\n  - likes orchids\n- Tom\n"
    first, second = chunk_structured(text, tokens=200, overlap=40)
    assert (first.start_line, first.end_line) == (5, 7)
    assert first.text.startswith("# Notes › People\n- Ana: sister;")
    assert "orchids" in first.text
    assert (second.start_line, second.text) == (8, "# Notes › People\n- Tom")


def test_prose_is_packed_per_section_beside_the_bullets() -> None:
    text = "# Recipes\n\nSoup: lentils.\n\nBread: rye.\n\n- Salt to taste\n\n## Cakes\n\nFlour.\n"
    chunks = chunk_structured(text, tokens=200, overlap=40)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 5), (7, 7), (9, 11)]
    assert chunks[1].text == "# Recipes\n- Salt to taste"


def test_every_bullet_is_its_own_block_with_its_heading_in_front() -> None:
    lines = MEMORY.split("\n")
    spans = blocks(lines)
    texts = ["\n".join(lines[a : b + 1]) for a, b in spans]
    assert texts[0].startswith("# Memory")
    assert texts[0].endswith("no sugar.")
    assert "- Tea in the afternoon, green or jasmine." in texts
    assert all(t.count("\n- ") + t.startswith("- ") <= 1 for t in texts)
    assert sum(1 for t in texts if "- " in t) == MEMORY.count("\n- ") == 17


def test_long_blocks_fall_back_to_windows_and_keep_line_numbers() -> None:
    text = "# Notes\n\n" + " ".join(["word"] * 400) + "\n\n- short item\n"
    chunks = chunk_structured(text, tokens=50, overlap=10)
    assert chunks[-1].text == "# Notes\n- short item"
    assert chunks[-1].start_line == 5
    assert all(1 <= c.start_line <= c.end_line <= 3 for c in chunks[:-1])
    assert len(chunks) > 3


@pytest.fixture
def router(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Router]:
    workspace = testing.write_workspace(tmp_path / "ws", {"MEMORY.md": MEMORY})
    config = testing.router_config(tmp_path, workspace, backend="sqlite", embedding=request.param)
    with Router.from_config(config, plugins=[testing]) as built:
        built.sync()
        yield built


@pytest.mark.parametrize("router", ["minilm"], indirect=True)
def test_paraphrased_questions_find_the_bullet_on_the_defaults(router: Router) -> None:
    for question, expected in QUESTIONS.items():
        results = router.search(question).results
        assert results, f"nothing for {question!r}"
        top = results[0]
        assert expected in top.snippet, (question, top.snippet)
        # Its bullet (with a touching bullet that also ranked), not its section.
        assert top.end_line - top.start_line <= 1, (question, top)
        assert top.snippet.count("# Memory › ") == 1, top.snippet
    # A question about two facts: each bullet holds half of it, so on the defaults only
    # the one MiniLM sees closer passes; both lead the ranking.
    both = router.search("which shell and editor do I use", min_score=0).results[:2]
    assert {"Shell: fish", "Editor: Neovim"} <= {
        t for h in both for t in ("Shell: fish", "Editor: Neovim") if t in h.snippet
    }


@pytest.mark.parametrize("router", ["none"], indirect=True)
def test_literal_words_find_the_bullet_without_embeddings(router: Router) -> None:
    for question in ("flat white", "penicillin allergy", "aisle seat"):
        top = router.search(question).results[0]
        assert question.split()[0] in top.snippet.lower()
