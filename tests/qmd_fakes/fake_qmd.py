#!/usr/bin/env python3
"""A stand-in for the QMD CLI that injects faults (tests and benches copy it and chmod +x).

Every call is one or more *points*: ``version`` (``--version``), ``update``, ``embed``,
``collection`` (``collection …``), ``query`` (a CLI ``query``), ``mcp-start`` (the MCP
child's ``initialize``) and ``mcp-request`` (each MCP ``tools/call``). At each point it
acts out a *mode*: ``ok`` (behave like QMD), ``crash`` (exit 139 at once),
``die-mid-answer`` (half a JSON answer, then exit 139), ``hang`` (sleep, ignoring SIGTERM;
the pid goes to ``<point>.pid``), ``garbage`` (text that is not JSON) or ``slow:<s>``.

The mode comes from two files next to the program, read at every point (a test may flip
them while it runs):

- ``behaviour``: lines ``<point>=<mode>`` (``*`` = every point); a bare ``<mode>`` means
  the query points (``query`` and ``mcp-request``). Fixed modes win over chaos.
- ``chaos.json``: ``{"seed": 7, "rate": 0.3, "faults": ["crash", "hang", …],
  "points": [...]}``: each call at a listed point (default: all) is faulty with
  probability ``rate``, the fault drawn from ``faults``; seeded by ``seed`` and the call's
  sequence number (``seq``, shared by every process), so a run is reproducible.

Every answer is one hit in ``memory-root/MEMORY.md``. Each query point appends
``<pid> <mode>`` to ``calls``; ``update`` records its environment, cwd and argv in
``update.json``; every point appends ``<seq> <point> <mode>`` to ``log``.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SNIPPET = "@@ -1,2 @@ (0 before, 1 after)\n# Memory\nanswered by the fake qmd"
QUERY_POINTS = ("query", "mcp-request")


def fixed_mode(point: str) -> str | None:
    try:
        lines = (HERE / "behaviour").read_text(encoding="utf-8").split()
    except OSError:
        return None
    found = None
    for line in lines:
        key, _, value = line.rpartition("=")
        if (
            key == point
            or (key == "*" and found is None)
            or (not key and point in QUERY_POINTS and found is None)
        ):
            found = value
    return found


def next_seq() -> int:
    with (HERE / "seq").open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        seq = int(handle.read().strip() or 0) + 1
        handle.seek(0)
        handle.truncate()
        handle.write(str(seq))
        return seq


def chaos_mode(point: str, seq: int) -> str:
    try:
        chaos = json.loads((HERE / "chaos.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "ok"
    if point not in chaos.get("points", [point]):
        return "ok"
    rng = random.Random(f"{chaos.get('seed', 0)}:{seq}")
    if rng.random() >= float(chaos.get("rate", 0.0)):
        return "ok"
    return str(rng.choice(chaos.get("faults") or ["crash"]))


def mode_for(point: str) -> str:
    seq = next_seq()
    mode = fixed_mode(point) or chaos_mode(point, seq)
    with (HERE / "log").open("a", encoding="utf-8") as log:
        log.write(f"{seq} {point} {mode}\n")
    if point in QUERY_POINTS:
        with (HERE / "calls").open("a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {mode}\n")
    return mode


def misbehave(point: str, partial: str = "") -> str:
    """Act out the mode at ``point``; returns it when an answer (or garbage) should follow."""
    mode = mode_for(point)
    if mode == "crash":
        os._exit(139)
    if mode == "die-mid-answer":
        sys.stdout.write(partial[: len(partial) // 2])
        sys.stdout.flush()
        os._exit(139)
    if mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        (HERE / f"{point}.pid").write_text(str(os.getpid()))
        if point == "update":
            print("Updating 2 collection(s)...", flush=True)
        time.sleep(3600)
    if mode.startswith("slow:"):
        time.sleep(float(mode.split(":", 1)[1]))
    return mode


def say(mode: str, text: str) -> None:
    print("Segmentation fault? <<not json>>" if mode == "garbage" else text, flush=True)


def hit(file: str) -> dict[str, object]:
    return {
        "docid": "#abc123",
        "score": 1,
        "file": file,
        "line": 2,
        "title": "Memory",
        "snippet": SNIPPET,
    }


def mcp() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        if request["method"] == "initialize":
            point = "mcp-start"
            result: dict[str, object] = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "qmd", "version": "fake"},
            }
        else:
            point = "mcp-request"
            result = {
                "content": [{"type": "text", "text": "1 result"}],
                "structuredContent": {"results": [hit("memory-root/MEMORY.md")]},
            }
        answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
        say(misbehave(point, answer), answer)


def update() -> None:
    mode = misbehave("update")
    seen = {"env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv}
    (HERE / "update.json").write_text(json.dumps(seen), encoding="utf-8")
    say(mode, "Indexed: 1 new, 0 updated, 0 unchanged, 0 removed")


def main(argv: list[str]) -> int:
    if "--index" in argv:
        at = argv.index("--index")
        del argv[at : at + 2]
    command = argv[0] if argv else ""
    if command in ("--version", "-v"):
        say(misbehave("version"), "qmd 2.8.3 (fake)")
    elif command == "update":
        update()
    elif command == "embed":
        say(misbehave("embed"), "✓ All content hashes already have embeddings.")
    elif command == "collection":
        say(misbehave("collection"), "ok")
    elif command == "query":
        answer = json.dumps([hit("qmd://memory-root/MEMORY.md?index=memrouter")], indent=2)
        say(misbehave("query", answer), answer)
    elif command == "mcp":
        mcp()
    else:
        print(f"fake qmd: unknown command {command!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
