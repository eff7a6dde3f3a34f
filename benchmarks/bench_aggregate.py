"""Time the template × instance bootstrap of `hakari.aggregate` and print a table.

Synthetic data at the paper's largest template count (JNLI/MNLI: 18 templates) and a
JNLI-sized split (2,500 instances), 1,000 replicates. For each metric the table gives the
best wall time over `--repeats` runs of `bootstrap` (scoring of the point estimates
included), and the time per replicate of a naive loop that calls `corpus.compute` on
every resampled template (measured on a few replicates, then extrapolated to n_boot).

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_aggregate.py [--metrics accuracy mcc]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from timing import add_smoke_flag, best_of_rounds

from hakari.aggregate import bootstrap
from hakari.scoring import corpus

NLI_LABELS = ["entailment", "neutral", "contradiction"]


def _labels(rng: np.random.Generator, n: int, templates: int, labels: list[str]) -> Any:
    refs = list(rng.choice(labels, size=n))
    preds = {}
    for t in range(templates):
        keep = rng.random(n) < 0.4 + 0.5 * t / templates
        noise = rng.choice(labels, size=n)
        preds[f"{t // 3}-{t % 3}"] = [
            r if k else x for r, k, x in zip(refs, keep, noise, strict=True)
        ]
    return preds, refs


def _scores(rng: np.random.Generator, n: int, templates: int) -> Any:
    refs = np.round(rng.uniform(0, 5, size=n), 1)
    preds = {
        f"{t // 2}-{t % 2}": list(np.round(np.clip(refs + rng.normal(0, 1 + t / 4, n), 0, 5)))
        for t in range(templates)
    }
    return preds, list(refs)


def _texts(rng: np.random.Generator, n: int, templates: int) -> Any:
    words = ["the", "river", "Tokyo", "tower", "1995", "of", "a", "Broncos", "city", "north"]
    refs = [[" ".join(rng.choice(words, size=3)) for _ in range(3)] for _ in range(n)]
    preds = {}
    for t in range(templates):
        preds[f"{t}-0"] = [
            golds[0] if rng.random() < 0.5 else " ".join(rng.choice(words, size=2))
            for golds in refs
        ]
    return preds, refs


DATASETS: dict[str, Callable[[np.random.Generator, int, int], Any]] = {
    "accuracy": lambda rng, n, t: _labels(rng, n, t, NLI_LABELS),
    "mcc": lambda rng, n, t: _labels(rng, n, t, ["acceptable", "unacceptable"]),
    "pearson": _scores,
    "spearman": _scores,
    "exact_match": _texts,
    "f1": _texts,
}


def _naive_per_replicate(metric: str, preds: dict[str, list[Any]], refs: list[Any]) -> float:
    rng = np.random.default_rng(0)
    columns = list(preds.values())
    reps = 3
    start = time.perf_counter()
    for _ in range(reps):
        idx = rng.integers(0, len(refs), size=len(refs))
        ref_b = [refs[i] for i in idx]
        for t in rng.integers(0, len(columns), size=len(columns)):
            corpus.compute(metric, [columns[t][i] for i in idx], ref_b)
    return (time.perf_counter() - start) / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=int, default=18)
    parser.add_argument("--instances", type=int, default=2500)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--metrics", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--skip-naive", action="store_true", help="omit the naive-loop column")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.templates, args.instances, args.n_boot, args.repeats = 3, 50, 40, 1

    header = (
        f"{'metric':<12} {'templates':>9} {'instances':>9} {'n_boot':>7} "
        f"{'bootstrap s':>12} {'naive s (est.)':>15} {'speed-up':>9}"
    )
    print(header)
    print("-" * len(header))
    for metric in args.metrics:
        rng = np.random.default_rng(42)
        preds, refs = DATASETS[metric](rng, args.instances, args.templates)
        run = {metric: partial(bootstrap, preds, refs, metric, n_boot=args.n_boot, seed=0)}
        best = best_of_rounds(run, args.repeats)[metric]
        if args.skip_naive:
            naive_text, speedup_text = "-", "-"
        else:
            naive = _naive_per_replicate(metric, preds, refs) * args.n_boot
            naive_text, speedup_text = f"{naive:.1f}", f"{naive / best:.0f}x"
        print(
            f"{metric:<12} {args.templates:>9} {args.instances:>9} {args.n_boot:>7} "
            f"{best:>12.3f} {naive_text:>15} {speedup_text:>9}"
        )


if __name__ == "__main__":
    main()
