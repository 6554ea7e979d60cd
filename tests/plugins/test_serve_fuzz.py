"""No 500 from the HTTP API (issue 21, item 3): a property-based fuzz over every route.

One real ``serve`` on loopback; hypothesis sends every route (enumerated from the real
app, ``/mcp`` and unknown paths too) every method, with bodies that are JSON of any shape,
the routes' own fields with values of every type, JSON nested far deeper than the parser
allows (far under the body limit), and raw bytes; query strings too. Every answer must
be below 500 and valid JSON (``/metrics``' text excepted), and the server must stay up.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving import Server, make_config, running_server

from memory_router import Router

FIELDS = [
    "query", "maxResults", "max_results", "minScore", "min_score", "mode", "sessionKey",
    "session_key", "text", "importance", "category", "force", "limit", "id", "prompt",
    "messages", "conversationId", "path", "from", "lines",
]  # fmt: skip
PARAMS = ["path", "from", "lines"]
LIMIT = 16_384


def app_routes(config: Path) -> list[str]:
    """Every path the real app serves (from the app itself, so a new route is fuzzed too)."""
    from memory_router_serve._server import build_app
    from memory_router_serve._service import Service

    with Router.from_config(config) as router:
        routes = build_app(Service(router), "127.0.0.1", None).app.routes
    return sorted(r.path for r in routes)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    config = make_config(tmp_path_factory.mktemp("fuzz"), {"serve": {"max_body_bytes": LIMIT}})
    with running_server(config) as running:
        yield running


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def deep(draw: st.DrawFn) -> bytes:
    """JSON nested deeper than any parser's recursion limit, in some field, maybe broken."""
    depth = draw(st.sampled_from([33, 200, 1_000, 3_000, 5_000]))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    value = opener * depth + "1" + closer * draw(st.sampled_from([depth, 0, depth // 2]))
    field = draw(st.sampled_from(FIELDS))
    return f'{{"{field}": {value}}}'.encode()


bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=5).map(
        lambda v: json.dumps(v).encode()
    ),
    deep(),
    st.binary(max_size=200),
    st.sampled_from([b"NaN", b'{"query": NaN}', b'{"limit": 1e400}', b'{"query": "\\ud800"}']),
)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_route_answers_5xx_or_anything_but_json(server: Server, data: st.DataObject) -> None:
    routes = app_routes_cached(server)
    path = data.draw(st.sampled_from([*routes, "/nope", "/entries/"]))
    if "{entry_id}" in path:
        path = path.replace("{entry_id}", quote(data.draw(st.text(min_size=1, max_size=30)), ""))
    method = data.draw(st.sampled_from(["GET", "POST", "DELETE", "PUT"]))
    params = data.draw(st.dictionaries(st.sampled_from(PARAMS), st.text(max_size=30), max_size=3))
    body = data.draw(bodies)
    response = httpx.request(
        method,
        server.url + path,
        params=params,
        content=body,
        headers={"content-type": "application/json", "accept": "application/json"},
        timeout=60,
    )
    where = f"{method} {path} {params} {body[:200]!r}: {response.status_code} {response.text[:300]}"
    assert response.status_code < 500, where
    if path != "/metrics" or response.status_code != 200:
        answer: Any = response.json()  # valid JSON, or this raises
        if response.status_code >= 400 and path != "/mcp":
            assert isinstance(answer.get("error"), str), where


_ROUTES: dict[str, list[str]] = {}


def app_routes_cached(server: Server) -> list[str]:
    if server.url not in _ROUTES:
        _ROUTES[server.url] = app_routes(server.config)
    return _ROUTES[server.url]


def test_the_server_is_still_up_and_whole_after_the_fuzz(server: Server) -> None:
    health = httpx.get(server.url + "/health", timeout=30)
    assert health.status_code == 200, health.text
    assert "Traceback" not in server.stderr()
    assert "unexpected" not in server.stderr()
