"""The smallest grids a budgeted run estimates honestly: coverage of the full-grid mean,
std and Sharpe score by hakari's budgeted intervals on grids cut down to T templates × N
instances, at budgets of k × one template's run, on real grids (the project's and the
external ones under ../shared/real-grids, templates and instances drawn at random) and on
simulated ones (`budget_grids.SCENARIOS`). The rule `hakari.aggregate.budget.floor`
applies is read off these tables: a cell of the table below 0.93 on either source must be
refused or run in full by it.

    PYTHONPATH=src python benchmarks/bench_budget_floor.py [--reps 12] [--templates 6 12 18]
        [--instances 8 16 32 64] [--budgets 1 2 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from budget_grids import SCENARIOS, FullGrid, external_grids, real_grids, simulate
from timing import add_smoke_flag

from hakari.aggregate.budget.design import balanced_design
from hakari.aggregate.budget.estimate import estimate
from hakari.aggregate.budget.floor import grid_verdict
from hakari.aggregate.intervals import template_statistics

STATS = ("mean", "std", "sharpe")


def cut(full: FullGrid, templates: np.ndarray, rows: np.ndarray) -> FullGrid:
    """The grid of `templates` × `rows` of `full`."""
    ids = tuple(full.template_ids[t] for t in templates)
    scores = None
    if full.item_scores is not None:
        scores = {m: v[np.ix_(templates, rows)] for m, v in full.item_scores.items()}
    return FullGrid(
        name=full.name,
        kind=full.kind,
        template_ids=ids,
        metrics=("accuracy",) if full.kind == "label" else ("exact_match",),
        answers=full.answers[np.ix_(templates, rows)],
        golds=full.golds[rows],
        labels=full.labels,
        item_scores=scores,
        language=full.language,
        source=full.source,
    )


def coverage_once(full: FullGrid, budget: float, seed: int) -> dict[str, bool]:
    n_templates, n = full.shape
    metric = full.metrics[0]
    truth = template_statistics(full.template_truth(metric)[None, :], 1.0)
    mask = balanced_design(n_templates, full.strata(), seed).mask(round(budget * n))
    options = {metric: full.options(metric)}
    est, _ = estimate(
        full.observed(mask), [metric], n_boot=0, seed=seed, metric_options=options, n_draws=60
    )
    grid_ci = est[metric].grid_ci
    return {s: grid_ci[s][0] - 1e-9 <= float(truth[s][0][0]) <= grid_ci[s][1] + 1e-9 for s in STATS}


def sources(rng: np.random.Generator) -> dict[str, list[FullGrid]]:
    real = [g for g in real_grids() if g.shape[1] >= 60 and "accuracy" in g.metrics]
    sims = [simulate(s, rng)[0] for s in SCENARIOS]
    return {"real": real + external_grids(), "simulated": sims}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=12)
    parser.add_argument("--templates", type=int, nargs="+", default=[6, 12, 18])
    parser.add_argument("--instances", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--budgets", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.reps, args.templates, args.instances, args.budgets = 1, [6], [8], [2.0]
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    grids = sources(rng)
    print(
        "Coverage of the full-grid mean / std / Sharpe by the budgeted 95% intervals on cut-down"
        f" grids; {args.reps} draws of templates, instances and design seed per cell\n"
    )
    print(
        "| source | templates × instances | budget | cells | mean | std | Sharpe | worst | rule |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, pool in grids.items():
        for n_templates in args.templates:
            for n in args.instances:
                for budget in args.budgets:
                    hits: dict[str, list[bool]] = defaultdict(list)
                    for rep in range(args.reps):
                        full = pool[rep % len(pool)]
                        if full.shape[0] < n_templates or full.shape[1] < n:
                            continue
                        templates = np.sort(rng.choice(full.shape[0], n_templates, replace=False))
                        rows = np.sort(rng.choice(full.shape[1], n, replace=False))
                        for s, ok in coverage_once(cut(full, templates, rows), budget, rep).items():
                            hits[s].append(ok)
                    if not hits:
                        continue
                    cov = [float(np.mean(hits[s])) for s in STATS]
                    cells = round(budget * n)
                    verdict = grid_verdict(n_templates, n, cells).action
                    print(
                        f"| {name} | {n_templates} × {n} | {budget:g}x | {cells} | "
                        + " | ".join(f"{c:.2f}" for c in cov)
                        + f" | {min(cov):.2f} | {verdict} |",
                        flush=True,
                    )
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
