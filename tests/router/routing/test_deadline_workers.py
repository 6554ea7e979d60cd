"""``call_with_deadline``: a thread of its own per call, reused once its call returned."""

from __future__ import annotations

import os
import threading

import pytest

from memory_router import BackendTimeout
from memory_router._routing.calls import call_with_deadline


def test_a_finished_call_leaves_its_thread_for_the_next() -> None:
    first = call_with_deadline("reuse", threading.get_ident, 10)
    second = call_with_deadline("reuse", threading.get_ident, 10)
    assert first == second != threading.get_ident()


def test_errors_reach_the_caller() -> None:
    def fail() -> None:
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        call_with_deadline("errors", fail, 10)
    assert call_with_deadline("errors", lambda: 7, 10) == 7  # the worker still serves


def test_a_hung_call_keeps_only_its_own_thread() -> None:
    release = threading.Event()
    hung: list[int] = []

    def hang() -> None:
        hung.append(threading.get_ident())
        release.wait(30)

    with pytest.raises(BackendTimeout, match="no answer within"):
        call_with_deadline("hung", hang, 0.05)
    try:
        other = call_with_deadline("hung", threading.get_ident, 10)  # not queued behind it
        assert other != hung[0]
    finally:
        release.set()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
# pylance, when another test imported it, warns at every fork; this child runs no lance code.
@pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")
def test_a_forked_child_starts_its_own_workers() -> None:
    call_with_deadline("fork", threading.get_ident, 10)  # the parent has an idle worker
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker does not exist here
        code = 1
        try:
            code = 0 if call_with_deadline("fork", lambda: 7, 5) == 7 else 1
        finally:
            os._exit(code)  # never back into pytest
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
