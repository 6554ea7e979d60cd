"""A candidate's hit is made by a faster constructor than ``Hit(...)``: the same value."""

from __future__ import annotations

import dataclasses

import pytest

from memory_router import Explain, Hit
from memory_router._types import _positional_new
from memory_router.kit import ScoredChunk


@pytest.mark.parametrize("source", ["memory", "sessions", "extra"])
def test_a_candidates_hit_is_the_hit_the_dataclass_makes(source: str) -> None:
    chunk = ScoredChunk("c1", "memory/a.md", source, 3, 9, "the cat sleeps", 0.4)
    why = Explain(relevance=0.7, score=0.7, fusion="convex")
    made = chunk.hit("sqlite", 1.7, 0.5, None, explain=why)
    expected = Hit(
        path="memory/a.md",
        start_line=3,
        end_line=9,
        score=1.0,  # clamped
        snippet="the cat sleeps",
        source="sessions" if source == "sessions" else "memory",
        backend="sqlite",
        vector_score=0.5,
        chunk_id="c1",
        explain=why,
    )
    assert made == expected
    assert hash(made) == hash(expected)
    assert made.to_dict() == expected.to_dict()
    assert dataclasses.replace(made, score=0.2) == dataclasses.replace(expected, score=0.2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.score = 0.1  # type: ignore[misc]


def test_the_constructor_takes_every_field_in_order() -> None:
    names = [f.name for f in dataclasses.fields(Hit)]
    new = _positional_new(Hit)
    values = [f"v{i}" for i in range(len(names))]
    made = new(*values)
    assert [getattr(made, name) for name in names] == values
    with pytest.raises(TypeError):
        new(*values[:-1])  # a field left out is an error, not an unset slot
