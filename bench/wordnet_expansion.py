"""WordNet query expansion for keyword-only search (issue 22, item 2): a simulation.

    .venv/bin/python bench/wordnet_expansion.py curated [--wordnet DIR]
    .venv/bin/python bench/wordnet_expansion.py locomo [--wordnet DIR] [--senses N] [bench args]

Needs the WordNet 3.0 database files (``index.*``, ``data.*``, ``*.exc``): Debian's
``wordnet-base`` puts them in /usr/share/wordnet (``apt-get install wordnet-base``). No
PyPI package checked ships them usably (bench/NOTES.md, "WordNet expansion").

``curated``: each workspace of ``bench/curated`` is indexed keyword-only (the defaults) and
its chunks put in an in-memory FTS5 table with the backend's tokenizer (``porter
unicode61``); each question's keywords (``query_keywords``) are expanded with WordNet —
base forms, synonyms of the first *n* senses, derivationally related forms, one hypernym
step — and a chunk holds a keyword when it holds it, a base form, or (counted ``w``) an
expansion. The answer is scored as live: BM25 order, every score times ``S × minor_share(S,
0)`` for the best-covered candidate's share ``S``; the threshold plays ``min_score``.
Ranking ``bm25``: the expanded OR query's BM25; ``orig``: the original query's candidates
and order, the expansion only counted in the share. With no expansion it reproduces
``bench curated --mode keyword`` (0.362 / 0.067 at 0.2).

``locomo``: ``bench locomo`` keyword-only with the backend's OR query expanded (ranking
``bm25``), the guard that expansion does not cost LoCoMo's ranking.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_router import Router
from memory_router._config.config import Config, apply_overrides
from memory_router._ops.bench import Variant, write_group
from memory_router._ops.bench_curated import curated_config, load_curated
from memory_router._ops.bench_data import Group
from memory_router._search.fusion import minor_share
from memory_router._search.keywords import QUERY_FILLER, STOP_WORDS, query_keywords
from memory_router._search.snippets import _contains, _stem

HERE = Path(__file__).resolve().parent
POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
# WordNet's morphy detachment rules per part of speech: suffix>replacement.
_RULES = {
    "n": "s> ses>s xes>x zes>z ches>ch shes>sh men>man ies>y",
    "v": "s> ies>y es>e es> ed>e ed> ing>e ing>",
    "a": "er> est> er>e est>e",
    "r": "",
}
RULES = {pos: [tuple(r.split(">")) for r in rules.split()] for pos, rules in _RULES.items()}


class WordNet:
    """The WordNet 3.0 database files of ``root``: lemma → synset offsets (most frequent
    sense first), exceptions, and synsets read at their byte offset."""

    def __init__(self, root: Path) -> None:
        self.index: dict[str, dict[str, list[int]]] = {}
        self.exc: dict[str, dict[str, list[str]]] = {}
        self.data: dict[str, bytes] = {}
        for name, pos in POS.items():
            table: dict[str, list[int]] = {}
            for line in (root / f"index.{name}").read_text("utf-8").splitlines():
                if not line.startswith("  "):  # the licence header is indented
                    parts = line.split()
                    table[parts[0]] = [int(o) for o in parts[4 + int(parts[3]) + 2 :]]
            self.index[pos] = table
            exc: dict[str, list[str]] = {}
            if (root / f"{name}.exc").exists():
                for line in (root / f"{name}.exc").read_text("utf-8").splitlines():
                    inflected, *bases = line.split()
                    exc.setdefault(inflected, []).extend(bases)
            self.exc[pos] = exc
            self.data[pos] = (root / f"data.{name}").read_bytes()

    def morphy(self, word: str) -> list[tuple[str, str]]:
        """(pos, base form) of ``word`` in the index: itself, its exceptions, its suffixes."""
        out: list[tuple[str, str]] = []
        for pos in POS.values():
            forms = [word, *self.exc[pos].get(word, [])]
            forms += [word[: -len(s)] + r for s, r in RULES[pos] if word.endswith(s) and word != s]
            out += [(pos, f) for f in dict.fromkeys(forms) if f in self.index[pos]]
        return out

    @functools.lru_cache(maxsize=100_000)  # noqa: B019 (one instance per run)
    def synset(self, pos: str, offset: int) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        """(words, pointers (symbol, pos, offset, source word, target word)) of a synset."""
        raw = self.data[pos]
        head = raw[offset : raw.index(b"\n", offset)].decode("utf-8").split("|")[0].split()
        count = int(head[3], 16)
        words = tuple(w.split("(")[0].lower() for w in head[4 : 4 + 2 * count : 2])
        at = 4 + 2 * count
        pointers = []
        for i in range(int(head[at])):
            symbol, target, tpos, st = head[at + 1 + 4 * i : at + 5 + 4 * i]
            tpos = "a" if tpos == "s" else tpos  # adjective satellites live in data.adj
            pointers.append((symbol, tpos, int(target), int(st[:2], 16), int(st[2:], 16)))
        return words, tuple(pointers)


@dataclass(frozen=True)
class Expand:
    """Which relations expand a keyword: synonyms of the first ``senses`` senses of each
    part of speech (0: base forms only), derivationally related forms and pertainyms
    (``deriv``), one hypernym step (``hyper``); an expansion counts ``weight``."""

    senses: int = 0
    deriv: bool = False
    hyper: bool = False
    weight: float = 1.0

    @property
    def label(self) -> str:
        parts = [
            n
            for n, on in (("syn", self.senses), ("deriv", self.deriv), ("hyper", self.hyper))
            if on
        ]
        senses = "all" if self.senses > 50 else str(self.senses)
        return f"{'+'.join(parts) or 'base forms'} n={senses} w={self.weight}"


def _word(word: str) -> bool:
    return word.isalpha() and len(word) >= 3 and word not in STOP_WORDS | QUERY_FILLER


def expansions(wn: WordNet, keyword: str, ex: Expand) -> tuple[set[str], set[str]]:
    """(base forms, related words) of ``keyword``, neither holding the keyword."""
    found = wn.morphy(keyword)
    related: set[str] = set()
    for pos, base in found if ex.senses else ():
        for offset in wn.index[pos][base][: ex.senses]:
            words, pointers = wn.synset(pos, offset)
            related.update(words)
            me = words.index(base) + 1 if base in words else 0
            for symbol, tpos, target, source, word in pointers:
                if ex.deriv and symbol in ("+", "\\") and source in (0, me):
                    targets = wn.synset(tpos, target)[0]
                    related.update([targets[word - 1]] if word else targets)
                if ex.hyper and symbol in ("@", "@i"):
                    related.update(wn.synset(tpos, target)[0])
    bases = {b for _, b in found} - {keyword}
    return bases, {w for w in related if _word(w)} - bases - {keyword}


# -- curated ------------------------------------------------------------------------------


def chunks_of(folder: Path) -> dict[str, Any]:
    """Each workspace's chunks (path, first line, last line, text), facts and off-topic
    questions, indexed keyword-only with the defaults."""
    dataset = load_curated(folder)
    base = apply_overrides(Config(), {"embedding": {"provider": "none"}})
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for group in dataset.groups:
            workspace = Path(tmp) / "ws" / group.name
            write_group(Group(name=group.name, files=group.files, units={}, queries=()), workspace)
            variant = Variant(backend="sqlite", mode="keyword")
            config = curated_config(base, variant, workspace, Path(tmp) / "s", group.name, None)
            with Router.from_config(config) as router:
                for _ in router.sync():
                    pass
                snapshot = router.snapshot()
                chunks = [c for d in snapshot.documents for c in snapshot.chunks(d)]
            out[group.name] = {
                "chunks": [(c.path, c.start_line, c.end_line, c.text) for c in chunks],
                "asked": [(q, f.path, f.line, f.answer) for f in group.facts for q in f.questions]
                + [(q, None, 0, "") for q in group.off_topic],
            }
    return out


def _fts(chunks: Sequence[tuple[str, int, int, str]]) -> tuple[sqlite3.Connection, set[str]]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61')")
    conn.executemany(
        "INSERT INTO t(rowid, text) VALUES (?, ?)", list(enumerate(c[3] for c in chunks))
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    return conn, {r[0] for r in conn.execute("SELECT term FROM v")}


def _bm25(conn: sqlite3.Connection, terms: Sequence[str]) -> list[tuple[int, float]]:
    """(row, relevance) of the OR of ``terms``, best first (BM25 as the backend maps it)."""
    if not terms:
        return []
    match = " OR ".join('"' + t.replace('"', "") + '"' for t in dict.fromkeys(terms))
    sql = "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid"
    return [(int(r), -b / (1 - b)) for r, b in conn.execute(sql, [match])]


def ask(
    conn: Any, chunks: Any, wn: WordNet, question: str, ex: Expand | None, rank: str
) -> list[tuple[int, float, float]]:
    """(row, relevance, share of the question held) of every candidate, in answer order."""
    keywords = query_keywords(question)
    table = {k: expansions(wn, k, ex) if ex else (set[str](), set[str]()) for k in keywords}
    expanded = [*keywords, *(w for b, r in table.values() for w in sorted(b | r))]
    rows = _bm25(conn, keywords if rank == "orig" else expanded)
    out = []
    for row, relevance in rows:
        text = chunks[row][3].lower()
        held = 0.0
        for k, (bases, related) in table.items():
            if any(_contains(text, _stem(w)) for w in (k, *bases)):
                held += 1
            elif ex and any(_contains(text, _stem(w)) for w in related):
                held += ex.weight
        out.append((row, relevance, held / len(keywords)))
    return out


def curve(
    data: dict[str, Any], wn: WordNet, ex: Expand | None, rank: str, thresholds: Sequence[float]
) -> list[tuple[float, float, float]]:
    """(threshold, found@3, off-topic answered) for each threshold."""
    asked = []  # (is a fact question, support, [(relevance share, shows the fact)])
    for group in data.values():
        chunks = group["chunks"]
        conn, _ = _fts(chunks)
        for question, path, line, answer in group["asked"]:
            candidates = ask(conn, chunks, wn, question, ex, rank)
            best = max((c[1] for c in candidates), default=1.0)
            share = max((c[2] for c in candidates), default=0.0)
            hits = []
            for row, relevance, _ in candidates[:6]:
                p, first, last, text = chunks[row]
                shows = p == path and first <= line <= last and answer.lower() in text.lower()
                hits.append((relevance / best, shows))
            asked.append((path is not None, share * minor_share(share, 0.0), hits))
    out = []
    for t in thresholds:
        kept = [(fact, [s for r, s in hits if r * sup >= t - 1e-9]) for fact, sup, hits in asked]
        facts = [any(shown[:3]) for fact, shown in kept if fact]
        off = [bool(shown) for fact, shown in kept if not fact]
        out.append((t, sum(facts) / len(facts), sum(off) / len(off)))
    return out


def run_curated(wordnet: Path) -> None:
    data = chunks_of(HERE / "curated")
    wn = WordNet(wordnet)
    thresholds = (0.05, 0.1, 0.125, 0.15, 0.2, 0.3, 0.44, 0.5, 0.6)
    variants: list[Expand | None] = [None, Expand(0)]
    for senses, weight in itertools.product((1, 3, 99), (1.0, 0.5)):
        variants += [Expand(senses, weight=weight), Expand(senses, True, weight=weight)]
        variants += [Expand(senses, True, True, weight=weight)]
    print("found@3 / off-topic answered at each threshold (0.2 plays min_score's default)")
    for ex in variants:
        for rank in ("bm25", "orig") if ex else ("bm25",):
            points = curve(data, wn, ex, rank, thresholds)
            label = ex.label if ex else "no expansion"
            print(
                f"{label:28} {rank:4} " + " ".join(f"{t}:{f:.3f}/{o:.3f}" for t, f, o in points),
                flush=True,
            )


# -- LoCoMo -------------------------------------------------------------------------------


def run_locomo(wordnet: Path, senses: int, bench_args: list[str]) -> None:
    """``memory-router bench locomo`` with the SQLite backend's OR query expanded. The
    query the backend sends has no configuration door, so this process replaces the
    keyword function its module calls (``senses`` 0: no expansion, the reference run)."""
    import memory_router_sqlite._search as sqlite_search
    from memory_router._cli import main

    if senses:
        wn = WordNet(wordnet)
        ex = Expand(senses, True)

        def expanded(query: str, *, trigram: bool = False) -> list[str]:
            keywords = query_keywords(query, trigram=trigram)
            more = [w for k in keywords for b, r in [expansions(wn, k, ex)] for w in sorted(b | r)]
            return list(dict.fromkeys([*keywords, *more]))

        sqlite_search.query_keywords = expanded
        sqlite_search.MAX_TERMS = 1000
    sys.argv = ["memory-router", "bench", "locomo", "--mode", "keyword", *bench_args]
    main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("curated", "locomo"))
    parser.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"))
    parser.add_argument("--senses", type=int, default=3)
    args, rest = parser.parse_known_args()
    if not (args.wordnet / "index.noun").exists():
        hint = "apt-get install wordnet-base, or pass --wordnet DIR"
        sys.exit(f"no WordNet database in {args.wordnet}\nhint: {hint}")
    if args.what == "curated":
        run_curated(args.wordnet)
    else:
        run_locomo(args.wordnet, args.senses, rest)


if __name__ == "__main__":
    main()
