"""The CPU threads an in-process model computes with (torch's intra-op threads): `--threads`,
else the rule below. torch-free, so the runner records the number before any model loads.

The default is the CPUs this process may use (its affinity; torch's own count on a
machine without a CPU set). It is kept until `benchmarks/bench_threads.py` has measured
the settings quiet and under load (docs/results/threads.md): the one measurement so far,
issue 37's under load, shows what a busy machine costs, not what a quiet one gains.
"""

from __future__ import annotations

import os

from hakari._util import checks


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: fewer than the machine's in a
    container with a CPU set), where the system says; else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def default_threads() -> int:
    """The threads of a run that does not say (`--threads`)."""
    return usable_cpus()


def check_threads(value: object, option: str = "--threads") -> int | None:
    """At least 1 and at most the machine's CPUs (more threads than CPUs only wait for
    each other), else one line naming the option; None (not given: the rule) passes."""
    if value is None:
        return None
    return checks.integer(value, option, low=1, high=max(os.cpu_count() or 1, usable_cpus()))
