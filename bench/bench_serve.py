"""Load-check ``memory-router serve``: concurrent clients on the HTTP API, MCP, and the CLI.

    .venv/bin/python bench/bench_serve.py [--clients 8] [--requests 500] [--quick]

Starts ``serve`` (a real subprocess on a free loopback port) over a copy of
``examples/workspace`` with the default configuration (SQLite, MiniLM hybrid when the
model is installed; ``--keyword`` for keyword-only), then:

0. the baseline: ``Router.search`` in the bench's own process, one query at a time, in
   turns with one HTTP client's requests (so both see the same load);
1. that client, then ``--clients`` threads, each with its own keep-alive connection, send
   ``POST /search`` (queries cycle through a fixed list); any answer but a 200 is an
   error; latency p50/p95/p99, throughput, how many answers had hits, and the server's
   and the clients' CPU per request (they share the machine's cores) are reported;
2. one official MCP client calls ``memory_search`` over streamable HTTP 100 times (p50/p99);
3. ``memory-router search`` as a fresh process, through the server and with ``--local``
   (median of 5 each): what an agent that shells out pays.

``--quick`` is 8 × 50 requests, 20 MCP calls and 3 CLI runs. ``--check`` compares the
headline figures (in-process p50, one client's HTTP p50, 8 clients' throughput) with the
ones recorded in docs/performance.md, normalised by a reference operation timed in the
same run (``bench/_guard.py``); ``--record`` writes them there.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import _guard

ROOT = Path(__file__).resolve().parent.parent
QUERIES = [
    "which foods must my pet avoid",
    "upcoming vacation abroad",
    "how do colleagues share progress each morning",
    "why did the tests fail intermittently",
    "what does Sam drink",
    "heron project deadline",
    "who leads the billing team",
    "database migration decision",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def start_server(root: Path, keyword: bool) -> tuple[subprocess.Popen[bytes], str, Path]:
    shutil.copytree(ROOT / "examples" / "workspace", root / "workspace")
    config = root / "bench.toml"
    body = f'workspace = "{root / "workspace"}"\nstate_dir = "{root / "state"}"\n'
    if keyword:
        body += '[embedding]\nprovider = "none"\n'
    config.write_text(body + "[query]\nmin_score = 0.0\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    env["HF_HUB_OFFLINE"] = "1"
    log = (root / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_router", "--config", str(config), "serve", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=env,
    )
    server_file = root / "state" / "agents" / "main" / "serve.json"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"serve exited: {(root / 'serve.log').read_text()}")
        try:
            info = json.loads(server_file.read_text(encoding="utf-8"))
            if info["pid"] == process.pid:
                return process, info["url"], config
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit("serve did not become ready in 300 s")


def server_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) the server process has used, from ``/proc`` (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http_load(url: str, clients: int, requests: int, pid: int) -> dict[str, Any]:
    """``clients`` threads, each with one keep-alive ``http.client`` connection.

    ``http.client``, not httpx: on this 2-core machine the clients share the cores with
    the server, and httpx cost 1.1-1.5 ms of CPU per request against http.client's 0.3,
    so the bench measured its own client as much as the server. Both CPU costs are
    reported per request (``server_cpu_ms``, ``client_cpu_ms``).
    """
    parts = urllib.parse.urlsplit(url)
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    answered = [0] * clients
    barrier = threading.Barrier(clients + 1)

    def client(n: int) -> None:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        barrier.wait()
        for i in range(requests):
            body = json.dumps({"query": QUERIES[(n + i) % len(QUERIES)], "maxResults": 3})
            started = time.perf_counter()
            try:
                connection.request("POST", "/search", body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                status, raw = response.status, response.read()
                hits = json.loads(raw)["results"] if status == 200 else None
            except (OSError, http.client.HTTPException, ValueError, KeyError) as error:
                errors.append(repr(error))
                connection.close()  # reconnects on the next request
                continue
            latencies[n].append(time.perf_counter() - started)
            if hits is None:
                errors.append(f"{status}: {raw[:200]!r}")
            elif hits:
                answered[n] += 1
        connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started, cpu, server_cpu = time.perf_counter(), time.process_time(), server_cpu_s(pid)
    for thread in threads:
        thread.join()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    server_after = server_cpu_s(pid)
    flat = [x for per in latencies for x in per]
    total = clients * requests
    served = None if server_cpu is None or server_after is None else server_after - server_cpu
    return {
        "requests": total,
        "errors": len(errors),
        "with_hits": sum(answered),
        "first_error": errors[0] if errors else None,
        "p50_ms": percentile(flat, 50) * 1000,
        "p95_ms": percentile(flat, 95) * 1000,
        "p99_ms": percentile(flat, 99) * 1000,
        "throughput_rps": len(flat) / elapsed,
        "server_cpu_ms": None if served is None else served / total * 1000,
        "client_cpu_ms": cpu / total * 1000,
    }


def mcp_calls(url: str, calls: int) -> dict[str, float]:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []

    async def main() -> None:
        async with (
            streamable_http_client(url + "/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for i in range(calls):
                started = time.perf_counter()
                result: Any = await session.call_tool(
                    "memory_search", {"query": QUERIES[i % len(QUERIES)], "maxResults": 3}
                )
                latencies.append(time.perf_counter() - started)
                assert not result.is_error, result

    anyio.run(main)
    return {"p50_ms": percentile(latencies, 50) * 1000, "p99_ms": percentile(latencies, 99) * 1000}


def one_client(
    config: Path, url: str, runs: int, pid: int
) -> tuple[dict[str, float], dict[str, Any]]:
    """The baseline, ``Router.search`` in this process, and one HTTP client, taken in
    turns (a search, then a request, ``runs`` times): on a shared machine the load moves
    within seconds, and the two figures are compared (one client's p50 within 1 ms of
    in-process), so each pair sees the same load. The client's figures as
    :func:`http_load`'s, its CPU and throughput counting its requests only."""
    from memory_router import Router

    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    local: list[float] = []
    remote: list[float] = []
    errors: list[str] = []
    hits = cpu = 0.0
    with Router.from_config(config) as router:
        router.search(QUERIES[0])  # load the model and open the index first
        server_cpu = server_cpu_s(pid)
        for i in range(runs):
            query = QUERIES[i % len(QUERIES)]
            started = time.perf_counter()
            router.search(query, max_results=3)
            local.append(time.perf_counter() - started)
            body = json.dumps({"query": query, "maxResults": 3})
            started, thread_cpu = time.perf_counter(), time.thread_time()
            connection.request("POST", "/search", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            status, raw = response.status, response.read()
            found = json.loads(raw)["results"] if status == 200 else None
            remote.append(time.perf_counter() - started)
            cpu += time.thread_time() - thread_cpu
            if found is None:
                errors.append(f"{status}: {raw[:200]!r}")
            hits += bool(found)
        server_after = server_cpu_s(pid)
    connection.close()
    served = None if server_cpu is None or server_after is None else server_after - server_cpu
    base = {"p50_ms": percentile(local, 50) * 1000, "p99_ms": percentile(local, 99) * 1000}
    single = {
        "requests": runs,
        "errors": len(errors),
        "with_hits": int(hits),
        "first_error": errors[0] if errors else None,
        "p50_ms": percentile(remote, 50) * 1000,
        "p95_ms": percentile(remote, 95) * 1000,
        "p99_ms": percentile(remote, 99) * 1000,
        "throughput_rps": len(remote) / sum(remote),
        "server_cpu_ms": None if served is None else served / runs * 1000,
        "client_cpu_ms": cpu / runs * 1000,
    }
    return base, single


def cli_runs(config: Path, runs: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    env["HF_HUB_OFFLINE"] = "1"
    result = {}
    for label, extra in (("server", []), ("local", ["--local"])):
        times = []
        for i in range(runs):
            command = [sys.executable, "-m", "memory_router", "--config", str(config), "search"]
            started = time.perf_counter()
            done = subprocess.run(
                [*command, QUERIES[i % len(QUERIES)], "--json", *extra],
                capture_output=True,
                env=env,
                timeout=300,
            )
            times.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(done.stderr.decode())
        result[f"cli_{label}_s"] = statistics.median(times)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--mcp-calls", type=int, default=100)
    parser.add_argument("--cli-runs", type=int, default=5)
    parser.add_argument("--baseline-runs", type=int, default=100)
    parser.add_argument("--keyword", action="store_true", help="keyword-only (no embeddings)")
    parser.add_argument("--quick", action="store_true", help="8 × 50 requests, fewer runs")
    parser.add_argument("--check", action="store_true", help="compare with docs/performance.md")
    parser.add_argument("--record", action="store_true", help="record the figures there")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.mcp_calls, args.cli_runs, args.baseline_runs = 50, 20, 3, 20
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    # A SIGTERM (e.g. from `timeout`) unwinds through the finally below: the server stops too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        process, url, config = start_server(Path(tmp), args.keyword)
        try:
            ref = _guard.reference()
            http_load(url, 1, 20, process.pid)  # the server's threads and connection made
            base, single = one_client(config, url, args.baseline_runs, process.pid)
            print(f"in-process Router.search × {args.baseline_runs}: {json.dumps(base)}")
            print(f"HTTP /search 1 client × {args.baseline_runs}, in turns: {json.dumps(single)}")
            extra = single["p50_ms"] - base["p50_ms"]
            print(f"one client's p50 is in-process p50 + {extra:.2f} ms (target: within 1 ms)")
            load = http_load(url, args.clients, args.requests, process.pid)
            print(f"HTTP /search {args.clients} clients × {args.requests}: {json.dumps(load)}")
            mcp = mcp_calls(url, args.mcp_calls)
            print(f"MCP memory_search × {args.mcp_calls}: {json.dumps(mcp)}")
            cli = cli_runs(config, args.cli_runs)
            print(f"CLI search (median of {args.cli_runs}): {json.dumps(cli)}")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
        print(f"serve exit code after SIGTERM: {process.returncode}")
        if load["errors"]:
            raise SystemExit(f"{load['errors']} errors under load")
    mode = "keyword" if args.keyword else "hybrid"
    flags = [flag for flag, on in (("--keyword", args.keyword), ("--quick", args.quick)) if on]
    command = " ".join(["bench_serve.py", *flags])
    figures = [
        _guard.Figure(f"serve-{mode} in-process p50", base["p50_ms"], "ms", command),
        _guard.Figure(f"serve-{mode} 1 client p50", single["p50_ms"], "ms", command),
        _guard.Figure(
            f"serve-{mode} {args.clients} clients", load["throughput_rps"], "req/s", command
        ),
    ]
    _guard.finish(figures, ref, check_=args.check, record_=args.record)


if __name__ == "__main__":
    main()
