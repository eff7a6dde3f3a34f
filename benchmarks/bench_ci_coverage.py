"""Coverage of the 95% bootstrap intervals of `hakari.aggregate` in a simulation with
random template and instance effects, and print a table.

Model (accuracy): template t answers instance i correctly with probability
`expit(a + u_t + v_i)`, `u_t ~ N(0, tau_t^2)` (template effect), `v_i ~ N(0, tau_i^2)`
(instance effect). Templates and instances are samples from these populations; the
population values are `S(u) = E_v[expit(a + u + v)]` per template, `mu = E_u[S]`,
`sigma = SD_u[S]` (population std) and the population Sharpe score `mu / (alpha sigma + 1)`,
computed by Gauss-Hermite quadrature. Each simulated data set is scored by the real
`replicate_statistics` (the code path of `hakari run`), and the interval of each method is
read from the same replicates. Coverage is the share of data sets whose interval contains
the population value; its Monte Carlo standard error is `sqrt(c (1 - c) / datasets)`.

Scenarios: "templates dominate" (1,000 instances, tau_t 1.0, tau_i 1.5: a JNLI-sized
split where the template spread is the main uncertainty), "instances dominate"
(100 instances, tau_t 0.3, tau_i 1.5: a small `--limit` run) and "limit 4" (4 instances:
where studentised intervals pass the range of their quantity).

Rows: "studentized" is the interval as the method gives it, "studentized, cut" the same
interval cut to its quantity's range (what `hakari run` records, issue 17 §4; the
accuracy's range here), "percentile" the percentile interval (always in range). `cut`
is the share of data sets where at least one of the three intervals was cut.

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_ci_coverage.py [--datasets 400]
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from timing import add_smoke_flag

from hakari.aggregate.intervals import CI_METHODS, statistic_bounds
from hakari.aggregate.resampling import replicate_statistics
from hakari.scoring import corpus


@dataclass(frozen=True)
class Scenario:
    name: str
    n_instances: int
    tau_template: float
    tau_instance: float
    intercept: float = 0.5


SCENARIOS = [
    Scenario("templates dominate", 1000, 1.0, 1.5),
    Scenario("instances dominate", 100, 0.3, 1.5),
    Scenario("limit 4", 4, 0.3, 1.5),
]
CUT = "studentized, cut"
ROWS = (CI_METHODS[0], CUT, *CI_METHODS[1:])


def population_values(s: Scenario, alpha: float) -> dict[str, float]:
    """mu, sigma and Sharpe of the template population on the instance population."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(100)
    weights = weights / weights.sum()
    per_template = (
        expit(s.intercept + s.tau_template * nodes[:, None] + s.tau_instance * nodes[None, :])
        @ weights
    )
    mu = float(weights @ per_template)
    sigma = float(math.sqrt(weights @ (per_template - mu) ** 2))
    return {"mean": mu, "std": sigma, "sharpe": mu / (alpha * sigma + 1.0)}


def simulate(
    s: Scenario, n_templates: int, datasets: int, n_boot: int, alpha: float, seed: int
) -> tuple[dict[str, dict[str, tuple[float, float]]], float]:
    """row -> statistic -> (coverage, mean width), and the share of data sets cut."""
    truth = population_values(s, alpha)
    bounds = statistic_bounds(corpus.get("accuracy").value_range)
    rng = np.random.default_rng(seed)
    hits = {m: {k: 0 for k in truth} for m in ROWS}
    widths = {m: {k: 0.0 for k in truth} for m in ROWS}
    cut_sets = 0
    references = [1] * s.n_instances
    for d in range(datasets):
        u = rng.normal(0.0, s.tau_template, n_templates)
        v = rng.normal(0.0, s.tau_instance, s.n_instances)
        correct = rng.random((n_templates, s.n_instances)) < expit(s.intercept + u[:, None] + v)
        predictions = {f"{t}-0": row.astype(int).tolist() for t, row in enumerate(correct)}
        _, reps = replicate_statistics(
            predictions, references, "accuracy", alpha=alpha, n_boot=n_boot, seed=seed + d
        )
        cut = False
        for stat, value in truth.items():
            intervals = {m: reps[stat].interval(m, 0.95) for m in CI_METHODS}
            bounded = reps[stat].bounded("studentized", 0.95, bounds[stat])
            intervals[CUT] = bounded.pair
            cut = cut or bool(bounded.clipped)
            for row, (low, high) in intervals.items():
                hits[row][stat] += int(low <= value <= high)
                widths[row][stat] += high - low
        cut_sets += cut
    cells = {m: {k: (hits[m][k] / datasets, widths[m][k] / datasets) for k in truth} for m in ROWS}
    return cells, cut_sets / datasets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=400, help="simulated data sets per cell")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--templates", type=int, nargs="+", default=[8, 12, 14, 18])
    parser.add_argument("--seed", type=int, default=0)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.datasets, args.n_boot, args.templates = 2, 20, [4]

    header = (
        f"{'scenario':<19} {'interval':<17} {'templates':>9} {'mean cov':>9} {'width':>6} "
        f"{'std cov':>8} {'width':>6} {'Sharpe cov':>11} {'width':>6} {'cut':>5}"
    )
    start = time.perf_counter()
    print(
        f"95% intervals, {args.datasets} data sets per row, n_boot {args.n_boot}, "
        f"alpha {args.alpha:g}; Monte Carlo SE of a coverage near 0.95: "
        f"{math.sqrt(0.95 * 0.05 / args.datasets):.3f}"
    )
    print(header)
    print("-" * len(header))
    for scenario in SCENARIOS:
        truth = population_values(scenario, args.alpha)
        for n_templates in args.templates:
            cells, cut_share = simulate(
                scenario, n_templates, args.datasets, args.n_boot, args.alpha, args.seed
            )
            for row, by_stat in cells.items():
                (mc, mw), (dc, dw), (sc, sw) = (by_stat[k] for k in ("mean", "std", "sharpe"))
                cut = f"{cut_share:>5.2f}" if row == CUT else f"{'':>5}"
                print(
                    f"{scenario.name:<19} {row:<17} {n_templates:>9} {mc:>9.3f} {mw:>6.3f} "
                    f"{dc:>8.3f} {dw:>6.3f} {sc:>11.3f} {sw:>6.3f} {cut}",
                    flush=True,
                )
        print(
            f"{'':<19} population: mean {truth['mean']:.4f}, std {truth['std']:.4f}, "
            f"Sharpe {truth['sharpe']:.4f} "
            f"({scenario.n_instances} instances, tau_t {scenario.tau_template:g}, "
            f"tau_i {scenario.tau_instance:g})"
        )
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
