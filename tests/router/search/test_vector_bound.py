"""A keyword hit the vector leg did not return counts the leg's lowest cosine, not 0.

The vector leg of a hybrid search is the ``candidates`` nearest chunks, so a chunk it left
out is *at most* as close as its last one. Counting it as 0 (noise) took the whole
vector weight from keyword matches, and on LoCoMo pushed answer turns that BM25 ranks
first out of the reading budget (bench/NOTES.md, "Hybrid against its parts, item 6").
Real SQLite files and the offline MiniLM model; the pool is cut to 20 candidates a side
so that 30 notes about cooking fill the vector leg and the one note holding the
question's rare word (a name) is left out of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_router import Router, testing
from memory_router._search.calibration import vector_scale

DISHES = [
    "lentil soup with cumin", "mushroom risotto", "roast chicken with lemon", "vegetable curry",
    "banana bread", "tomato pasta sauce", "pancakes for breakfast", "fried rice with egg",
    "beef stew with carrots", "apple crumble", "pumpkin soup", "fish tacos", "onion tart",
    "potato gratin", "chili con carne", "garlic bread", "pea and mint soup", "lasagne",
    "stir-fried noodles", "shepherd's pie", "ratatouille", "chickpea salad", "omelette",
    "carrot cake", "minestrone", "falafel wraps", "spinach quiche", "paella", "dumplings",
    "gingerbread biscuits",
]  # fmt: skip
NOTES = {
    **{
        f"memory/2026-09-{day:02d}.md": f"# 2026-09-{day:02d}\n\nCooked {dish} in the kitchen"
        " for dinner tonight; the recipe needs more salt next time.\n"
        for day, dish in enumerate(DISHES, start=1)
    },
    "memory/2026-10-01.md": "# 2026-10-01\n\nTax return: Dmitri filed the VAT"
    " statement for the third quarter with the revenue office.\n",
}
QUESTION = "what did I cook in the kitchen for dinner with Dmitri"


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    tmp_path: Path = tmp_path_factory.mktemp("bound")
    workspace = testing.write_workspace(tmp_path / "ws", NOTES)
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="sqlite",
        embedding="minilm",
        query={"hybrid": {"candidate_multiplier": 1}},  # 20 candidates a side
    )
    with Router.from_config(config) as built:
        built.sync()
        yield built


def test_a_keyword_hit_outside_the_vector_leg_counts_its_lowest_cosine(router: Router) -> None:
    nearest = router.search(QUESTION, mode="vector", max_results=20, min_score=0.0).results
    assert len(nearest) == 20
    assert all(h.path != "memory/2026-10-01.md" for h in nearest)  # left out of the leg
    lowest = vector_scale("all-MiniLM-L6-v2")(min(h.score for h in nearest))
    assert lowest > 0  # the bound is worth something: MiniLM's scale maps it over noise

    response = router.search(QUESTION, max_results=20, min_score=0.0, explain=True)
    note = next(h for h in response.results if h.path == "memory/2026-10-01.md")
    why = note.explain
    assert why is not None
    assert why.fusion == "convex"
    assert note.vector_score is None  # the vector leg did not find it ...
    assert why.vector_norm == pytest.approx(lowest)  # ... so it counts the leg's lowest
    weight = router.config.query.hybrid.vector_weight
    assert why.vector_part == pytest.approx(why.support * weight * lowest)
    assert why.relevance == pytest.approx(why.vector_part + why.text_part)


def test_explain_names_the_bound(router: Router) -> None:
    from memory_router.cli._explain import factors

    response = router.search(QUESTION, max_results=20, min_score=0.0, explain=True)
    note = next(h for h in response.results if h.path == "memory/2026-10-01.md")
    assert note.explain is not None
    assert "at most the leg's lowest" in factors(note.explain)
