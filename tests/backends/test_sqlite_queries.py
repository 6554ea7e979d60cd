"""No query breaks the SQLite backend: any string gives results or an empty list."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memory_router import Router, testing

FILES = {
    "MEMORY.md": '# Notes\n\nNEAR the river AND the mill, OR NOT? "quoted" text (parens) *star*.\n',
    "memory/2026-05-01.md": "# 数据库\n\n数据库迁移 API를 사용 データベース設計 snake_case_word.\n",
}
FTS_SYNTAX = st.sampled_from(
    ['"', "*", "-", "^", "NEAR(", "NEAR/3", "AND", "OR", "NOT", "(", ")", ":", "+", "{", "}",
     "col:", "\x00", "\x01", "\u202e", "\ufeff", "\\", "%", "_", "'", "🙂", "데이터", "数据"]
)  # fmt: skip
QUERIES = st.one_of(
    st.text(),
    st.lists(st.one_of(FTS_SYNTAX, st.text(max_size=5)), max_size=12).map(" ".join),
    st.lists(FTS_SYNTAX, max_size=20).map("".join),
)


@pytest.fixture(scope="module", params=["none-or", "none-reference", "hash", "hash-trigram"])
def router(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Router]:
    base = tmp_path_factory.mktemp(request.param)
    workspace = testing.write_workspace(base / "ws", FILES)
    embedding = "hash" if request.param.startswith("hash") else "none"
    mode = "reference" if request.param.endswith("reference") else "or"
    settings = {"fts_tokenizer": "trigram"} if request.param.endswith("trigram") else {}
    config = testing.router_config(
        base, workspace, backend="sqlite", embedding=embedding, settings=settings,
        query={"keyword_mode": mode, "min_score": 0.0},
    )  # fmt: skip
    with Router.from_config(config, plugins=[testing]) as built:
        built.sync()
        yield built


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=QUERIES)
@example(query="")
@example(query="\x00" * 10)
@example(query='"NEAR(" AND ((unbalanced OR -x ^y *')
@example(query="river " * 200_000)  # over 1 MB
def test_any_query_gives_results_or_nothing(router: Router, query: str) -> None:
    response = router.search(query)
    assert isinstance(response.results, tuple)
    assert all(0.0 <= hit.score <= 1.0 for hit in response.results)


def test_syntax_words_are_searched_as_plain_words(router: Router) -> None:
    assert router.search('NEAR "river" AND mill').results[0].path == "MEMORY.md"
