"""What a budgeted run costs per cell against a full run of the same grid (issue 37 §4).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_budget_cost.py [--backend smollm2|fake]
        [--task demo_sentiment_en] [--decoding greedy] [--budget 2x] [--small-limit 8]
        [--n-boot 1000] [--repeats 3]

Two comparisons, each `hakari.evaluate` in this process on one model loaded once before
any clock starts (the packaged SmolLM2-135M in fp32 on this CPU, the default; or `fake`,
the engine without a model), a fresh response cache per run, variants interleaved, after
one untimed warm-up run:

* estimated: `--budget` on a grid large enough to be estimated (the task's whole grid;
  demo_sentiment_en: 6 templates × 32 instances, 2x = 64 of 192 cells) against a full run
  of the same cells (goal: seconds per cell within 10%);
* fallback: `--budget` on a grid too small to estimate honestly (`--small-limit`
  instances: the budget runs the full grid, `aggregate.budget.floor`) against the full
  run of the same cells (goal: 1.0).

Each row splits the wall time into the engine's (generate + loglik calls) and the rest
(prompts, cache, extraction, the estimator and its bootstrap). A full run of the budget's
64 cells costs their engine time times the full run's own wall/engine factor: one engine
call of 64 prompts fills the batch less than one of 192, so raw ms/cell of runs of
different sizes differ by the engine alone. The `bare` column asks each run's requests of
the engine again, call for call, to check that a run's engine time is the engine's own.
The table prints medians over `--repeats`.
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
    """The loaded backend, kept open across runs (`close` does nothing), timing its calls
    and keeping what each asked, so the same requests can be asked again bare."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.seconds = 0.0
        self.asked: list[tuple[str, list[Any], int | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def _timed(self, method: str, requests: Any, kwargs: dict[str, Any]) -> Any:
        self.asked.append((method, list(requests), kwargs.get("batch_size")))
        started = time.perf_counter()
        try:
            return getattr(self.backend, method)(requests, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started

    def generate(self, requests: Any, **kwargs: Any) -> Any:
        return self._timed("generate", requests, kwargs)

    def loglik(self, requests: Any, **kwargs: Any) -> Any:
        return self._timed("loglik", requests, kwargs)

    def bare(self) -> float:
        """Seconds to ask the engine the last run's requests again, call for call, with
        nothing of hakari's run around them: the same cells, prompts and batching."""
        started = time.perf_counter()
        for method, requests, batch_size in self.asked:
            getattr(self.backend, method)(requests, batch_size=batch_size)
        return time.perf_counter() - started

    def close(self) -> None:
        return None


@dataclass
class Variant:
    name: str
    flat: dict[str, Any]
    walls: list[float] = field(default_factory=list)
    backend_s: list[float] = field(default_factory=list)
    bare_s: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
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
    timed.seconds, timed.asked = 0.0, []
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
    variant.calls.append(len(timed.asked))
    variant.bare_s.append(timed.bare())
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
    head = (f"{'case':<10} {'run':<28} {'cells':>6} {'est.':>5} {'calls':>5} {'wall s':>8} "
            f"{'backend s':>9} {'other s':>8} {'bare s':>7} {'ms/cell':>8} {'x eng.':>7} "
            f"{'ratio':>6}")  # fmt: skip
    print(head)
    print("-" * len(head))
    for case, (full, other) in pairs.items():
        full_over = statistics.median(full.walls) / statistics.median(full.backend_s)
        for v in (full, other):
            wall, backend = statistics.median(v.walls), statistics.median(v.backend_s)
            bare = statistics.median(v.bare_s)
            print(f"{case:<10} {v.name:<28} {v.cells:>6} {'yes' if v.estimated else 'no':>5} "
                  f"{statistics.median(v.calls):>5.0f} {wall:>8.2f} {backend:>9.2f} "
                  f"{wall - backend:>8.2f} {bare:>7.2f} {1000 * wall / max(v.cells, 1):>8.2f} "
                  f"{wall / backend:>7.3f} {wall / backend / full_over:>6.3f}")  # fmt: skip
    print(
        "bare: the run's own requests asked of the engine again, call for call, nothing of\n"
        "hakari's run around them (a check that the run's engine time is the engine's own);\n"
        "x eng.: wall / the run's engine time; ratio: x eng. against the full run's, i.e.\n"
        "seconds per cell against a full run of the same cells (estimated: goal within\n"
        "1.10; fallback: goal 1.00). ms/cell alone differs with the number of cells: one\n"
        "engine call of 64 prompts fills the batch less than one of 192."
    )


if __name__ == "__main__":
    main()
