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
split where the template spread is the main uncertainty) and "instances dominate"
(100 instances, tau_t 0.3, tau_i 1.5: a small `--limit` run).

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_ci_coverage.py [--datasets 400]
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from hakari.aggregate.intervals import CI_METHODS
from hakari.aggregate.resampling import replicate_statistics


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
]


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
    return {"mean": mu, "sharpe": mu / (alpha * sigma + 1.0)}


def simulate(
    s: Scenario, n_templates: int, datasets: int, n_boot: int, alpha: float, seed: int
) -> dict[str, dict[str, tuple[float, float]]]:
    """method -> statistic -> (coverage, mean width)."""
    truth = population_values(s, alpha)
    rng = np.random.default_rng(seed)
    hits = {m: {k: 0 for k in truth} for m in CI_METHODS}
    widths = {m: {k: 0.0 for k in truth} for m in CI_METHODS}
    references = [1] * s.n_instances
    for d in range(datasets):
        u = rng.normal(0.0, s.tau_template, n_templates)
        v = rng.normal(0.0, s.tau_instance, s.n_instances)
        correct = rng.random((n_templates, s.n_instances)) < expit(s.intercept + u[:, None] + v)
        predictions = {f"{t}-0": row.astype(int).tolist() for t, row in enumerate(correct)}
        _, reps = replicate_statistics(
            predictions, references, "accuracy", alpha=alpha, n_boot=n_boot, seed=seed + d
        )
        for method in CI_METHODS:
            for stat, value in truth.items():
                low, high = reps[stat].interval(method, 0.95)
                hits[method][stat] += int(low <= value <= high)
                widths[method][stat] += high - low
    return {
        m: {k: (hits[m][k] / datasets, widths[m][k] / datasets) for k in truth} for m in CI_METHODS
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=400, help="simulated data sets per cell")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--templates", type=int, nargs="+", default=[8, 12, 14, 18])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    header = (
        f"{'scenario':<19} {'method':<12} {'templates':>9} {'mean cov':>9} {'mean width':>11} "
        f"{'Sharpe cov':>11} {'Sharpe width':>13}"
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
            cells = simulate(
                scenario, n_templates, args.datasets, args.n_boot, args.alpha, args.seed
            )
            for method, by_stat in cells.items():
                (mc, mw), (sc, sw) = by_stat["mean"], by_stat["sharpe"]
                print(
                    f"{scenario.name:<19} {method:<12} {n_templates:>9} {mc:>9.3f} {mw:>11.3f} "
                    f"{sc:>11.3f} {sw:>13.3f}",
                    flush=True,
                )
        print(
            f"{'':<19} population: mean {truth['mean']:.4f}, Sharpe {truth['sharpe']:.4f} "
            f"({scenario.n_instances} instances, tau_t {scenario.tau_template:g}, "
            f"tau_i {scenario.tau_instance:g})"
        )
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
