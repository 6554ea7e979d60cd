#!/usr/bin/env python3
"""A stand-in for the QMD CLI that misbehaves on request (tests copy it and chmod +x).

It reads ``behaviour`` next to itself on every query, so a test can flip it while the
program (or its MCP server) runs. Values: ``ok``, ``crash`` (exit 139 at once),
``die-mid-answer`` (half a JSON answer, then exit 139), ``hang`` (sleep, ignoring
SIGTERM), ``garbage`` (text that is not JSON), ``slow:<seconds>`` (then answer).
It understands ``--index``, ``--version``, ``update``, ``embed``, ``query`` (CLI JSON)
and ``mcp`` (JSON-RPC on stdio: ``initialize`` and ``tools/call query``). Every answer
is one hit in ``memory-root/MEMORY.md``. Each query appends a line to ``calls``;
``update`` records its environment, cwd and argv in ``update.json``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SNIPPET = "@@ -1,2 @@ (0 before, 1 after)\n# Memory\nanswered by the fake qmd"


def behaviour() -> str:
    try:
        return (HERE / "behaviour").read_text(encoding="utf-8").strip() or "ok"
    except OSError:
        return "ok"


def misbehave(partial: str) -> None:
    """Act out the current behaviour; returns only when an answer should follow."""
    with (HERE / "calls").open("a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {behaviour()}\n")
    mode = behaviour()
    if mode == "crash":
        os._exit(139)
    if mode == "die-mid-answer":
        sys.stdout.write(partial[: len(partial) // 2])
        sys.stdout.flush()
        os._exit(139)
    if mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
    if mode == "garbage":
        sys.stdout.write("Segmentation fault? <<not json>>\n")
        sys.stdout.flush()
    if mode.startswith("slow:"):
        time.sleep(float(mode.split(":", 1)[1]))


def hit(file: str) -> dict[str, object]:
    return {
        "docid": "#abc123",
        "score": 1,
        "file": file,
        "line": 2,
        "title": "Memory",
        "snippet": SNIPPET,
    }


def cli_query() -> None:
    answer = json.dumps([hit("qmd://memory-root/MEMORY.md?index=memrouter")], indent=2)
    misbehave(answer)
    if behaviour() != "garbage":
        print(answer)


def mcp() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        if request["method"] == "initialize":
            result: dict[str, object] = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "qmd", "version": "fake"},
            }
        else:
            result = {
                "content": [{"type": "text", "text": "1 result"}],
                "structuredContent": {"results": [hit("memory-root/MEMORY.md")]},
            }
        answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
        if request["method"] == "tools/call":
            misbehave(answer)
            if behaviour() == "garbage":
                continue
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    if "--index" in argv:
        at = argv.index("--index")
        del argv[at : at + 2]
    command = argv[0] if argv else ""
    if command in ("--version", "-v"):
        print("qmd 2.8.3 (fake)")
    elif command == "update":
        seen = {"env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv}
        (HERE / "update.json").write_text(json.dumps(seen), encoding="utf-8")
        print("Indexed: 1 new, 0 updated, 0 unchanged, 0 removed")
    elif command == "embed":
        print("✓ All content hashes already have embeddings.")
    elif command == "query":
        cli_query()
    elif command == "mcp":
        mcp()
    else:
        print(f"fake qmd: unknown command {command!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
