"""What a budgeted run costs per cell against a full run of the same grid (issue 37 §4).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_budget_cost.py [--backend smollm2|fake]
        [--task demo_sentiment_en] [--decoding greedy] [--budget 2x] [--small-limit 8]
        [--n-boot 1000] [--repeats 3]

Two comparisons, each `hakari.evaluate` in this process on one model loaded once before
any clock starts (the packaged SmolLM2-135M in fp32 on this CPU, the default; or `fake`,
the engine without a model), a fresh response cache per run, variants interleaved, after
one untimed warm-up run:

* estimated: `--budget` on a grid large enough to be estimated (the task's whole grid;
  demo_sentiment_en: 6 templates × 32 instances, 2x = 64 of 192 cells) against the full
  run of that grid: wall seconds per cell run, and its ratio (goal: within 10%);
* fallback: `--budget` on a grid too small to estimate honestly (`--small-limit`
  instances: the budget runs the full grid, `aggregate.budget.floor`) against the full
  run of the same cells: the ratio of the wall times (goal: 1.0).

Each row splits the wall time into the backend's (generate + loglik calls) and the rest
(prompts, cache, extraction, the estimator and its bootstrap), so that a per-cell gap says
where it comes from. The table prints medians over `--repeats`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import add_smoke_flag

import hakari
from hakari.backends.base import Backend


class Timed:
    """The loaded backend, kept open across runs (`close` does nothing), timing its calls."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.backend.generate(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started

    def loglik(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.backend.loglik(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started

    def close(self) -> None:
        return None


@dataclass
class Variant:
    name: str
    flat: dict[str, Any]
    walls: list[float] = field(default_factory=list)
    backend_s: list[float] = field(default_factory=list)
    cells: int = 0
    estimated: bool = False


def load(kind: str) -> Backend:
    if kind == "fake":
        from hakari.backends.fake import FakeBackend, hash_choice

        return FakeBackend(lambda r: hash_choice(r.prompt, ["positive", "negative"]), name="fake")
    from hakari.backends.registry import load_backend
    from hakari.runner.options import DEFAULT_MODEL

    return load_backend(DEFAULT_MODEL, dtype="float32")


def run_once(variant: Variant, timed: Timed, args: argparse.Namespace, work: Path) -> None:
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)  # every run asks the model every cell
    timed.seconds = 0.0
    started = time.perf_counter()
    results = hakari.evaluate(
        models=["bench"],
        tasks=[args.task],
        decodings=[args.decoding],
        n_boot=args.n_boot,
        cache_dir=cache,
        backend_factory=lambda spec: timed,  # type: ignore[arg-type,return-value]
        **variant.flat,
    )
    variant.walls.append(time.perf_counter() - started)
    variant.backend_s.append(timed.seconds)
    dec = results.models["bench"].tasks[args.task].decodings[args.decoding]
    variant.estimated = dec.budget is not None
    variant.cells = dec.budget.design.cells_run if dec.budget is not None else dec_cells(dec)


def dec_cells(dec: Any) -> int:
    return sum(t.n for t in dec.templates.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["smollm2", "fake"], default="smollm2")
    parser.add_argument("--task", default="demo_sentiment_en")
    parser.add_argument("--decoding", default="greedy")
    parser.add_argument("--budget", default="2x")
    parser.add_argument("--small-limit", type=int, default=8)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.backend, args.repeats, args.n_boot = "fake", 1, 50
    pairs = {
        "estimated": [
            Variant("full grid", {}),
            Variant(f"--budget {args.budget}", {"budget": args.budget}),
        ],
        "fallback": [
            Variant(f"full, --limit {args.small_limit}", {"limit": args.small_limit}),
            Variant(
                f"--budget {args.budget}, --limit {args.small_limit}",
                {"limit": args.small_limit, "budget": args.budget},
            ),
        ],
    }
    timed = Timed(load(args.backend))
    work = Path(tempfile.mkdtemp(prefix="bench-budget-cost-"))
    try:  # untimed: the first run imports the engine, scipy and the estimators
        run_once(Variant("warm-up", {"limit": args.small_limit}), timed, args, work)
        for repeat in range(args.repeats):
            for variants in pairs.values():
                for variant in variants if repeat % 2 == 0 else variants[::-1]:
                    run_once(variant, timed, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        timed.backend.close()
    print_table(pairs, args)


def print_table(pairs: dict[str, list[Variant]], args: argparse.Namespace) -> None:
    print(f"\n{args.backend} · {args.task} · {args.decoding} · n_boot {args.n_boot} · "
          f"medians of {args.repeats}")  # fmt: skip
    head = (f"{'case':<10} {'run':<28} {'cells':>6} {'est.':>5} {'wall s':>8} "
            f"{'backend s':>9} {'other s':>8} {'ms/cell':>8} {'ratio':>6}")  # fmt: skip
    print(head)
    print("-" * len(head))
    for case, (full, other) in pairs.items():
        base = statistics.median(full.walls) / max(full.cells, 1)
        for v in (full, other):
            wall, backend = statistics.median(v.walls), statistics.median(v.backend_s)
            per_cell = wall / max(v.cells, 1)
            print(f"{case:<10} {v.name:<28} {v.cells:>6} {'yes' if v.estimated else 'no':>5} "
                  f"{wall:>8.2f} {backend:>9.2f} {wall - backend:>8.2f} "
                  f"{1000 * per_cell:>8.2f} {per_cell / base:>6.2f}")  # fmt: skip
    print(
        "ratio: seconds per cell against the full run's (estimated: goal within 1.10; "
        "fallback: the same cells, goal 1.00)"
    )


if __name__ == "__main__":
    main()
