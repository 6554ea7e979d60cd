"""``memory-router bench``: a small BEIR-layout fixture with metric values computed by hand."""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_router import Hit, InvalidInput
from memory_router._ops.bench import score_query
from memory_router._ops.bench_curated import Fact, Outcome, load_curated, shows
from memory_router._ops.bench_curated import metrics as curated_metrics
from memory_router._ops.bench_data import Group, Query, doc_path, load_beir, load_locomo
from memory_router.cli import build_cli

DOCS = {
    "d1": ("Apples", "Apples are red fruit."),
    "d2": ("Bananas", "Bananas are long yellow fruit from warm countries."),
    "d3": ("Cherries", "Cherries are small red fruit."),
}
QUERIES = {"q1": "bananas", "q2": "red fruit", "q3": "small fruit", "q4": "unjudged query"}
QRELS = [("q1", "d2", 1), ("q2", "d1", 2), ("q2", "d3", 1), ("q3", "d1", 1), ("q3", "d2", 0)]


def write_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    corpus = [{"_id": k, "title": t, "text": x} for k, (t, x) in DOCS.items()]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus) + "\n")
    queries = [{"_id": k, "text": v} for k, v in QUERIES.items()]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    rows = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{s}" for q, d, s in QRELS)]
    (folder / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
    return folder


def test_beir_fixture_through_the_command_gives_hand_computed_metrics(tmp_path: Path) -> None:
    data = write_beir(tmp_path / "fruit")
    config = tmp_path / "config.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n[embedding]\nprovider = "none"\n')
    result = CliRunner().invoke(
        build_cli(),
        [
            "--config",
            str(config),
            "bench",
            "beir",
            "--data",
            str(data),
            "--mode",
            "keyword",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["dataset"]["queries"] == 3  # q4 has no judgement; d2 is judged 0 for q3
    assert len(report["dataset"]["sha256"]) == 64
    [variant] = report["variants"]
    m = variant["metrics"]
    # q1 "bananas": d2 first.                 R@1 1, MRR 1, nDCG 1
    # q2 "red fruit": d1 (grade 2), d3, d2.   R@1 1/2, MRR 1, nDCG 1 (ideal order)
    # q3 "small fruit": d3, d1, d2; d1 wanted. R@1 0, MRR 1/2, nDCG 1/log2(3)
    assert m["recall@1"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert m["recall@5"] == pytest.approx(1.0)
    assert m["mrr"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert m["ndcg@10"] == pytest.approx((1 + 1 + 1 / 1.5849625007211563) / 3)
    assert m["budget@500"] == pytest.approx(1.0)  # every snippet is short and fully read
    assert variant["p95_ms"] >= variant["p50_ms"] > 0


def test_the_table_names_the_dataset_hash_and_every_metric(tmp_path: Path) -> None:
    data = write_beir(tmp_path / "fruit")
    config = tmp_path / "config.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n[embedding]\nprovider = "none"\n')
    args = ["--config", str(config), "bench", "beir", "--data", str(data), "--mode", "keyword"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    assert load_beir(data).sha256 in result.output
    for column in ("R@1", "R@20", "MRR", "nDCG@10", "B500", "B1000", "B2000", "p95 ms"):
        assert column in result.output


def test_the_dataset_is_named_after_its_folder_even_given_as_dot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_beir(tmp_path / "fruit")
    config = tmp_path / "config.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n[embedding]\nprovider = "none"\n')
    monkeypatch.chdir(data)
    args = ["--config", str(config), "bench", "beir", "--data", ".", "--mode", "keyword"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    assert f"dataset beir:fruit ({data}) sha256" in result.output
    as_json = CliRunner().invoke(build_cli(), [*args, "--json"])
    assert json.loads(as_json.output)["dataset"]["name"] == "beir:fruit"


def test_a_malformed_dataset_is_one_clear_error(tmp_path: Path) -> None:
    data = write_beir(tmp_path / "fruit")
    (data / "qrels" / "test.tsv").write_text("q1\td2\tvery\n")
    config = tmp_path / "config.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n[embedding]\nprovider = "none"\n')
    args = ["--config", str(config), "bench", "beir", "--data", str(data), "--mode", "keyword"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 1
    assert "expected query-id, corpus-id, score" in result.output


def test_hybrid_without_a_provider_says_what_to_do(tmp_path: Path) -> None:
    data = write_beir(tmp_path / "fruit")
    config = tmp_path / "config.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n[embedding]\nprovider = "none"\n')
    args = ["--config", str(config), "bench", "beir", "--data", str(data), "--mode", "hybrid"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 1
    assert "Hint: pass --provider" in result.output


def test_budget_recall_counts_only_what_the_snippets_show() -> None:
    text = "# T\n" + "\n".join(f"line {i} " + "x" * 150 for i in range(1, 6)) + "\n"
    path = doc_path("doc")
    units = {path: {n: f"u{n}" for n in range(2, 7)}}
    group = Group(name="g", files={path: text}, units=units, queries=())
    query = Query(id="q", text="x", relevant={"u2": 1, "u6": 1})
    # One hit over lines 1-6 whose snippet shows only the first ~320 characters.
    hit = Hit(
        path=path,
        start_line=1,
        end_line=6,
        score=1,
        snippet=text[:320],
        source="memory",
        backend="b",
    )
    scores = score_query(query, [hit], group, {path: text.split("\n")})
    assert scores["recall@1"] == 1.0  # both units are inside the hit's lines
    assert scores["budget@2000"] == 0.5  # but only u2's line is visible in the snippet
    assert scores["budget@500"] == 0.5


# -- bench curated ----------------------------------------------------------------------

CURATED = {
    "MEMORY.md": "# Memory\n\n## Drinks\n\n- Coffee: flat white with oat milk.\n- Tea: jasmine.\n",
    "memory/2026-11-20.md": "# 2026-11-20\n\n- Ordered a new kettle.\n",
}
JUDGED = """
off_topic = ["what is my shoe size", "when is the kettle order arriving and which shop"]

[[fact]]
file = "MEMORY.md"
line = "Coffee: flat white"
answer = "flat white"
questions = ["flat white coffee", "how do I take my coffee"]

[[fact]]
file = "MEMORY.md"
line = "Tea: jasmine"
answer = "jasmine"
questions = ["jasmine tea"]
"""


def write_curated(folder: Path) -> Path:
    for rel, text in CURATED.items():
        (folder / "home" / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / "home" / rel).write_text(text, encoding="utf-8")
    (folder / "home.toml").write_text(JUDGED, encoding="utf-8")
    return folder


def test_curated_set_is_located_by_line_and_checked(tmp_path: Path) -> None:
    data = load_curated(write_curated(tmp_path / "set"))
    [group] = data.groups
    assert [(f.path, f.line) for f in group.facts] == [("MEMORY.md", 5), ("MEMORY.md", 6)]
    assert (data.fact_questions, data.off_topic) == (3, 2)
    (tmp_path / "set" / "home.toml").write_text(JUDGED.replace("Tea: jasmine", "nowhere"))
    with pytest.raises(InvalidInput, match=r"on 0 lines of MEMORY\.md"):
        load_curated(tmp_path / "set")


def test_curated_figures_by_hand(tmp_path: Path) -> None:
    hit = Hit(
        path="MEMORY.md",
        start_line=5,
        end_line=6,
        score=1,
        snippet="",
        source="memory",
        backend="sqlite",
    )
    fact = Fact(path="MEMORY.md", line=5, answer="flat white", questions=("q",))
    shown = dataclasses.replace(hit, snippet="- Coffee: Flat White with oat milk.")
    assert shows(shown, fact)
    assert not shows(hit, fact)  # the answer is not in the snippet
    assert not shows(dataclasses.replace(shown, start_line=6), fact)  # nor the line in range
    asked = [
        Outcome(group="g", question="a", fact=fact, rank=1, hits=2, top=None),
        Outcome(group="g", question="b", fact=fact, rank=3, hits=3, top=None),
        Outcome(group="g", question="c", fact=fact, rank=5, hits=6, top=None),
        # Empty, and found at rank 2 once the hint (below_min_score.show_with) is followed.
        Outcome(group="g", question="d", fact=fact, rank=0, hits=0, top=None, hinted_rank=2),
        Outcome(group="g", question="e", fact=None, rank=0, hits=0, top=None),
        Outcome(group="g", question="f", fact=None, rank=0, hits=2, top=None),
    ]
    m = curated_metrics(asked)
    assert (m["found@1"], m["found@3"], m["found"]) == (0.25, 0.5, 0.75)
    assert m["off_topic_answered"] == 0.5
    assert (m["found@3_hinted"], m["off_topic_hinted"]) == (0.75, 0.5)


def test_bench_curated_through_the_command(tmp_path: Path) -> None:
    data = write_curated(tmp_path / "set")
    config = tmp_path / "config.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n[embedding]\nprovider = "none"\n')
    args = ["--config", str(config), "bench", "curated", "--data", str(data), "--mode", "keyword"]
    result = CliRunner().invoke(build_cli(), [*args, "--json"])
    assert result.exit_code == 0, result.output
    [variant] = json.loads(result.output)["variants"]
    m = variant["metrics"]
    # "how do I take my coffee" holds one keyword of two: under min_score, keyword-only.
    assert (m["found@1"], m["found"]) == pytest.approx((2 / 3, 2 / 3))
    # Neither off-topic question gets a hit: "kettle" is one keyword of four.
    assert m["off_topic_answered"] == 0.0
    assert [miss["question"] for miss in variant["misses"]] == ["how do I take my coffee"]
    # Its empty answer says where the coffee bullet is: asked again with show_with, found.
    assert m["found@3_hinted"] == pytest.approx(1.0)
    table = CliRunner().invoke(build_cli(), [*args, "-v"])
    assert "found@3" in table.output
    assert "'how do I take my coffee'" in table.output


def test_redate_moves_each_conversation_to_end_today(tmp_path: Path) -> None:
    sample = {
        "sample_id": "c1",
        "conversation": {
            "session_1": [{"dia_id": "D1:1", "speaker": "A", "text": "hi"}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_2": [{"dia_id": "D2:1", "speaker": "B", "text": "bye"}],
            "session_2_date_time": "2:00 pm on 20 May, 2023",
        },
        "qa": [{"question": "who said hi", "evidence": ["D1:1"], "category": 4}],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    plain = load_locomo(path).groups[0]
    moved = load_locomo(path, redate=date(2026, 11, 27)).groups[0]
    assert sorted(plain.files) == ["memory/2023-05-08.md", "memory/2023-05-20.md"]
    assert sorted(moved.files) == ["memory/2026-11-15.md", "memory/2026-11-27.md"]
    assert sorted(moved.files.values()) == sorted(plain.files.values())  # same text
