"""The MCP server through the official MCP Python client: stdio and streamable HTTP.

Both transports run the same script against a real server subprocess (keyword-only SQLite
over a workspace in a temporary folder): initialize, list the tools, call each one, and
check that a failure is an MCP tool error with a one-line message.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from serving import child_env, make_config, running_server

pytestmark = pytest.mark.slow

TOOLS = {
    "memory_search",
    "memory_get",
    "memory_store",
    "memory_forget",
    "memory_recall",
    "memory_status",
    "memory_context",
    "memory_capture",
}


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    result: Any = await session.call_tool(name, arguments)
    return result


async def exercise(session: ClientSession) -> None:
    """The same conversation over any transport."""
    init: Any = await session.initialize()
    assert init.server_info.name == "memory-router"
    assert "memory_search" in (init.instructions or "")
    listed: Any = await session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) >= TOOLS
    assert tools["memory_search"].annotations.read_only_hint is True
    assert "prior work" in tools["memory_search"].description
    assert set(tools["memory_get"].input_schema["properties"]) == {"path", "from", "lines"}

    found = await call(session, "memory_search", {"query": "Lisbon conference", "maxResults": 2})
    assert not found.is_error
    hit = found.structured_content["results"][0]
    assert {"path", "startLine", "endLine", "score", "snippet", "source"} <= set(hit)
    assert hit["path"] == "memory/2026-11-01.md"
    assert found.structured_content["backend"] == "sqlite"

    got = await call(session, "memory_get", {"path": "MEMORY.md", "from": 3, "lines": 1})
    assert got.structured_content == {
        "path": "MEMORY.md",
        "text": "- Prefers green tea over coffee in the morning.",
    }
    # The hit's own location goes straight back: path#L<start>-L<end>.
    cited = f"{hit['path']}#L{hit['startLine']}-L{hit['endLine']}"
    lines = await call(session, "memory_get", {"path": cited})
    assert lines.structured_content["path"] == hit["path"]
    assert "Lisbon" in lines.structured_content["text"]
    assert (
        len(lines.structured_content["text"].split("\n")) == hit["endLine"] - hit["startLine"] + 1
    )

    stored = await call(session, "memory_store", {"text": "Remember the fern", "category": "fact"})
    entry_id = stored.structured_content["id"]
    assert stored.structured_content["action"] == "created"
    again = await call(session, "memory_search", {"query": "fern"})
    assert again.structured_content["results"][0]["entry"]["id"] == entry_id
    twice = await call(session, "memory_store", {"text": "remember the FERN", "category": "fact"})
    assert twice.structured_content["action"] == "duplicate"
    assert twice.structured_content["existingId"] == entry_id
    recalled = await call(session, "memory_recall", {"query": "fern", "category": "fact"})
    assert recalled.structured_content["count"] == 1
    assert recalled.structured_content["memories"][0]["id"] == entry_id
    none = await call(session, "memory_recall", {"query": "fern", "category": "decision"})
    assert none.structured_content["count"] == 0
    unsure = await call(session, "memory_forget", {"query": "fern"})
    assert unsure.structured_content["action"] == "candidates"
    assert unsure.structured_content["candidates"][0]["id"] == entry_id
    forgot = await call(session, "memory_forget", {"query": "Remember the fern"})
    assert forgot.structured_content["action"] == "deleted"
    assert forgot.structured_content["id"] == entry_id
    other = await call(session, "memory_store", {"text": "The boiler code is 4411"})
    other_id = other.structured_content["id"]
    by_id = await call(session, "memory_forget", {"id": other_id})
    assert by_id.structured_content["entry"]["text"] == "The boiler code is 4411"
    neither = await call(session, "memory_forget", {})
    assert neither.is_error

    # An empty answer with weaker hits says so, and how to see them (issue 22).
    weak = await call(
        session, "memory_search", {"query": "green tea coffee piano", "minScore": 0.9}
    )
    assert weak.structured_content["results"] == []
    below = weak.structured_content["belowMinScore"]
    assert below["minScore"] == 0.9
    assert below["showWith"] <= below["bestScore"] < 0.9
    assert f"minScore {below['showWith']:g}" in below["action"]
    shown = await call(
        session, "memory_search", {"query": "green tea coffee piano", "minScore": below["showWith"]}
    )
    assert shown.structured_content["results"][0]["path"] == "MEMORY.md"
    assert "belowMinScore" not in shown.structured_content
    nothing = await call(session, "memory_search", {"query": "quantum chromodynamics"})
    assert nothing.structured_content["results"] == []
    assert "belowMinScore" not in nothing.structured_content  # no candidate at all
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert "belowMinScore.showWith" in (tools["memory_search"].description or "")
    assert "degraded.action" in (tools["memory_search"].description or "")

    status = await call(session, "memory_status", {})
    assert status.structured_content["chain"] == ["sqlite"]
    context = await call(session, "memory_context", {"prompt": "green tea in the morning"})
    assert context.structured_content["block"].startswith("<relevant-memories>")
    captured = await call(
        session,
        "memory_capture",
        {"messages": ["I prefer aisle seats", "hi"], "conversationId": "c1"},
    )
    assert [e["text"] for e in captured.structured_content["stored"]] == ["I prefer aisle seats"]

    # (The client refuses to send lone surrogates; the HTTP API test sends them raw.)
    hostile = await call(session, "memory_search", {"query": 'tea \x00 NEAR( MATCH "(* 🫖'})
    assert not hostile.is_error

    refused = await call(session, "memory_get", {"path": "../secrets.md"})
    assert refused.is_error
    message = refused.content[0].text
    assert "\n" not in message
    assert "Traceback" not in message
    assert "path" in message
    missing = await call(session, "memory_forget", {"id": "no-such-entry"})
    assert missing.is_error
    assert "no-such-entry" in missing.content[0].text
    invalid = await call(session, "memory_search", {"maxResults": 0})
    assert invalid.is_error
    text = invalid.content[0].text
    assert "\n" not in text, text  # one line: no pydantic dump
    assert "pydantic" not in text, text  # nor its documentation URLs
    assert "invalid arguments" in text
    assert "query: Field required" in text
    assert "maxResults: Input should be greater than or equal to 1" in text
    wrong = await call(session, "memory_get", {"path": "MEMORY.md", "lines": "many"})
    assert wrong.is_error
    assert "\n" not in wrong.content[0].text
    assert "lines: " in wrong.content[0].text


def test_mcp_over_stdio(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_router", "--config", str(config), "mcp", "--no-watch"],
        env=child_env(),
    )

    async def main() -> None:
        with (tmp_path / "mcp-stderr.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, read_timeout_seconds=120) as session,
            ):
                await exercise(session)

    anyio.run(main)


def test_mcp_over_streamable_http(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    with running_server(config) as server:

        async def main() -> None:
            async with (
                streamable_http_client(server.url + "/mcp") as (read, write),
                ClientSession(read, write, read_timeout_seconds=120) as session,
            ):
                await exercise(session)

        anyio.run(main)
