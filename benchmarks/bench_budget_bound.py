"""Where the budgeted Sharpe error comes from, and how small it can get: on each complete
0/1 grid (the external MMLU grids under ../shared/real-grids, and the project's own score
grids), at a budget of k × one template's run on hakari's balanced design:

* **decomposition** of hakari's Sharpe error (Sharpe = mean / (alpha·std + 1)) into the
  part its mean alone causes (the estimate's mean with the full grid's std) and the part
  its std alone causes (the full grid's mean with the estimate's std);
* **the additive floor** of the mean: on the balanced design every instance is seen k
  times and every template about k·N/T times, so the template and instance main effects
  cancel from the mean of the cells run, and its error is the mean of the run cells'
  template × instance interactions (the residuals of the two-way additive fit of the full
  grid). Its error over many design seeds is what any estimator gets whose prediction of
  an unseen cell is additive in a template and an instance effect; the Sharpe error with
  that mean and the full grid's *exact* std is the floor for such an estimator, and
  `3.92 · SE / (alpha·std + 1)` the width of a 95% interval that knows the std;
* **what could lower it**: the share of the interaction variance that a Rasch model
  (template + instance effects on the logit, fitted to the full grid: the most an additive
  logistic imputation could learn) and a template level × instance term (for each
  dimension of the templates' space, the mean interaction of the other templates with the
  same level, leave-one-out) explain. A share s lowers the floor's SE by at most
  1 − sqrt(1 − s), and only with those effects known, not estimated from k cells per
  instance.

    PYTHONPATH=src python benchmarks/bench_budget_bound.py [--reps 20] [--designs 300]
        [--budget 2] [--no-hakari] [--grids 0.5B]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

from budget_grids import FullGrid, external_grids, real_grids
from timing import add_smoke_flag, skip

from hakari.aggregate.budget.design import balanced_design
from hakari.aggregate.budget.estimate import estimate


def sharpe(mean: float, std: float, alpha: float) -> float:
    return mean / (alpha * std + 1.0)


def binary_grids(names: list[str] | None) -> list[tuple[FullGrid, str, np.ndarray]]:
    """(grid, metric, its 0/1 item scores (T, N)) of every grid with a 0/1 metric: the
    score grids whose metric is 0/1 (the external ones), and the label grids' accuracy
    (the project's own)."""
    out = []
    for g in external_grids(names) + real_grids(names):
        if g.kind == "label" and "accuracy" in g.metrics:
            out.append((g, "accuracy", (g.answers == g.golds[None, :]).astype(float)))
        elif g.item_scores is not None and len(g.metrics) == 1:
            values = g.item_scores[g.metrics[0]].astype(float)
            if np.all(np.isin(values, (0.0, 1.0))):
                out.append((g, g.metrics[0], values))
    return out


def interaction(y: np.ndarray) -> np.ndarray:
    """The residuals of the two-way additive fit (double centring) of a complete grid."""
    return y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()


def rasch_share(y: np.ndarray) -> float:
    """Share of the interaction variance a Rasch model fitted to the full grid explains."""
    n_t, n_i = y.shape
    rows = np.arange(n_t * n_i)
    x = np.zeros((n_t * n_i, n_t + n_i))
    x[rows, np.repeat(np.arange(n_t), n_i)] = 1.0
    x[rows, n_t + np.tile(np.arange(n_i), n_t)] = 1.0
    if np.unique(y).size < 2:
        return 0.0
    fit = LogisticRegression(C=10.0, max_iter=2000).fit(x, y.ravel())
    p = fit.predict_proba(x)[:, 1].reshape(n_t, n_i)
    return 1.0 - float((y - p).var() / max(interaction(y).var(), 1e-300))


def level_shares(full: FullGrid, e: np.ndarray) -> dict[str, float]:
    """Per dimension: the share of the interaction variance that the leave-one-out mean
    interaction of the templates sharing a level explains (best scalar weight)."""
    if not full.levels:
        return {}
    out = {}
    for dim in sorted(next(iter(full.levels.values()))):
        level = np.array([full.levels[t][dim] for t in full.template_ids])
        pred = np.zeros_like(e)
        for value in np.unique(level):
            idx = np.flatnonzero(level == value)
            if idx.size > 1:
                pred[idx] = (e[idx].sum(axis=0)[None, :] - e[idx]) / (idx.size - 1)
        denom = float((pred * pred).sum())
        weight = float((pred * e).sum()) / denom if denom > 0 else 0.0
        out[dim] = 1.0 - float(((e - weight * pred) ** 2).mean() / max(e.var(), 1e-300))
    return out


def additive_se(y: np.ndarray, mask: np.ndarray) -> float:
    """The design-based standard error of the mean of the run cells, from the run cells
    alone: the residual variance of their two-way additive least-squares fit (degrees of
    freedom: cells less the fit's rank), over the cells run, with the finite-grid
    correction; NaN when the fit leaves no degree of freedom (each instance seen once)."""
    t, i = np.nonzero(mask)
    x = np.zeros((t.size, y.shape[0] + y.shape[1]))
    x[np.arange(t.size), t] = 1.0
    x[np.arange(t.size), y.shape[0] + i] = 1.0
    coef, _, rank, _ = np.linalg.lstsq(x, y[t, i], rcond=None)
    df = t.size - rank
    if df <= 0:
        return float("nan")
    residual = y[t, i] - x @ coef
    return float(np.sqrt(residual @ residual / df / t.size * (1.0 - t.size / y.size)))


def floor_row(
    full: FullGrid, y: np.ndarray, budget: float, designs: int, alpha: float
) -> tuple[dict[str, float], list[float]]:
    n_t, n_i = y.shape
    truth = y.mean(axis=1)
    mean, std = float(truth.mean()), float(truth.std())
    cells = round(budget * n_i)
    e = interaction(y)
    errors, sharpe_errors, covered, widths = [], [], [], []
    for seed in range(designs):
        mask = balanced_design(n_t, full.strata(), 10_000 + seed).mask(cells)
        run_mean = float(y[mask].mean())
        se_hat = additive_se(y, mask)
        covered.append(abs(run_mean - mean) <= 1.96 * se_hat)
        widths.append(3.92 * se_hat / (alpha * std + 1.0))
        errors.append(abs(run_mean - mean))
        sharpe_errors.append(abs(sharpe(run_mean, std, alpha) - sharpe(mean, std, alpha)))
    se = float(np.sqrt(e.var() / cells * (1.0 - cells / y.size)))
    return {
        "interaction var": float(e.var()),
        "SE": se,
        "mean med": float(np.median(errors)),
        "mean p95": float(np.quantile(errors, 0.95)),
        "sharpe med": float(np.median(sharpe_errors)),
        "sharpe p95": float(np.quantile(sharpe_errors, 0.95)),
        "width": 3.92 * se / (alpha * std + 1.0),
        "design coverage": float(np.mean(covered)),
        "design width": float(np.median(widths)),
        "rasch": rasch_share(y),
        **{f"level:{k}": v for k, v in level_shares(full, e).items()},
    }, sharpe_errors


def hakari_errors(
    full: FullGrid, metric: str, budget: float, reps: int, alpha: float
) -> np.ndarray:
    """(reps, 4): hakari's signed mean error, std error, Sharpe error with its mean alone,
    Sharpe error with its std alone, Sharpe error; seeds as bench_budget's (1 + 1000 r)."""
    truth = full.template_truth(metric)
    mean, std = float(truth.mean()), float(truth.std())
    n_t, n_i = full.shape
    rows = []
    for rep in range(reps):
        seed = 1 + 1000 * rep
        mask = balanced_design(n_t, full.strata(), seed).mask(round(budget * n_i))
        extra = {"template_levels": full.levels} if full.levels else {}
        est, _ = estimate(
            full.observed(mask),
            [metric],
            alpha=alpha,
            n_boot=0,
            seed=seed,
            metric_options={metric: full.options(metric)},
            **extra,
        )
        m, s = est[metric].stats.mean, est[metric].stats.std
        exact = sharpe(mean, std, alpha)
        rows.append(
            (
                m - mean,
                s - std,
                sharpe(m, std, alpha) - exact,
                sharpe(mean, s, alpha) - exact,
                est[metric].stats.sharpe - exact,
            )
        )
    return np.array(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20, help="design seeds of hakari's fits")
    parser.add_argument("--designs", type=int, default=300, help="design seeds of the floor")
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--grids", nargs="*", default=None, help="substrings of grid names")
    parser.add_argument("--no-hakari", action="store_true", help="the floor only (no fits)")
    add_smoke_flag(parser)
    args = parser.parse_args()
    grids = binary_grids(args.grids)
    if not grids:
        skip("no complete 0/1 grid (the external ones are under ../shared/real-grids)")
    if args.smoke:
        args.reps, args.designs, grids = 1, 5, grids[:1]
    print(f"### Sharpe error at {args.budget:g}x: the additive floor and hakari's, by part\n")
    print(
        "| grid | source | interaction var | floor mean err med / p95 | floor Sharpe err "
        "med / p95 | floor 95% width | Rasch share | best level share | hakari mean err "
        "med | hakari Sharpe err med / p95 | of it: mean alone / std alone (med) | additive "
        "interval of the mean: coverage / Sharpe width |"
    )
    print("|---" * 12 + "|")
    pooled: dict[tuple[str, str], list[float]] = defaultdict(list)  # (source, what)
    for full, metric, y in grids:
        row, floor_errors = floor_row(full, y, args.budget, args.designs, args.alpha)
        pooled[(full.source, "floor")].extend(floor_errors)
        levels = {k[6:]: v for k, v in row.items() if k.startswith("level:")}
        best = max(levels.items(), key=lambda kv: kv[1]) if levels else None
        cells = [
            full.name,
            full.source,
            f"{row['interaction var']:.4f}",
            f"{row['mean med']:.4f} / {row['mean p95']:.4f}",
            f"{row['sharpe med']:.4f} / {row['sharpe p95']:.4f}",
            f"{row['width']:.3f}",
            f"{row['rasch']:.2f}",
            f"{best[0]} {best[1]:.2f}" if best else "—",
        ]
        pooled[(full.source, "width")].append(row["width"])
        if args.no_hakari:
            cells += ["—", "—", "—"]
        else:
            h = hakari_errors(full, metric, args.budget, args.reps, args.alpha)
            a = np.abs(h)
            pooled[(full.source, "hakari")].extend(a[:, 4])
            cells += [
                f"{np.median(a[:, 0]):.4f}",
                f"{np.median(a[:, 4]):.4f} / {np.quantile(a[:, 4], 0.95):.4f}",
                f"{np.median(a[:, 2]):.4f} / {np.median(a[:, 3]):.4f}",
            ]
        cells.append(f"{row['design coverage']:.2f} / {row['design width']:.3f}")
        print("| " + " | ".join(cells) + " |", flush=True)
    print()
    for source in sorted({g.source for g, _, _ in grids}):
        f = np.array(pooled[(source, "floor")])
        width = np.median(pooled[(source, "width")])
        line = (
            f"{source}: floor Sharpe err median {np.median(f):.4f}, p95 "
            f"{np.quantile(f, 0.95):.4f}, 95% width median {width:.3f}"
        )
        h = np.array(pooled[(source, "hakari")])
        if h.size:
            line += f"; hakari median {np.median(h):.4f}, p95 {np.quantile(h, 0.95):.4f}"
        print(line)


if __name__ == "__main__":
    main()
