"""Benchmark datasets as workspaces of Markdown files with judged queries.

Two loaders, one shape (:class:`BenchSet`): LoCoMo (conversations; a question's evidence
is dialogue turns, one Markdown line each) and any dataset in BEIR layout (``corpus.jsonl``,
``queries.jsonl``, ``qrels/test.tsv``; a judged unit is a document, one Markdown file
each). Relevance is attached to *lines* of the written files, so one scorer serves both.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from .._exceptions import InvalidInput

LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_DIA = re.compile(r"D(\d+):(\d+)")
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """A judged query: its text, relevant units with grades (> 0), and a category."""

    id: str
    text: str
    relevant: Mapping[str, int]
    category: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """Files searched together and the queries asked of them.

    ``units`` maps ``path`` → ``{line number: unit id}``: which judged unit each line holds.
    """

    name: str
    files: Mapping[str, str]
    units: Mapping[str, Mapping[int, str]]
    queries: tuple[Query, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchSet:
    """A dataset ready to run: its groups, where it came from, and its sha256."""

    name: str
    source: str
    sha256: str
    groups: tuple[Group, ...] = field(default_factory=tuple)

    @property
    def query_count(self) -> int:
        return sum(len(g.queries) for g in self.groups)


def file_sha256(*paths: Path) -> str:
    """sha256 over the files' bytes, in the order given."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InvalidInput(f"cannot read {path}: {error.strerror or error}", key="data") from error
    except ValueError as error:
        raise InvalidInput(f"{path} is not JSON: {error}", key="data") from error


# -- LoCoMo -----------------------------------------------------------------------------


def _session_day(raw: str) -> date:
    """``"1:56 pm on 8 May, 2023"`` → 8 May 2023."""
    text = raw.split(" on ", 1)[-1].strip()
    return datetime.strptime(text, "%d %B, %Y").date()


def _sessions(conversation: Mapping[str, Any]) -> Iterator[tuple[int, str, list[Any]]]:
    numbers = sorted(int(m[1]) for k in conversation if (m := re.fullmatch(r"session_(\d+)", k)))
    for n in numbers:
        turns = conversation[f"session_{n}"]
        if turns:
            yield n, conversation[f"session_{n}_date_time"], turns


def _shift(conversation: Mapping[str, Any], redate: date | None) -> timedelta:
    """How far to move a conversation's dates so that its last session is on ``redate``."""
    if redate is None:
        return timedelta(0)
    last = max(_session_day(when) for _, when, _ in _sessions(conversation))
    return redate - last


def _locomo_group(sample: Mapping[str, Any], redate: date | None = None) -> Group:
    """One conversation: a dated file per session, one ``[D1:3] Speaker: text`` line a turn.

    With ``redate`` every session file is named by its date moved so that the last session
    is on that day; the text keeps the original dates (so only temporal decay sees it).
    """
    files: dict[str, str] = {}
    units: dict[str, dict[int, str]] = {}
    shift = _shift(sample["conversation"], redate)
    for number, when, turns in _sessions(sample["conversation"]):
        name = f"memory/{(_session_day(when) + shift).isoformat()}.md"
        if name in files:
            name = name.replace(".md", f"-s{number}.md")
        lines = [f"# Session {number} — {when}", ""]
        mapping: dict[int, str] = {}
        for turn in turns:
            text = turn["text"].replace("\n", " ")
            if turn.get("blip_caption"):
                text += f" [shares an image: {turn['blip_caption']}]"
            lines.append(f"[{turn['dia_id']}] {turn['speaker']}: {text}")
            mapping[len(lines)] = turn["dia_id"]
        files[name] = "\n".join(lines) + "\n"
        units[name] = mapping
    queries = []
    for index, qa in enumerate(sample["qa"]):
        wanted = {f"D{m[1]}:{m[2]}" for e in qa.get("evidence", []) for m in _DIA.finditer(str(e))}
        if not wanted:
            continue
        category = LOCOMO_CATEGORIES.get(int(qa.get("category", 0)), str(qa.get("category")))
        queries.append(
            Query(
                id=f"{sample['sample_id']}-{index}",
                text=str(qa["question"]),
                relevant=dict.fromkeys(sorted(wanted), 1),
                category=category,
            )
        )
    return Group(name=str(sample["sample_id"]), files=files, units=units, queries=tuple(queries))


