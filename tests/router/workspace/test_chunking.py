"""Chunking (reference §1.3): exact examples, then invariants over arbitrary text."""

from __future__ import annotations

import hashlib
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_router._workspace.chunking import (
    RawChunk,
    chunk_id,
    chunk_markdown,
    utf16_length,
    weighted_length,
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def spans(chunks: list[RawChunk]) -> list[tuple[int, int]]:
    return [(c.start_line, c.end_line) for c in chunks]


# -- weighted length -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abc", 3),
        ("héllo", 5),
        ("中文", 8),  # CJK unified ideographs count 4 each
        ("한국", 8),  # Hangul syllables
        ("ꀀ", 4),  # Yi
        ("⺀", 4),  # CJK radicals supplement, first of the range
        ("豈", 4),  # CJK compatibility ideographs
        ("𠀀", 4),  # CJK ext-B: one code point (two UTF-16 units) counts 4, not 5
        ("😀", 2),  # other astral characters count their UTF-16 length
        ("ｱ", 1),  # halfwidth katakana is outside the §1.3 ranges
        ("a中😀𠀀", 1 + 4 + 2 + 4),
    ],
)
def test_weighted_length(text: str, expected: int) -> None:
    assert weighted_length(text) == expected


def test_utf16_length_counts_astral_characters_twice() -> None:
    assert utf16_length("a😀𠀀") == 5


# -- exact examples --------------------------------------------------------------------


def test_short_text_is_one_chunk_with_its_lines() -> None:
    text = "# Title\n\nfirst line\nsecond line"
    [chunk] = chunk_markdown(text, tokens=400, overlap=80)
    assert chunk == RawChunk(1, 4, text, sha(text))


def test_empty_text_gives_one_empty_chunk() -> None:
    assert chunk_markdown("", tokens=400, overlap=80) == [RawChunk(1, 1, "", sha(""))]


def test_lines_fill_max_chars_then_overlap_carries_trailing_lines() -> None:
    # 20 lines of 99 chars cost 100 each; maxChars 1600 holds 16 of them. The carry walks
    # back until 320 (overlap 80 * 4) is reached: 4 lines.
    lines = [f"{i:02d}" + "x" * 97 for i in range(1, 21)]
    chunks = chunk_markdown("\n".join(lines), tokens=400, overlap=80)
    assert spans(chunks) == [(1, 16), (13, 20)]
    assert chunks[1].text == "\n".join(lines[12:20])


def test_zero_overlap_partitions_the_lines() -> None:
    lines = [f"{i:02d}" + "x" * 97 for i in range(1, 41)]
    chunks = chunk_markdown("\n".join(lines), tokens=400, overlap=0)
    assert spans(chunks) == [(1, 16), (17, 32), (33, 40)]
    assert "\n".join(c.text for c in chunks) == "\n".join(lines)


def test_overlap_always_carries_at_least_one_segment() -> None:
    # Each line (cost 1001) alone exceeds the 320-char overlap; it is carried anyway.
    lines = ["a" * 1000, "b" * 1000, "c" * 1000]
    chunks = chunk_markdown("\n".join(lines), tokens=400, overlap=80)
    assert spans(chunks) == [(1, 1), (1, 2), (2, 3)]


def test_max_chars_has_a_floor_of_32() -> None:
    lines = ["x" * 15] * 4  # cost 16 each: two per 32-char chunk
    chunks = chunk_markdown("\n".join(lines), tokens=1, overlap=0)
    assert spans(chunks) == [(1, 2), (3, 4)]


def test_long_line_is_cut_at_max_chars_and_keeps_its_line_number() -> None:
    text = "intro\n" + "x" * 4000
    chunks = chunk_markdown(text, tokens=400, overlap=80)
    # The 320-char overlap carries the end of a cut piece (319 chars + its newline), never
    # the whole 1,600-char piece.
    assert [c.text for c in chunks] == [
        "intro",
        "intro\n" + "x" * 1600,
        "x" * 319 + "\n" + "x" * 1600,
        "x" * 319 + "\n" + "x" * 800,
    ]
    assert spans(chunks) == [(1, 1), (1, 2), (2, 2), (2, 2)]


def test_consecutive_chunks_of_long_lines_share_at_most_the_overlap() -> None:
    # Abstract-like documents: one long line each. Chunks used to share a whole piece.
    lines = [f"doc{i} " + " ".join(f"w{i}x{j}" for j in range(900)) for i in range(3)]
    chunks = chunk_markdown("\n".join(lines), tokens=400, overlap=80)
    for previous, current in itertools.pairwise(chunks):
        head = current.text.split("\n", 1)[0]
        if previous.text.endswith(head):
            assert len(head) < 320
    assert len(chunks) <= 1 + sum(len(line) for line in lines) // (1600 - 320)


