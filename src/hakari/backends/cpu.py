"""The CPU threads an in-process model computes with (torch's intra-op threads): `--threads`,
else the rule below. torch-free, so the runner records the number before any model loads.

The default is the CPUs this process may use (its affinity; torch's own count on a
machine without a CPU set) with OpenMP's passive wait policy: on this 2-CPU machine
(`benchmarks/bench_threads.py`, docs/results/threads.md) it is within 5% of the fastest
setting quiet and under load, where spinning threads lose 36-55%. The policy is read
once, when torch's OpenMP runtime loads: the `hakari` command sets it first thing, an
API caller's process only while torch is not yet imported, and never over the user's.
"""

from __future__ import annotations

import os
import sys

from hakari._util import checks

WAIT_POLICY = "PASSIVE"  # an idle OpenMP thread sleeps instead of spinning on its CPU


def prefer_passive_wait() -> None:
    """`OMP_WAIT_POLICY=PASSIVE` unless the user set a policy or torch (its OpenMP
    runtime, which reads the variable once) is already loaded."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)


def wait_policy() -> str:
    """The OpenMP wait policy this process runs with ("passive", "active", or libgomp's
    own default "unset")."""
    return os.environ.get("OMP_WAIT_POLICY", "unset").strip().lower() or "unset"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: fewer than the machine's in a
    container with a CPU set), where the system says; else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def omp_threads() -> int | None:
    """`OMP_NUM_THREADS` as OpenMP reads it: the first count of its comma-separated list
    (one per nesting level), in ASCII digits, at least 1; None where it is unset or
    OpenMP would ignore it ("abc", "0", "-1", "²" and "٣", which Python's `isdigit`
    takes: `int("²")` raised from `hakari run`)."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if first.isascii() and first.isdigit() and int(first) >= 1:
        return int(first)
    return None


def default_threads() -> int:
    """The threads of a run that does not say (`--threads`): `OMP_NUM_THREADS` where the
    environment sets a usable count (`omp_threads`: torch's own rule, and how a job
    scheduler or a parallel test runner shares the CPUs out), else the usable CPUs."""
    given = omp_threads()
    if given is not None:
        return min(given, max(os.cpu_count() or 1, usable_cpus()))
    return usable_cpus()


def check_threads(value: object, option: str = "--threads") -> int | None:
    """At least 1 and at most the machine's CPUs (more threads than CPUs only wait for
    each other), else one line naming the option; None (not given: the rule) passes."""
    if value is None:
        return None
    return checks.integer(value, option, low=1, high=max(os.cpu_count() or 1, usable_cpus()))
