"""What the benchmark scripts share: timing by the best of interleaved rounds, the
`--smoke` mode CI runs, and skipping with a reason.

Best of interleaved rounds: every variant runs once per round, the rounds one after the
other (with `alternate`, every other round in reverse order, so no variant always runs
right after the same one), and each variant keeps its fastest round. Other processes
only ever add time, so the minimum is the least disturbed measurement, and variants
timed in the same rounds share the machine's load: their ratio is what to compare.

Smoke mode (`--smoke`): a few seconds on the smallest inputs, to prove the script still
starts and runs end to end after a move (`benchmarks/smoke.py` runs every script so in
CI); its numbers mean nothing. A script that needs what is absent (a GPU, the vLLM venv,
lm-eval, data under ../shared) calls `skip`: exit status `SKIP_EXIT`, the reason on
stderr, so the smoke run reports a skip, not a failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NoReturn

SKIP_EXIT = 77  # the "skipped" exit status of automake's test drivers
REPO = Path(__file__).resolve().parents[1]


def timed(fn: Callable[[], object], *, sync: Callable[[], None] | None = None) -> float:
    """Wall seconds of one call of `fn`; `sync` (e.g. `torch.cuda.synchronize`) runs
    before the clock starts and before it stops, so queued GPU work is counted."""
    if sync is not None:
        sync()
    started = time.perf_counter()
    fn()
    if sync is not None:
        sync()
    return time.perf_counter() - started


def best_of_rounds(
    runs: Mapping[str, Callable[[], object]],
    rounds: int,
    *,
    alternate: bool = False,
    sync: Callable[[], None] | None = None,
) -> dict[str, float]:
    """Variant -> its fastest wall time over `rounds` interleaved rounds (module docstring)."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    best = {name: float("inf") for name in runs}
    for r in range(rounds):
        order = list(runs) if not alternate or r % 2 == 0 else list(runs)[::-1]
        for name in order:
            best[name] = min(best[name], timed(runs[name], sync=sync))
    return best


def add_smoke_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a few seconds on the smallest inputs: checks that the script runs (CI); "
        "the numbers mean nothing",
    )


def skip(reason: str) -> NoReturn:
    """End the script as skipped (exit status `SKIP_EXIT`), saying why."""
    print(f"skipped: {reason}", file=sys.stderr, flush=True)
    raise SystemExit(SKIP_EXIT)


def need_module(name: str, why: str) -> None:
    """`skip` unless `name` can be imported."""
    if importlib.util.find_spec(name) is None:
        skip(f"{name} is not installed ({why})")


def need_path(path: Path, why: str) -> None:
    """`skip` unless `path` exists."""
    if not path.exists():
        skip(f"{path} is missing ({why})")
