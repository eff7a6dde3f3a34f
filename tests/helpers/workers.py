"""The root conftest.py's rules for pytest-xdist, here so that a test can call them: how
many workers the suite runs on when `-n` is not given, and the threads each computes with.

Workers: `PYTEST_XDIST_AUTO_NUM_WORKERS` where it is a whole number (xdist's own override
of its count, which the suite's default ignored: a CI that set it to 1 still got a worker
a CPU), else the usable CPUs, at most `MAX_WORKERS`. Threads: each worker computes torch
with one thread unless the environment gives a count OpenMP reads
(`hakari.backends.cpu.omp_threads`); an unusable one ("abc", "0", "-1") was kept, so
hakari's rule gave every worker all the CPUs, two workers on two cores each with two
threads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hakari.backends.cpu import omp_threads, usable_cpus

MAX_WORKERS = 4  # each worker holds its own models: ~2-4 GB at the suite's peaks


def default_workers() -> int:
    """The workers of a run without `-n` (0 or 1: one process, no workers)."""
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "").strip()
    if given.isascii() and given.isdigit():
        return int(given)
    return min(usable_cpus(), MAX_WORKERS)


def pin_worker_threads() -> None:
    """In a worker: one thread (read by torch's OpenMP runtime when it loads, by hakari's
    thread rule and by every process a test starts) unless the environment gives a
    usable count, and the passive OpenMP wait unless it gives a policy."""
    if omp_threads() is None:
        os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@contextmanager
def one_process_at_a_time(cache: Path, what: str) -> Iterator[None]:
    """An exclusive lock in `cache` while `what` is made: the other xdist workers wait for
    the first one's conversion (or tables) and then find it done."""
    from filelock import FileLock

    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / f".{what}.lock")):
        yield
