"""Counters and histograms rendered in the Prometheus text format (no client library)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BREAKER_VALUES = {"closed": 0, "half-open": 1, "open": 2}


def fallback_reason(reason: str, kind: str | None = None) -> str:
    """A bounded label for a fallback: its ``kind`` when the router gave one (an
    unreachable store says "cannot be reached", never "unavailable"), else from the text."""
    if kind:
        return kind
    text = reason.lower()
    if text.startswith("circuit open"):
        return "circuit_open"
    if "timed out" in text or "timeout" in text:
        return "timeout"
    if "unavailable" in text or "not running" in text or "failed to start" in text:
        return "unavailable"
    return "error"


class Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.total += 1
        self.sum += value
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1

    def lines(self, name: str, labels: str) -> Iterable[str]:
        sep = "," if labels else ""
        for bound, count in zip(self.buckets, self.counts, strict=True):
            yield f'{name}_bucket{{{labels}{sep}le="{bound}"}} {count}'
        yield f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.total}'
        braced = f"{{{labels}}}" if labels else ""
        yield f"{name}_sum{braced} {self.sum:.6f}"
        yield f"{name}_count{braced} {self.total}"


class Metrics:
    """Thread-safe counters for queries, fallbacks, writes and syncs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.queries: Counter[tuple[str, str]] = Counter()
        self.fallbacks: Counter[tuple[str, str]] = Counter()
        self.counters: Counter[str] = Counter()
        self.latency = Histogram(LATENCY_BUCKETS)
        self.syncs: dict[tuple[str, str], Histogram] = {}

    def query(self, backend: str | None, seconds: float, *, ok: bool) -> None:
        with self._lock:
            self.queries[(backend or "none", "ok" if ok else "error")] += 1
            self.latency.observe(seconds)

    def fallback(self, backend: str, reason: str, kind: str | None = None) -> None:
        with self._lock:
            self.fallbacks[(backend, fallback_reason(reason, kind))] += 1

    def count(self, name: str) -> None:
        with self._lock:
            self.counters[name] += 1

    def sync(self, backend: str, seconds: float, *, ok: bool) -> None:
        with self._lock:
            key = (backend, "ok" if ok else "error")
            self.syncs.setdefault(key, Histogram(LATENCY_BUCKETS)).observe(seconds)

    def render(self, breakers: Mapping[str, str]) -> str:
        """The exposition text; ``breakers`` maps backend → breaker state now."""
        with self._lock:
            lines = [*self._queries(), *self._writes(), *self._syncs()]
        lines += [
            "# HELP memory_router_breaker_state Circuit breaker: 0 closed, 1 half-open, 2 open.",
            "# TYPE memory_router_breaker_state gauge",
            *(
                f'memory_router_breaker_state{{backend="{_esc(n)}"}} {BREAKER_VALUES.get(s, 2)}'
                for n, s in sorted(breakers.items())
            ),
        ]
        return "\n".join(lines) + "\n"

    def _queries(self) -> Iterable[str]:
        yield "# HELP memory_router_queries_total Searches, by answering backend and outcome."
        yield "# TYPE memory_router_queries_total counter"
        for (backend, outcome), n in sorted(self.queries.items()):
            labels = f'backend="{_esc(backend)}",outcome="{outcome}"'
            yield f"memory_router_queries_total{{{labels}}} {n}"
        yield "# HELP memory_router_query_seconds Search latency."
        yield "# TYPE memory_router_query_seconds histogram"
        yield from self.latency.lines("memory_router_query_seconds", "")
        yield "# HELP memory_router_fallbacks_total Backends that failed a query, by reason."
        yield "# TYPE memory_router_fallbacks_total counter"
        for (backend, reason), n in sorted(self.fallbacks.items()):
            labels = f'backend="{_esc(backend)}",reason="{reason}"'
            yield f"memory_router_fallbacks_total{{{labels}}} {n}"

    def _writes(self) -> Iterable[str]:
        yield "# HELP memory_router_entries_total Entries stored, refused as duplicates, forgotten."
        yield "# TYPE memory_router_entries_total counter"
        for op in ("stores", "duplicates", "forgets"):
            yield f'memory_router_entries_total{{op="{op[:-1]}"}} {self.counters[op]}'

    def _syncs(self) -> Iterable[str]:
        yield "# HELP memory_router_sync_seconds Index sync duration, by backend and outcome."
        yield "# TYPE memory_router_sync_seconds histogram"
        for (backend, outcome), histogram in sorted(self.syncs.items()):
            labels = f'backend="{_esc(backend)}",outcome="{outcome}"'
            yield from histogram.lines("memory_router_sync_seconds", labels)


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
