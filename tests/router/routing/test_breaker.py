from __future__ import annotations

from memory_router._routing.breaker import CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_threshold_and_probes_once() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=2, cooldown_s=10, clock=clock)
    breaker.failure("a")
    assert breaker.allow()
    breaker.failure("b")
    assert not breaker.allow()
    assert breaker.snapshot().state == "open"
    clock.now = 10
    assert breaker.allow(), "the first caller after the cooldown probes"
    assert not breaker.allow(), "only one probe at a time"
    breaker.failure("c")
    assert breaker.snapshot().state == "open"
    clock.now = 20
    assert breaker.allow()
    breaker.success()
    assert breaker.snapshot().state == "closed"
    assert breaker.snapshot().failures == 0


def test_severe_failure_opens_at_once() -> None:
    breaker = CircuitBreaker(failure_threshold=5, cooldown_s=10, clock=Clock())
    breaker.failure("segfault", severe=True)
    assert not breaker.allow()
    assert breaker.snapshot().last_error == "segfault"
