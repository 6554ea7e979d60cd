"""Paired figures of ``serve`` variants on a shared machine: all servers run at once.

    git archive <commit> router plugins | tar -x -C /tmp/before     # a variant's source
    .venv/bin/python bench/serve_pairs.py --variant before=/tmp/before --variant now=

A variant is ``name=tree``: ``tree`` holds ``router/`` and ``plugins/`` and goes first on
the server's ``PYTHONPATH`` (empty: this checkout). Each server is ``bench_serve.py``'s
keyword-only one. On a machine whose load moves within seconds, figures taken one variant
after the other compare the load as much as the code; here the variants take turns:

* one client: request ``i`` goes to each server in turn, with a ``Router.search`` in this
  process after them (the in-process baseline), ``--single`` times;
* ``--clients`` clients: bursts of ``--clients`` × ``--burst`` requests to each server in
  turn, ``--bursts`` times; the median of each variant's bursts, and how many bursts the
  second variant won.

Each phase also gives the server's CPU per request (``/proc``), the figure that moves
least with the load.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

import bench_serve


def start(tree: str, root: Path) -> tuple[Any, str, Path]:
    """A server over a copy of the example workspace in ``root``, its code from ``tree``
    (``dir[,NAME=value...]``: extra environment variables for it, e.g. a switch)."""
    saved = dict(os.environ)
    tree, *extra = tree.split(",")
    if tree:
        os.environ["PYTHONPATH"] = f"{tree}/router:{tree}/plugins"
    else:
        os.environ.pop("PYTHONPATH", None)
    for kv in extra:
        k, v = kv.split("=", 1)
        os.environ[k] = v
    try:
        root.mkdir()
        return bench_serve.start_server(root, True)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def connect(url: str) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)


def ask(conn: http.client.HTTPConnection, i: int) -> float:
    body = json.dumps({"query": bench_serve.QUERIES[i % 8], "maxResults": 3})
    started = time.perf_counter()
    conn.request("POST", "/search", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    raw = response.read()
    took = time.perf_counter() - started
    if response.status != 200:
        raise SystemExit(f"{response.status}: {raw[:200]!r}")
    json.loads(raw)["results"]
    return took


def single_phase(servers: dict[str, Any], runs: int) -> None:
    """One client: each server in turn, then ``Router.search`` here; p50s and CPU."""
    from memory_router import Router

    router = Router.from_config(next(iter(servers.values()))[2])
    router.search(bench_serve.QUERIES[0])
    conns = {name: connect(url) for name, (_, url, _) in servers.items()}
    for i in range(30):
        for conn in conns.values():
            ask(conn, i)
    lat: dict[str, list[float]] = {name: [] for name in [*servers, "in-process"]}
    cpu0 = {name: bench_serve.server_cpu_s(proc.pid) for name, (proc, _, _) in servers.items()}
    for i in range(runs):
        for name in list(conns) if i % 2 == 0 else list(conns)[::-1]:
            lat[name].append(ask(conns[name], i))
        started = time.perf_counter()
        router.search(bench_serve.QUERIES[i % 8], max_results=3)
        lat["in-process"].append(time.perf_counter() - started)
    cpu1 = {name: bench_serve.server_cpu_s(proc.pid) for name, (proc, _, _) in servers.items()}
    for conn in conns.values():
        conn.close()
    router.close()
    base = statistics.median(lat["in-process"]) * 1000
    print(f"one client x {runs}, in turns; load {os.getloadavg()[0]:.1f}")
    print(f"  in-process p50 {base:.3f} ms")
    for name in servers:
        p50 = statistics.median(lat[name]) * 1000
        cpu = (cpu1[name] - cpu0[name]) / runs * 1000
        print(f"  {name:10s} p50 {p50:.3f} ms  gap {p50 - base:+.3f} ms  server CPU {cpu:.3f} ms")


def burst_phase(servers: dict[str, Any], clients: int, bursts: int, burst: int) -> None:
    """``clients`` clients: a burst to each server in turn; medians of the bursts."""
    rps: dict[str, list[float]] = {name: [] for name in servers}
    cpus: dict[str, list[float]] = {name: [] for name in servers}
    for b in range(bursts):
        for name in list(servers) if b % 2 == 0 else list(servers)[::-1]:
            proc, url, _ = servers[name]
            r = bench_serve.http_load(url, clients, burst, proc.pid)
            if r["errors"]:
                raise SystemExit(f"{name}: {r['errors']} errors: {r['first_error']}")
            rps[name].append(r["throughput_rps"])
            cpus[name].append(r["server_cpu_ms"])
    print(
        f"{clients} clients, {bursts} bursts of {clients} x {burst}; load {os.getloadavg()[0]:.1f}"
    )
    for name in servers:
        print(
            f"  {name:10s} req/s median {statistics.median(rps[name]):6.0f}"
            f" (min {min(rps[name]):.0f}, max {max(rps[name]):.0f})"
            f"  server CPU median {statistics.median(cpus[name]):.3f} ms"
        )
    if len(servers) == 2:
        first, second = rps.values()
        wins = sum(1 for x, y in zip(first, second, strict=True) if x < y)
        print(f"  bursts where the second variant had more req/s: {wins} of {bursts}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--variant", action="append", required=True, help="name=tree")
    p.add_argument("--single", type=int, default=600)
    p.add_argument("--bursts", type=int, default=10)
    p.add_argument("--burst", type=int, default=50, help="requests per client per burst")
    p.add_argument("--clients", type=int, default=8)
    a = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="serve-pairs-"))
    servers: dict[str, Any] = {}
    try:
        for n, variant in enumerate(a.variant):
            name, tree = variant.split("=", 1)
            servers[name] = start(tree, tmp / f"v{n}")
        single_phase(servers, a.single)
        burst_phase(servers, a.clients, a.bursts, a.burst)
    finally:
        for proc, _, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
        for proc, _, _ in servers.values():
            proc.wait(60)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
