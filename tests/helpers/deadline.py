"""Running a call that might never return (catastrophic backtracking holds the GIL, so a
thread cannot be timed out) in a forked child with a generous deadline: the test fails
with a message instead of hanging the suite. A guard, not a timing assertion."""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable
from typing import Any

import pytest

# generous: a loaded CI machine must never trip it; a hang is forever anyway
GENEROUS_S = float(os.environ.get("HAKARI_TEST_DEADLINE_S", "60"))


def within_deadline(call: Callable[[], Any], seconds: float | None = None) -> Any:
    """`call()`'s result (picklable), computed in a forked child that is killed if it
    has not returned within `seconds`; its exceptions are raised again here."""
    seconds = GENEROUS_S if seconds is None else seconds
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        try:
            outcome: tuple[str, Any] = ("ok", call())
        except BaseException as exc:
            outcome = ("raised", exc)
        try:
            send.send_bytes(pickle.dumps(outcome))
        except Exception as exc:  # an unpicklable result or exception
            send.send_bytes(pickle.dumps(("raised", RuntimeError(repr(exc)))))

    process = context.Process(target=child, daemon=True)
    process.start()
    ready = receive.poll(seconds)
    if not ready:
        process.kill()
        process.join()
        pytest.fail(f"did not return within {seconds:.0f} s (a hang)")
    kind, value = pickle.loads(receive.recv_bytes())
    process.join()
    if kind == "raised":
        raise value
    return value
