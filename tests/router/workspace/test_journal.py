"""The entries journal: lossless round trip, byte-preserving edits, hand edits."""

from __future__ import annotations

import hashlib
import os
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_router import CATEGORIES, Config, Entry, InvalidInput, NotFound
from memory_router._workspace.discovery import discover
from memory_router._workspace.files import read_memory_file
from memory_router._workspace.journal import (
    HEADER,
    append_entry,
    entry_chunks,
    format_item,
    journal_text,
    new_entry,
    read_items,
    read_journal,
    remove_entry,
)
from memory_router._workspace.snapshot import load_document

WHEN = datetime(2026, 11, 21, 13, 5, tzinfo=UTC)


def entry(text: str, entry_id: str = "e-000000000001", **kw: object) -> Entry:
    fields: dict[str, object] = {"importance": 0.7, "category": "other", "created_at": WHEN}
    fields.update(kw)
    return Entry(id=entry_id, text=text, **fields)  # type: ignore[arg-type]


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "ws" / "memory" / "entries.md"


# -- format and round trip -------------------------------------------------------------


def test_format_is_a_readable_markdown_list(journal: Path) -> None:
    append_entry(journal, entry("I prefer tea", category="preference"))
    append_entry(journal, entry("line one\nline two", "e-000000000002", importance=1.0))
    assert journal.read_text() == HEADER + (
        "- I prefer tea <!-- mr:id=e-000000000001;importance=0.7;category=preference;"
        "created=2026-11-21T13:05:00Z -->\n"
        "- line one\n"
        "  line two <!-- mr:id=e-000000000002;importance=1.0;category=other;"
        "created=2026-11-21T13:05:00Z -->\n"
    )


TRICKY = [
    "plain",
    "ends with -->",
    "<!-- mr:id=fake;importance=0.1 -->",
    "text <!-- mr:id=e-x;importance=0.1;category=fact;created=2026-01-01T00:00:00Z -->",
    "quotes \"double\" and 'single' and `backticks`",
    "- leading dash",
    "-",
    "  leading and trailing spaces  ",
    "\ttabs\t",
    "multi\nline\n\nwith blank\n",
    "\n\nstarts with newlines",
    "windows\r\nline endings\r\n",
    "back\\slash \\\\ and \\u{41} and \\!",
    "emoji 😀 and 中文 and 𠀀",
    "control \x00 \x1b \x7f \x85 and separators \u2028\u2029",
    "nbsp at end\u00a0",
    "\u3000ideographic space first",
    "# looks like a heading",
    "  - nested looking\n  - items",
    "lone surrogate \ud800 kept",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_text_round_trips(journal: Path, text: str) -> None:
    before = entry("neighbour before", "e-before")
    after = entry("neighbour after", "e-after")
    for item in (before, entry(text), after):
        append_entry(journal, item)
    assert read_journal(journal) == [before, entry(text), after]


# Pieces the format must escape or must not misread, mixed into arbitrary text.
PIECES = ["-->", "<!--", "<!-- mr:id=x -->", "\n", "\n- ", "- ", "\\", "\\u{41}", "\\!", "\r\n"]
PIECES += [" ", "\t", "  \n", '"', "'", "`", "😀", "𠀀", "\u2028", "\x00", "\ud800", "#"]
OFFSETS = st.integers(-23 * 60 + 1, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))
ENTRIES = st.builds(
    Entry,
    id=st.from_regex(r"e-[0-9a-f]{12}", fullmatch=True),
    text=st.lists(st.one_of(st.text(), st.sampled_from(PIECES)), min_size=1)
    .map("".join)
    .filter(lambda t: bool(t.strip())),
    importance=st.floats(0.0, 1.0),
    category=st.sampled_from(CATEGORIES),
    created_at=st.builds(
        lambda d, tz: d.replace(tzinfo=tz),
        st.datetimes(datetime(1970, 1, 2), datetime(9999, 1, 1)),
        OFFSETS,
    ),
)


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=st.lists(ENTRIES, min_size=1, max_size=5, unique_by=lambda e: e.id))
def test_any_entries_round_trip_losslessly(tmp_path: Path, entries: list[Entry]) -> None:
    path = tmp_path / f"j-{os.urandom(6).hex()}.md"
    for item in entries:
        append_entry(path, item)
    got = read_journal(path)
    assert got == entries
    assert [e.created_at.utcoffset() for e in got] == [e.created_at.utcoffset() for e in entries]
    assert journal_text(got).encode("utf-8", "surrogatepass") == path.read_bytes()
    path.unlink()