def load_locomo(path: Path, *, redate: date | None = None) -> BenchSet:
    """LoCoMo's ``locomo10.json``: one group per conversation, read in place.

    ``redate`` (``bench locomo --redate``: today) moves each conversation's session files
    so that its last session is on that day, as a live memory's would be; LoCoMo's own
    sessions are two to three years old, which makes every decay factor about equal.
    """
    data = _read_json(path)
    if not isinstance(data, list) or not all(isinstance(s, dict) and "qa" in s for s in data):
        raise InvalidInput(f"{path} is not LoCoMo data (a list of samples with 'qa')", key="data")
    groups = tuple(_locomo_group(sample, redate) for sample in data)
    return BenchSet(name="locomo", source=str(path), sha256=file_sha256(path), groups=groups)


# -- BEIR -------------------------------------------------------------------------------


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as error:
        raise InvalidInput(f"cannot read {path}: {error.strerror or error}", key="data") from error
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as error:
                raise InvalidInput(f"{path}:{number} is not JSON: {error}", key="data") from error
            if not isinstance(record, dict) or "_id" not in record:
                raise InvalidInput(f"{path}:{number} has no '_id'", key="data")
            yield record


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    judged: dict[str, dict[str, int]] = {}
    try:
        rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines(), delimiter="\t"))
    except OSError as error:
        raise InvalidInput(f"cannot read {path}: {error.strerror or error}", key="data") from error
    for number, row in enumerate(rows, start=1):
        if not row or (number == 1 and row[0].lower().replace("_", "-") == "query-id"):
            continue  # blank line or the header
        if len(row) < 3 or not row[2].lstrip("-").isdigit():
            raise InvalidInput(f"{path}:{number}: expected query-id, corpus-id, score", key="data")
        if int(row[2]) > 0:
            judged.setdefault(row[0], {})[row[1]] = int(row[2])
    return judged


def doc_path(doc_id: str) -> str:
    """The workspace file of a BEIR document: ``memory/corpus/<id>.md`` (id made file-safe)."""
    safe = _SAFE.sub("_", doc_id)
    if safe != doc_id:
        safe += "-" + hashlib.sha256(doc_id.encode()).hexdigest()[:8]
    return f"memory/corpus/{safe}.md"


def load_beir(folder: Path, *, split: str = "test") -> BenchSet:
    """A BEIR-layout folder: one Markdown file per document, one group for all queries.

    The dataset is named after the folder, resolved first (``--data .`` is the current
    folder's name), and its source is the absolute path.
    """
    folder = folder.resolve()
    corpus_file, queries_file = folder / "corpus.jsonl", folder / "queries.jsonl"
    qrels_file = folder / "qrels" / f"{split}.tsv"
    files: dict[str, str] = {}
    units: dict[str, dict[int, str]] = {}
    for doc in _jsonl(corpus_file):
        path = doc_path(str(doc["_id"]))
        title = str(doc.get("title") or "").replace("\n", " ").strip()
        body = str(doc.get("text") or "").strip()
        text = f"# {title}\n\n{body}\n" if title else f"{body}\n"
        files[path] = text
        units[path] = dict.fromkeys(range(1, text.count("\n") + 2), str(doc["_id"]))
    judged = _qrels(qrels_file)
    known = {unit for mapping in units.values() for unit in mapping.values()}
    queries = tuple(
        Query(id=str(q["_id"]), text=str(q.get("text", "")), relevant=rel)
        for q in _jsonl(queries_file)
        if (rel := {d: g for d, g in judged.get(str(q["_id"]), {}).items() if d in known})
    )
    if not queries:
        raise InvalidInput(f"{folder}: no query has a judged document in the corpus", key="data")
    digest = file_sha256(corpus_file, queries_file, qrels_file)
    name = folder.name or "beir"  # only the root folder has no name
    group = Group(name=name, files=files, units=units, queries=queries)
    return BenchSet(name=f"beir:{name}", source=str(folder), sha256=digest, groups=(group,))