def test_cjk_line_is_recut_into_pieces_of_tokens_characters() -> None:
    # 1000 ideographs fit one 1600-unit coarse slice but weigh 4000: re-cut by 400.
    chunks = chunk_markdown("中" * 1000, tokens=400, overlap=80)
    assert [c.text for c in chunks] == [
        "中" * 400,
        "中" * 79 + "\n" + "中" * 400,
        "中" * 79 + "\n" + "中" * 200,
    ]
    assert all(c.start_line == c.end_line == 1 for c in chunks)


def test_cjk_recut_never_splits_a_surrogate_pair() -> None:
    # tokens=3: pieces of 3 UTF-16 units would end inside the second ext-B character, so
    # each piece takes the whole pair: two characters (4 units).
    chunks = chunk_markdown("𠀀" * 10, tokens=3, overlap=0)
    assert "".join(c.text.replace("\n", "") for c in chunks) == "𠀀" * 10
    pieces = [p for c in chunks for p in c.text.split("\n")]
    assert pieces == ["𠀀𠀀"] * 5


def test_carriage_returns_stay_in_their_line() -> None:
    [chunk] = chunk_markdown("a\r\nb\r\n", tokens=400, overlap=80)
    assert chunk.text == "a\r\nb\r\n"
    assert spans([chunk]) == [(1, 3)]


# -- invariants ------------------------------------------------------------------------

LINE = st.text(
    alphabet=st.sampled_from([*list("ab cd\tEF#-*"), "中", "한", "😀", "𠀀", "é"]),
    max_size=120,
)
TEXT = st.lists(LINE, max_size=60).map("\n".join)
SIZES = st.tuples(st.integers(1, 60), st.integers(0, 59)).map(lambda t: (t[0], min(t[1], t[0] - 1)))


@settings(max_examples=300, deadline=None)
@given(text=TEXT, sizes=SIZES)
def test_chunks_are_ordered_cover_every_line_and_match_the_source(
    text: str, sizes: tuple[int, int]
) -> None:
    tokens, overlap = sizes
    lines = text.split("\n")
    chunks = chunk_markdown(text, tokens=tokens, overlap=overlap)
    assert chunks
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.hash == sha(chunk.text)
        # A chunk is a slice of the lines it spans (segments joined by newlines).
        source = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.text.replace("\n", "") in source.replace("\n", "")
    assert spans(chunks) == sorted(spans(chunks))
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert covered == set(range(1, len(lines) + 1))
    if overlap == 0:  # without overlap, chunks partition the text
        assert "".join(c.text.replace("\n", "") for c in chunks) == "".join(lines)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(text=TEXT, sizes=SIZES)
def test_chunk_size_is_bounded_by_max_chars_plus_the_carried_overlap(
    text: str, sizes: tuple[int, int]
) -> None:
    tokens, overlap = sizes
    max_chars = max(32, tokens * 4)
    overlap_chars = overlap * 4
    for chunk in chunk_markdown(text, tokens=tokens, overlap=overlap):
        segments = chunk.text.split("\n")
        costs = [weighted_length(s) + 1 for s in segments]
        assert all(cost <= max_chars + 1 for cost in costs)
        if sum(costs) <= max_chars or len(costs) == 1:
            continue
        # Over budget only because of carried overlap: some prefix of at most
        # overlap_chars plus one segment, followed by segments that fit the budget.
        assert any(
            sum(costs[1:k]) < max(overlap_chars, 1) and sum(costs[k:]) <= max_chars + 1
            for k in range(1, len(costs))
        )


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.text(alphabet="abc xyz", max_size=30), min_size=1, max_size=80))
def test_short_lines_round_trip_through_line_ranges(lines: list[str]) -> None:
    text = "\n".join(lines)
    chunks = chunk_markdown(text, tokens=20, overlap=5)
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    for previous, current in itertools.pairwise(chunks):
        # Progress is in the end line: a carry may repeat the whole previous buffer.
        assert current.end_line > previous.end_line
        assert previous.start_line <= current.start_line <= previous.end_line + 1
        carried = lines[current.start_line - 1 : previous.end_line]
        assert sum(len(s) + 1 for s in carried[1:]) < 20  # overlap_chars = 5 * 4


# -- ids --------------------------------------------------------------------------------


def test_chunk_id_is_sha256_of_the_colon_joined_fields() -> None:
    expected = sha("memory:memory/a.md:3:9:abc:fts-only")
    assert chunk_id("memory", "memory/a.md", 3, 9, "abc", "fts-only") == expected