# -- new entries -----------------------------------------------------------------------


def test_new_entry_keeps_text_exactly_and_sets_id_and_time() -> None:
    created = new_entry("  spaced  ", importance=1, category="fact")
    assert created.text == "  spaced  "
    assert created.importance == 1.0
    assert isinstance(created.importance, float)
    assert created.category == "fact"
    assert created.id.startswith("e-")
    assert len(created.id) == 14
    assert created.created_at.tzinfo is not None
    assert abs(datetime.now(UTC) - created.created_at) < timedelta(minutes=1)
    assert new_entry("x").id != new_entry("x").id


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"text": ""}, "text"),
        ({"text": " \n\t "}, "text"),
        ({"text": None}, "text"),
        ({"text": "x", "importance": 1.5}, "importance"),
        ({"text": "x", "importance": -0.1}, "importance"),
        ({"text": "x", "importance": float("nan")}, "importance"),
        ({"text": "x", "importance": float("inf")}, "importance"),
        ({"text": "x", "importance": "high"}, "importance"),
        ({"text": "x", "importance": True}, "importance"),
        ({"text": "x", "category": "gossip"}, "category"),
    ],
)
def test_new_entry_rejects_bad_input(kwargs: dict[str, object], key: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        new_entry(**kwargs)  # type: ignore[arg-type]
    assert caught.value.key == key


def test_append_rejects_a_duplicate_id_and_an_invalid_entry(journal: Path) -> None:
    append_entry(journal, entry("one"))
    with pytest.raises(InvalidInput) as caught:
        append_entry(journal, entry("two"))
    assert caught.value.key == "id"
    with pytest.raises(InvalidInput):
        append_entry(journal, entry("x", "bad id;with<stuff>"))
    with pytest.raises(InvalidInput):
        append_entry(journal, entry("x", "e-2", created_at=datetime(2026, 1, 1)))
    assert [e.text for e in read_journal(journal)] == ["one"]


# -- byte-preserving edits -------------------------------------------------------------

HAND_WRITTEN = (
    b"# My entries\r\n"
    b"\r\n"
    b"- hand written, CRLF and trailing spaces   \r\n"
    b"- caf\xe9 is not UTF-8\n"
    b"- tea <!-- mr:id=e-aaaaaaaaaaaa;importance=0.9;category=preference;"
    b"created=2026-01-01T00:00:00Z -->"
)


def test_append_keeps_every_existing_byte(journal: Path) -> None:
    journal.parent.mkdir(parents=True)
    journal.write_bytes(HAND_WRITTEN)
    added = entry("new one", "e-bbbbbbbbbbbb")
    append_entry(journal, added)
    data = journal.read_bytes()
    assert data.startswith(HAND_WRITTEN + b"\n")
    assert data == HAND_WRITTEN + b"\n" + format_item(added).encode()
    assert read_journal(journal)[-1] == added
    assert not [p for p in journal.parent.iterdir() if p.name.endswith(".tmp")]


def test_remove_leaves_every_other_line_byte_identical(journal: Path) -> None:
    journal.parent.mkdir(parents=True)
    journal.write_bytes(
        HAND_WRITTEN + b"\n" + format_item(entry("multi\nline", "e-cccccccccccc")).encode()
    )
    removed = remove_entry(journal, "e-aaaaaaaaaaaa")
    assert removed.text == "tea"
    assert removed.importance == 0.9
    assert (
        journal.read_bytes()
        == HAND_WRITTEN.rsplit(b"\n", 1)[0]
        + b"\n"
        + format_item(entry("multi\nline", "e-cccccccccccc")).encode()
    )
    remove_entry(journal, "e-cccccccccccc")
    assert journal.read_bytes() == HAND_WRITTEN.rsplit(b"\n", 1)[0] + b"\n"
    assert "e-aaaaaaaaaaaa" not in {e.id for e in read_journal(journal)}


def test_remove_unknown_id_raises_not_found(journal: Path) -> None:
    with pytest.raises(NotFound) as caught:
        remove_entry(journal, "e-missing")
    assert caught.value.key == "e-missing"
    append_entry(journal, entry("one"))
    before = journal.read_bytes()
    with pytest.raises(NotFound):
        remove_entry(journal, "e-missing")
    assert journal.read_bytes() == before


def test_file_mode_is_kept_across_rewrites(journal: Path) -> None:
    append_entry(journal, entry("one"))
    journal.chmod(0o600)
    append_entry(journal, entry("two", "e-2"))
    assert journal.stat().st_mode & 0o777 == 0o600


def test_concurrent_appends_lose_nothing(journal: Path) -> None:
    entries = [entry(f"entry {i}", f"e-{i:012d}") for i in range(40)]
    threads = [threading.Thread(target=append_entry, args=(journal, e)) for e in entries]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(e.id for e in read_journal(journal)) == sorted(e.id for e in entries)


# -- hand edits and malformed items ----------------------------------------------------


def test_hand_edited_text_keeps_the_entry(journal: Path) -> None:
    append_entry(journal, entry("I like tea"))
    journal.write_text(journal.read_text().replace("I like tea", "I like green tea"))
    [edited] = read_journal(journal)
    assert edited == entry("I like green tea")


def test_hand_reindented_and_trailing_spaces_are_not_significant(journal: Path) -> None:
    journal.parent.mkdir(parents=True)
    journal.write_text(
        "-    spaced out   \n"
        "\tsecond line\t\n"
        "      third <!-- mr:id=e-1;importance=0.5;category=fact;"
        "created=2026-01-01T00:00:00Z -->  \n"
    )
    [item] = read_journal(journal)
    assert (item.id, item.text, item.importance) == ("e-1", "spaced out\nsecond line\nthird", 0.5)


def test_item_without_metadata_becomes_an_entry_with_a_derived_id(journal: Path) -> None:
    journal.parent.mkdir(parents=True)
    journal.write_text("# Entries\n\nintro paragraph\n\n- remember the milk\n  and eggs\n")
    os.utime(journal, (1_700_000_000, 1_700_000_000))
    [item] = read_journal(journal)
    text = "remember the milk\nand eggs"
    assert item.id == "h-" + hashlib.sha256(text.encode()).hexdigest()[:12]
    assert (item.text, item.importance, item.category) == (text, 0.7, "other")
    assert item.created_at == datetime.fromtimestamp(1_700_000_000, UTC)
    assert read_journal(journal)[0].id == item.id  # deterministic
    remove_entry(journal, item.id)
    assert journal.read_text() == "# Entries\n\nintro paragraph\n\n"


def test_unreadable_metadata_values_take_defaults(journal: Path) -> None:
    journal.parent.mkdir(parents=True)
    journal.write_text(
        "- a <!-- mr:id=e-1;importance=high;category=gossip;created=yesterday;extra=1 -->\n"
        "- b <!-- mr:id=e-2;importance=7;category=fact;created=2026-01-01T00:00:00 -->\n"
        "- c <!-- mr:importance=0.2 -->\n"
    )
    mtime = datetime.fromtimestamp(journal.stat().st_mtime, UTC)
    a, b, c = read_journal(journal)
    assert (a.id, a.importance, a.category, a.created_at) == ("e-1", 0.7, "other", mtime)
    assert (b.importance, b.category) == (1.0, "fact")  # clamped; naive time read as UTC
    assert b.created_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert c.id.startswith("h-")
    assert c.importance == 0.2
    assert c.text == "c"


def test_duplicate_ids_stay_addressable(journal: Path) -> None:
    journal.parent.mkdir(parents=True)
    meta = "<!-- mr:id=e-1;importance=0.7;category=other;created=2026-01-01T00:00:00Z -->"
    journal.write_text(f"- first {meta}\n- second {meta}\n- third {meta}\n")
    assert [e.id for e in read_journal(journal)] == ["e-1", "e-1~2", "e-1~3"]
    assert remove_entry(journal, "e-1~2").text == "second"
    assert [e.text for e in read_journal(journal)] == ["first", "third"]


def test_loose_lines_after_the_first_item_are_kept_as_entries(journal: Path) -> None:
    journal.parent.mkdir(parents=True)
    journal.write_text("# Header\n- one\n\n## 2026\n\n* starred\nfree paragraph\n+ plus\n-\n")
    assert [e.text for e in read_journal(journal)] == ["one", "starred", "free paragraph", "plus"]


def test_leftovers_of_an_interrupted_write_are_ignored(journal: Path) -> None:
    append_entry(journal, entry("kept"))
    # A crash between writing the temporary file and os.replace leaves it behind.
    (journal.parent / f".{journal.name}.deadbeef.tmp").write_text("- half written")
    assert [e.text for e in read_journal(journal)] == ["kept"]
    config = Config(workspace=str(journal.parent.parent))
    assert [d.path for d in discover(config).documents] == ["memory/entries.md"]
    append_entry(journal, entry("next", "e-2"))
    assert [e.text for e in read_journal(journal)] == ["kept", "next"]


def test_byte_order_mark_does_not_hide_the_first_item(journal: Path) -> None:
    journal.parent.mkdir(parents=True)
    journal.write_bytes(b"\xef\xbb\xbf- first\n- second\n")
    assert [e.text for e in read_journal(journal)] == ["first", "second"]
    remove_entry(journal, read_journal(journal)[1].id)
    assert journal.read_bytes() == b"\xef\xbb\xbf- first\n"


def test_missing_journal_reads_as_empty(journal: Path) -> None:
    assert read_journal(journal) == []
    assert read_items(journal) == []


# -- indexing --------------------------------------------------------------------------


def test_entry_chunks_point_at_the_items_lines(journal: Path) -> None:
    workspace = journal.parent.parent
    append_entry(journal, entry("first"))
    append_entry(journal, entry("second\nspans two lines", "e-2", category="fact"))
    config = Config(workspace=str(workspace))
    chunks = entry_chunks("memory/entries.md", read_items(journal), model="fts-only")
    assert [c.text for c in chunks] == ["first", "second\nspans two lines"]
    for chunk in chunks:
        assert chunk.entry is not None
        assert chunk.entry.text == chunk.text
        assert chunk.source == "memory"
        assert chunk.path == "memory/entries.md"
        assert chunk.hash == hashlib.sha256(chunk.text.encode()).hexdigest()
        shown = read_memory_file(
            config,
            chunk.path,
            from_line=chunk.start_line,
            lines=chunk.end_line - chunk.start_line + 1,
        )
        assert f"id={chunk.entry.id};" in shown.text
        assert shown.text.startswith("- " + chunk.text.split("\n")[0])
    assert (chunks[1].start_line, chunks[1].end_line) == (
        chunks[0].end_line + 1,
        chunks[0].end_line + 2,
    )


def test_workspace_loads_the_journal_as_entry_chunks(journal: Path) -> None:
    workspace = journal.parent.parent
    append_entry(journal, entry("stored fact", category="fact"))
    config = Config(workspace=str(workspace))
    [doc] = [d for d in discover(config).documents if d.kind == "journal"]
    text, chunks, _ = load_document(doc, config, "fts-only")
    assert text == journal.read_text()
    [chunk] = chunks
    assert chunk.entry == entry("stored fact", category="fact")
