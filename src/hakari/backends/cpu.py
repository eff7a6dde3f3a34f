"""The CPU threads an in-process model computes with (torch's intra-op threads): `--threads`,
else the rule below. torch-free, so the runner records the number before any model loads.

The default is the CPUs this process may use (its affinity; torch's own count on a
machine without a CPU set). OpenMP's wait policy is chosen per run: passive (an idle
thread sleeps) where other work kept this process's CPUs busy while the command
started, OpenMP's own (spin a while, then sleep) on a quiet machine. On this 2-CPU
machine (docs/results/threads.md) the passive wait ran the default run 2.7x faster
than spinning beside a load and 1.2x slower on a quiet machine; neither fixed policy
is within 5% of the best in both. The policy is read once, when torch's OpenMP runtime
loads: the `hakari` command chooses it before any command imports torch, and never
over the user's `OMP_WAIT_POLICY`.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hakari._util import checks

WAIT_POLICY = "PASSIVE"  # an idle OpenMP thread sleeps instead of spinning on its CPU
# Other work worth this many CPUs, on this process's CPUs while the command started,
# makes the run wait passively: a busy loop is 1.0, a quiet machine's daemons ~0.0-0.1.
BUSY_CPUS = 0.5
# The shortest window the busy share is read over (/proc/stat counts in 10 ms ticks)
MIN_WINDOW_S = 0.1


@dataclass(frozen=True)
class CpuSample:
    """This process's CPUs' busy time (/proc/stat, seconds), its own CPU time and the
    clock, at one moment."""

    busy_s: float
    own_s: float
    at: float


def sample_cpus() -> CpuSample | None:
    """The busy time of the CPUs this process may use, its own CPU time (every thread)
    and the monotonic clock; None where the system has no /proc/stat."""
    mine = {f"cpu{n}" for n in _affinity()}
    busy = 0
    try:
        for line in Path("/proc/stat").read_text(encoding="ascii").splitlines():
            name, _, rest = line.partition(" ")
            fields = rest.split()
            if name in mine and len(fields) >= 8:
                # user nice system idle iowait irq softirq steal: all but idle and iowait
                busy += sum(int(fields[i]) for i in (0, 1, 2, 5, 6, 7))
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):  # no /proc/stat, or not as Linux writes it
        return None
    own = os.times()
    return CpuSample(busy / ticks, own.user + own.system, time.monotonic())


def _affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def others_busy(start: CpuSample, end: CpuSample) -> float:
    """The CPUs' worth of time that work other than this process kept this process's
    CPUs busy between two samples (a busy loop: ~1.0; never below 0)."""
    window = end.at - start.at
    if window <= 0:
        return 0.0
    others = (end.busy_s - start.busy_s) - (end.own_s - start.own_s)
    return max(0.0, others / window)


STARTED = sample_cpus()  # when hakari's first module loaded: the window's start
_busy_at_start: float | None = None


def choose_wait_policy(start: CpuSample | None = STARTED) -> None:
    """`OMP_WAIT_POLICY=PASSIVE` where other work kept this process's CPUs busy (at
    least `BUSY_CPUS`) since `start` (the command's start; the window is made at least
    `MIN_WINDOW_S` long), else OpenMP's own policy; passive where the system cannot
    say. Nothing where the user set a policy or torch (its OpenMP runtime, which reads
    the variable once) is already loaded."""
    global _busy_at_start
    if "torch" in sys.modules or "OMP_WAIT_POLICY" in os.environ:
        return
    if start is None:
        os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
        return
    time.sleep(max(0.0, MIN_WINDOW_S - (time.monotonic() - start.at)))
    end = sample_cpus()
    busy = others_busy(start, end) if end is not None else BUSY_CPUS
    _busy_at_start = round(busy, 2)
    if busy >= BUSY_CPUS:
        os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY


def busy_at_start() -> float | None:
    """What `choose_wait_policy` read: other work's CPUs while the command started; None
    where it did not choose (the user's policy, an API caller)."""
    return _busy_at_start


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
