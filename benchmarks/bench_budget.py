"""Budgeted multi-template evaluation against the full grid: how far each estimator's
per-template scores, mean, std and Sharpe score land from the full grid's, whether its
95% intervals cover the full-grid value, how wide they are, and whether two models are
ranked as the full grid ranks them. Prints one table per metric family and the goals.

Grids: the real complete grids under `tests/fixtures/grids/` (made by
`make_budget_grids.py` with hakari's own runs) and simulated ones (`budget_grids`).
Budgets are multiples of one template's run (N cells on a T × N grid). Estimators, all
given the same number of cells:

* `hakari`: the balanced design (`hakari.aggregate.budget.design`) and the calibrated
  latent-class multiple imputation with template shrinkage (`...budget.estimate`);
  intervals: `grid` (the full-grid value) and `pop` (the population value, the target of
  a full run's interval);
* `random subset`: every template on B / T random instances, what `--sample` does today,
  with hakari's two-way bootstrap interval (`pop`);
* `random cells`: B cells drawn at random, each template's metric on its own cells;
* `PromptEval`: Polo et al. (2024)'s Rasch-model estimator, reimplemented from the paper
  (logistic regression on one-hot template and example indicators with a weak L2 penalty,
  per-template score = observed cells plus predicted probabilities of the unseen ones; on
  hakari's balanced design, which is PromptEval's least-seen-prompt / least-seen-example
  rule); binary per-item metrics only (accuracy, EM), no intervals.

Errors are absolute, against the full grid's value computed by hakari's scorers; "p95" is
the 95th percentile over all grids × repetitions (× templates for per-template scores).
Coverage is the share of repetitions whose interval contains the full-grid value
(per-template coverage: of repetitions × templates; only hakari gives per-template
intervals). "rank"
is the share of repetitions in which the Sharpe scores of two models on the same cells
are ordered as on the full grid, over the pairs whose full-grid paired Sharpe interval
excludes 0 (n = such repetitions).

    PYTHONPATH=src python benchmarks/bench_budget.py [--reps 20] [--sim-reps 20] [--n-boot 500] \\
        [--no-real | --no-sim] [--budgets 2] [--grids jnli] [--scenarios spread]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

from budget_grids import (
    SCENARIOS,
    FullGrid,
    Scenario,
    describe,
    external_grids,
    population_truth,
    real_grids,
    simulate,
)
from timing import add_smoke_flag

from hakari.aggregate.budget.design import balanced_design
from hakari.aggregate.budget.estimate import estimate as budget_estimate
from hakari.aggregate.intervals import template_statistics
from hakari.aggregate.paired import paired_bootstrap
from hakari.aggregate.resampling import (
    TemplateReplicates,
    draw_replicates,
    statistic_replicates,
)
from hakari.aggregate.scorers import make_scorer

STATS = ("mean", "std", "sharpe")
BUDGETS = (1.0, 2.0, 3.0, 5.0)
ESTIMATORS = ("hakari", "random subset", "random cells", "PromptEval")
ROW_ORDER = (*ESTIMATORS, "full grid")
ACCURACY_TYPE = ("accuracy", "exact_match", "f1")


@dataclass
class Estimate:
    per_template: np.ndarray
    stats: dict[str, float]
    grid_ci: dict[str, tuple[float, float]] | None = None
    pop_ci: dict[str, tuple[float, float]] | None = None
    template_ci: np.ndarray | None = None  # (T, 2) full-grid intervals per template


def stats_of(per_template: np.ndarray, alpha: float) -> dict[str, float]:
    values = template_statistics(per_template[None, :], alpha)
    return {s: float(values[s][0][0]) for s in STATS}


def run_hakari(
    full: FullGrid, mask: np.ndarray, alpha: float, n_boot: int, seed: int, covariates: bool
) -> dict[str, Estimate]:
    observed = full.observed(mask)
    options = {m: full.options(m) for m in full.metrics}
    # levels only when asked for, so that --no-covariates also runs an estimator from
    # before covariates (PYTHONPATH=<older src>): a baseline measured in the same way
    extra = {"template_levels": full.levels} if covariates and full.levels else {}
    estimates, _ = budget_estimate(
        observed,
        full.metrics,
        alpha=alpha,
        n_boot=n_boot,
        seed=seed,
        metric_options=options,
        **extra,
    )
    out = {}
    for metric, est in estimates.items():
        pop = {
            "mean": (est.stats.ci_low, est.stats.ci_high),
            "std": est.std_ci,
            "sharpe": (est.stats.sharpe_ci_low, est.stats.sharpe_ci_high),
        }
        out[metric] = Estimate(
            per_template=np.array([est.per_template[t] for t in full.template_ids]),
            stats={"mean": est.stats.mean, "std": est.stats.std, "sharpe": est.stats.sharpe},
            grid_ci=dict(est.grid_ci),
            pop_ci=pop,  # type: ignore[arg-type]
            template_ci=np.array([est.per_template_ci[t] for t in full.template_ids]),
        )
    return out


def _scorer(full: FullGrid, metric: str, rows: np.ndarray):
    options = full.options(metric)
    if full.kind == "score":
        assert full.item_scores is not None
        return make_scorer(
            metric, [], [None] * rows.size, options, full.item_scores[metric][:, rows]
        )
    preds, refs = full.predictions(rows)
    return make_scorer(metric, [preds[t] for t in full.template_ids], refs, options)


def run_random_subset(
    full: FullGrid, cells: int, alpha: float, n_boot: int, seed: int
) -> dict[str, Estimate]:
    n_templates, n = full.shape
    rng = np.random.default_rng(seed)
    size = min(n, max(2, cells // n_templates))
    rows = np.sort(rng.choice(n, size=size, replace=False))
    out = {}
    for metric in full.metrics:
        scorer = _scorer(full, metric, rows)
        observed = scorer(np.arange(size)[None, :], np.ones((1, size)))[0]
        resampled, every = draw_replicates(scorer, size, n_templates, n_boot, seed)
        reps = TemplateReplicates(full.template_ids, observed, resampled, every, size, seed)
        stat_reps = statistic_replicates(lambda s: template_statistics(s[0], alpha), [reps])
        out[metric] = Estimate(
            per_template=observed,
            stats=stats_of(observed, alpha),
            pop_ci={s: stat_reps[s].interval("studentized", 0.95) for s in STATS},
        )
    return out


def run_random_cells(full: FullGrid, cells: int, alpha: float, seed: int) -> dict[str, Estimate]:
    n_templates, n = full.shape
    rng = np.random.default_rng(seed)
    flat = rng.choice(n_templates * n, size=min(cells, n_templates * n), replace=False)
    cells_flat = np.zeros(n_templates * n, dtype=bool)
    cells_flat[flat] = True
    mask = cells_flat.reshape(n_templates, n)
    out = {}
    for metric in full.metrics:
        per_template = np.empty(n_templates)
        for t in range(n_templates):
            rows = np.flatnonzero(mask[t])
            if rows.size < 2:  # a metric needs two instances; take the template's first two
                rows = np.arange(2)
            per_template[t] = full.template_truth(metric, rows, template=t)
        out[metric] = Estimate(per_template=per_template, stats=stats_of(per_template, alpha))
    return out


def run_prompteval(full: FullGrid, mask: np.ndarray, alpha: float) -> dict[str, Estimate]:
    """Polo et al. (2024), Sec. 3: P(Y_tj = 1) = sigmoid(psi_t + gamma_j), fitted by
    L2-penalised logistic regression on the seen cells (C = 100 as in the paper's code
    defaults), per-template score = (seen Y + predicted p of the unseen) / N."""
    n_templates, n = full.shape
    out = {}
    for metric in full.metrics:
        if metric not in ("accuracy", "exact_match"):
            continue
        if full.kind == "label":
            correct = (full.answers == full.golds[None, :]).astype(float)
        else:
            assert full.item_scores is not None
            correct = full.item_scores[metric]
        t_idx, i_idx = np.nonzero(mask)
        y = correct[t_idx, i_idx]
        features = np.zeros((t_idx.size, n_templates + n - 1))
        features[np.arange(t_idx.size), t_idx] = 1.0
        keep = i_idx < n - 1  # the last example is the reference level
        features[np.flatnonzero(keep), n_templates + i_idx[keep]] = 1.0
        if np.all(y == y[0]):
            prob = np.full((n_templates, n), y[0])
        else:
            model = LogisticRegression(C=100.0, fit_intercept=False, solver="liblinear").fit(
                features, y
            )
            coef = model.coef_[0]
            psi = coef[:n_templates]
            gamma = np.concatenate([coef[n_templates:], [0.0]])
            prob = expit(psi[:, None] + gamma[None, :])
        filled = np.where(mask, correct, prob)
        per_template = filled.mean(axis=1)
        out[metric] = Estimate(per_template=per_template, stats=stats_of(per_template, alpha))
    return out


@dataclass
class Tally:
    """Errors and coverage of one (source, budget, estimator, metric family) row."""

    template_errors: list[float] = field(default_factory=list)
    template_cover: list[bool] = field(default_factory=list)
    template_width: list[float] = field(default_factory=list)
    errors: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    signed: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    grid_cover: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    pop_cover: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    grid_width: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    pop_width: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    rank: list[bool] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    # simulated grids: does the population interval cover the population value
    population_cover: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))

    def add_population(self, est: Estimate, population: dict[str, float]) -> None:
        if est.pop_ci is None:
            return
        for s in STATS:
            low, high = est.pop_ci[s]
            self.population_cover[s].append(low <= population[s] <= high)

    def add(self, est: Estimate, truth_templates: np.ndarray, truth: dict[str, float]) -> None:
        self.template_errors.extend(np.abs(est.per_template - truth_templates).tolist())
        if est.template_ci is not None:
            lows, highs = est.template_ci[:, 0], est.template_ci[:, 1]
            inside = (lows - 1e-12 <= truth_templates) & (truth_templates <= highs + 1e-12)
            self.template_cover.extend(inside.tolist())
            self.template_width.extend((highs - lows).tolist())
        for s in STATS:
            self.errors[s].append(abs(est.stats[s] - truth[s]))
            self.signed[s].append(est.stats[s] - truth[s])
            if est.grid_ci is not None:
                low, high = est.grid_ci[s]
                self.grid_cover[s].append(low - 1e-12 <= truth[s] <= high + 1e-12)
                self.grid_width[s].append(high - low)
            if est.pop_ci is not None:
                low, high = est.pop_ci[s]
                self.pop_cover[s].append(low - 1e-12 <= truth[s] <= high + 1e-12)
                self.pop_width[s].append(high - low)


def family(metric: str) -> str:
    return (
        "accuracy-type (accuracy, EM, F1)"
        if metric in ACCURACY_TYPE
        else "corpus (MCC, Pearson, Spearman)"
    )


Tallies = dict[tuple[str, str, float, str], Tally]  # (family, source, budget, estimator)
# real grids one by one: (grid, metric, budget, estimator)
BY_GRID: dict[tuple[str, str, float, str], Tally] = defaultdict(Tally)


def truth_of(full: FullGrid, alpha: float) -> dict[str, tuple[np.ndarray, dict[str, float]]]:
    out = {}
    for metric in full.metrics:
        per_template = full.template_truth(metric)
        out[metric] = (per_template, stats_of(per_template, alpha))
    return out


def estimate_all(
    full: FullGrid, budget: float, seed: int, args: argparse.Namespace, which: Sequence[str]
) -> dict[str, tuple[dict[str, Estimate], float]]:
    n_templates, n = full.shape
    cells = round(budget * n)
    design = balanced_design(n_templates, full.strata(), seed)
    mask = design.mask(cells)
    runners: dict[str, Callable[[], dict[str, Estimate]]] = {
        "hakari": lambda: run_hakari(
            full, mask, args.alpha, args.n_boot, seed, not args.no_covariates
        ),
        "random subset": lambda: run_random_subset(full, cells, args.alpha, args.n_boot, seed),
        "random cells": lambda: run_random_cells(full, cells, args.alpha, seed),
        "PromptEval": lambda: run_prompteval(full, mask, args.alpha),
    }
    out = {}
    for name in which:
        started = time.perf_counter()
        result = runners[name]()
        out[name] = (result, time.perf_counter() - started)
    return out


def separated(a: FullGrid, b: FullGrid, metric: str, alpha: float, n_boot: int) -> int:
    """+1 / -1 when the full grids' paired Sharpe interval says A / B is better, else 0."""
    if a.kind != "label":
        return 0
    preds_a, refs = a.predictions()
    preds_b, _ = b.predictions()
    (comparison,) = paired_bootstrap(
        {"a": preds_a, "b": preds_b}, refs, metric, alpha=alpha, n_boot=n_boot, seed=0
    )
    verdict = comparison.sharpe.verdict
    return 1 if verdict == "a_better" else -1 if verdict == "b_better" else 0


def full_grid_interval(full: FullGrid, metric: str, alpha: float, n_boot: int) -> Estimate:
    """What a full run reports: hakari's bootstrap on every cell."""
    rows = np.arange(full.shape[1])
    scorer = _scorer(full, metric, rows)
    observed = scorer(rows[None, :], np.ones((1, rows.size)))[0]
    resampled, every = draw_replicates(scorer, rows.size, full.shape[0], n_boot, 0)
    reps = TemplateReplicates(full.template_ids, observed, resampled, every, rows.size, 0)
    stat_reps = statistic_replicates(lambda s: template_statistics(s[0], alpha), [reps])
    return Estimate(
        per_template=observed,
        stats=stats_of(observed, alpha),
        pop_ci={s: stat_reps[s].interval("studentized", 0.95) for s in STATS},
    )


def bench_grids(
    grids: Sequence[FullGrid],
    pairs: Sequence[tuple[int, int]],
    source: str,
    reps: int,
    args: argparse.Namespace,
    tallies: Tallies,
    seed_base: int,
    populations: Sequence[dict[str, dict[str, float]]] | None = None,
) -> None:
    truths = [truth_of(g, args.alpha) for g in grids]
    if populations is not None:
        for g, population in zip(grids, populations, strict=True):
            for metric in g.metrics:
                reference = full_grid_interval(g, metric, args.alpha, args.n_boot)
                tallies[(family(metric), source, math.inf, "full grid")].add_population(
                    reference, population[metric]
                )
    verdicts = {
        (i, j, m): separated(grids[i], grids[j], m, args.alpha, args.n_boot)
        for i, j in pairs
        for m in grids[i].metrics
    }
    for budget in args.budgets:
        for rep in range(reps):
            seed = seed_base + 1000 * rep
            results = [estimate_all(g, budget, seed, args, args.estimators) for g in grids]
            for g, grid_results, truth in zip(grids, results, truths, strict=True):
                for name, (per_metric, seconds) in grid_results.items():
                    for metric, est in per_metric.items():
                        tally = tallies[(family(metric), source, budget, name)]
                        tally.add(est, *truth[metric])
                        tally.seconds.append(seconds)
                        if source != "simulated":
                            BY_GRID[(g.name, metric, budget, name)].add(est, *truth[metric])
                        if populations is not None:
                            tally.add_population(est, populations[grids.index(g)][metric])
            for (i, j, metric), verdict in verdicts.items():
                if verdict == 0:
                    continue
                for name in args.estimators:
                    a = results[i][name][0].get(metric)
                    b = results[j][name][0].get(metric)
                    if a is None or b is None:
                        continue
                    ordered = np.sign(a.stats["sharpe"] - b.stats["sharpe"]) == verdict
                    tallies[(family(metric), source, budget, name)].rank.append(bool(ordered))
        print(
            f"  {source}: budget {budget:g}x done ({len(grids)} grids × {reps} reps)",
            file=sys.stderr,
            flush=True,
        )


def real_pairs(grids: Sequence[FullGrid]) -> list[tuple[int, int]]:
    """Grids of two models on the same task, decoding and cells."""
    out = []
    for i, j in itertools.combinations(range(len(grids)), 2):
        a, b = grids[i], grids[j]
        same = a.name.split(" ", 1)[1] == b.name.split(" ", 1)[1]
        if same and a.shape == b.shape and np.array_equal(a.golds, b.golds):
            out.append((i, j))
    return out


def _q(values: Sequence[float], q: float) -> float:
    return float(np.quantile(values, q)) if len(values) else math.nan


def _signed(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:+.4f}"


def _fmt(value: float, digits: int = 3) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.{digits}f}"
    )


def print_tables(tallies: Tallies, args: argparse.Namespace) -> None:
    header = (
        "| source | budget | estimator | template err med / p95 | mean err med / p95 | "
        "std err med / p95 | std signed err med | Sharpe err med / p95 | "
        "Sharpe signed err med | Sharpe cov grid / pop | "
        "Sharpe CI width grid / pop | mean cov grid / pop | rank (n) | s/fit |"
    )
    for fam in sorted({k[0] for k in tallies}):
        print(f"\n### {fam}\n")
        print(header)
        print("|" + "---|" * 14)
        for (f, source, budget, name), t in sorted(
            tallies.items(), key=lambda kv: (kv[0][1], kv[0][2], ROW_ORDER.index(kv[0][3]))
        ):
            if f != fam or not t.template_errors:
                continue
            cells = [
                source,
                f"{budget:g}x",
                name,
                f"{_fmt(_q(t.template_errors, 0.5))} / {_fmt(_q(t.template_errors, 0.95))}",
            ]
            for s in STATS:
                cells.append(f"{_fmt(_q(t.errors[s], 0.5))} / {_fmt(_q(t.errors[s], 0.95))}")
                if s != "mean":
                    cells.append(_signed(_q(t.signed[s], 0.5)))
            cov = lambda xs: _fmt(float(np.mean(xs)), 2) if xs else "—"  # noqa: E731
            width = lambda xs: _fmt(float(np.mean(xs))) if xs else "—"  # noqa: E731
            cells.append(f"{cov(t.grid_cover['sharpe'])} / {cov(t.pop_cover['sharpe'])}")
            cells.append(f"{width(t.grid_width['sharpe'])} / {width(t.pop_width['sharpe'])}")
            cells.append(f"{cov(t.grid_cover['mean'])} / {cov(t.pop_cover['mean'])}")
            cells.append(f"{cov(t.rank)} ({len(t.rank)})" if t.rank else "—")
            cells.append(_fmt(float(np.mean(t.seconds)), 2))
            print("| " + " | ".join(cells) + " |")


def print_summary(tallies: Tallies) -> None:
    """The compact table the README shows: accuracy-type metrics, the Sharpe score."""
    fam = family("accuracy")
    print(f"\n### Summary: {fam}, Sharpe score\n")
    print(
        "| source | budget | estimator | per-template err med / p95 | per-template cov / width | "
        "Sharpe err med / p95 | std signed err med | Sharpe cov grid / pop | "
        "Sharpe CI width grid / pop | rank agrees (n) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    cov = lambda xs: _fmt(float(np.mean(xs)), 2) if xs else "—"  # noqa: E731
    width = lambda xs: _fmt(float(np.mean(xs))) if xs else "—"  # noqa: E731
    for (f, source, budget, name), t in sorted(
        tallies.items(), key=lambda kv: (kv[0][1], kv[0][2], ROW_ORDER.index(kv[0][3]))
    ):
        if f != fam or not t.template_errors:
            continue
        print(
            f"| {source} | {budget:g}x | {name} | "
            f"{_fmt(_q(t.template_errors, 0.5))} / {_fmt(_q(t.template_errors, 0.95))} | "
            f"{cov(t.template_cover)} / {width(t.template_width)} | "
            f"{_fmt(_q(t.errors['sharpe'], 0.5))} / {_fmt(_q(t.errors['sharpe'], 0.95))} | "
            f"{_signed(_q(t.signed['std'], 0.5))} | "
            f"{cov(t.grid_cover['sharpe'])} / {cov(t.pop_cover['sharpe'])} | "
            f"{width(t.grid_width['sharpe'])} / {width(t.pop_width['sharpe'])} | "
            + (f"{cov(t.rank)} ({len(t.rank)})" if t.rank else "—")
            + " |"
        )


def print_population(tallies: Tallies) -> None:
    rows = [(k, t) for k, t in tallies.items() if t.population_cover]
    if not rows:
        return
    print("\n### Simulated grids: coverage of the population value (a full run's target)\n")
    print("| metrics | budget | estimator | mean | std | Sharpe | n |")
    print("|---|---|---|---|---|---|---|")
    for (fam, _source, budget, name), t in sorted(
        rows, key=lambda kv: (kv[0][0], kv[0][2], ROW_ORDER.index(kv[0][3]))
    ):
        cov = [f"{np.mean(t.population_cover[s]):.2f}" for s in STATS]
        label = "full" if math.isinf(budget) else f"{budget:g}x"
        print(
            f"| {fam} | {label} | {name} | {' | '.join(cov)} | {len(t.population_cover['mean'])} |"
        )


def print_by_grid(budget: float) -> None:
    """The real grids one by one at one budget: where a goal is missed, which grid."""
    rows = [(k, t) for k, t in BY_GRID.items() if k[2] == budget]
    if not rows:
        return
    print(f"\n### Real grids one by one at {budget:g}x\n")
    print(
        "| grid | metric | estimator | template err med / p95 | template cov / width | "
        "Sharpe err med / p95 | std signed err med | Sharpe cov grid / pop | "
        "Sharpe CI width grid / pop |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (grid, metric, _budget, name), t in sorted(
        rows, key=lambda kv: (kv[0][0], kv[0][1], ROW_ORDER.index(kv[0][3]))
    ):
        cov = lambda xs: _fmt(float(np.mean(xs)), 2) if xs else "—"  # noqa: E731
        width = lambda xs: _fmt(float(np.mean(xs))) if xs else "—"  # noqa: E731
        print(
            f"| {grid} | {metric} | {name} | "
            f"{_fmt(_q(t.template_errors, 0.5))} / {_fmt(_q(t.template_errors, 0.95))} | "
            f"{cov(t.template_cover)} / {width(t.template_width)} | "
            f"{_fmt(_q(t.errors['sharpe'], 0.5))} / {_fmt(_q(t.errors['sharpe'], 0.95))} | "
            f"{_signed(_q(t.signed['std'], 0.5))} | "
            f"{cov(t.grid_cover['sharpe'])} / {cov(t.pop_cover['sharpe'])} | "
            f"{width(t.grid_width['sharpe'])} / {width(t.pop_width['sharpe'])} |"
        )


def print_goals(tallies: Tallies) -> None:
    """Issue 25's goals at 2x, accuracy-type metrics, per source."""
    print("\n### Goals at 2x (accuracy-type metrics)\n")
    print(
        "| source | Sharpe err median ≤ 0.012 | Sharpe err p95 ≤ 0.04 | "
        "Sharpe grid coverage ≥ 0.93 (pop) | Sharpe grid CI median width ≤ 0.07 | "
        "std signed err median within ±0.005 | template err vs random subset |"
    )
    print("|---|---|---|---|---|---|---|")
    fam = family("accuracy")
    mark = lambda ok: "met" if ok else "MISSED"  # noqa: E731
    for source in sorted({k[1] for k in tallies}):
        ours = tallies.get((fam, source, 2.0, "hakari"))
        base = tallies.get((fam, source, 2.0, "random subset"))
        if ours is None or not ours.errors["sharpe"]:
            continue
        med, p95 = _q(ours.errors["sharpe"], 0.5), _q(ours.errors["sharpe"], 0.95)
        grid_cov = float(np.mean(ours.grid_cover["sharpe"]))
        pop_cov = float(np.mean(ours.pop_cover["sharpe"])) if ours.pop_cover["sharpe"] else math.nan
        width = _q(ours.grid_width["sharpe"], 0.5)
        signed = _q(ours.signed["std"], 0.5)
        ratio = "—"
        if base is not None:
            ours_err, base_err = _q(ours.template_errors, 0.5), _q(base.template_errors, 0.5)
            ratio = (
                f"{ours_err:.4f} vs {base_err:.4f}: {100 * (1 - ours_err / base_err):.0f}% lower"
            )
        print(
            f"| {source} | {med:.4f} {mark(med <= 0.012)} | {p95:.4f} {mark(p95 <= 0.04)} | "
            f"{grid_cov:.2f} ({pop_cov:.2f}) {mark(grid_cov >= 0.93)} | "
            f"{width:.3f} {mark(width <= 0.07)} | {signed:+.4f} {mark(abs(signed) <= 0.005)} | "
            f"{ratio} |"
        )


def print_features(
    real: Sequence[FullGrid], simulated: Sequence[tuple[Scenario, FullGrid]]
) -> None:
    print("\n### Grids: size and the features the simulation is calibrated on\n")
    print(
        "| grid | source | templates × instances | mean | std over templates | "
        "top-answer share | ICC of correctness |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = [(g.name, g.source, g) for g in real] + [(s.name, "simulated", g) for s, g in simulated]
    for name, source, g in rows:
        f = describe(g)
        print(
            f"| {name} | {source} | {g.shape[0]} × {g.shape[1]} | {f['mean']:.3f} | "
            f"{f['std']:.3f} | {_fmt(f.get('top_answer_share', math.nan), 2)} | "
            f"{_fmt(f.get('icc', math.nan), 2)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reps", type=int, default=20, help="design seeds per real grid and budget"
    )
    parser.add_argument(
        "--sim-reps", type=int, default=20, help="simulated grid pairs per scenario and budget"
    )
    parser.add_argument("--budgets", type=float, nargs="+", default=list(BUDGETS))
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=ESTIMATORS)
    parser.add_argument("--grids", nargs="*", default=None, help="substrings of real grid names")
    parser.add_argument("--scenarios", nargs="*", default=None, help="substrings of scenario names")
    parser.add_argument("--no-real", action="store_true")
    parser.add_argument("--no-sim", action="store_true")
    parser.add_argument(
        "--no-external", action="store_true", help="skip the grids in ../shared/real-grids"
    )
    parser.add_argument(
        "--no-covariates", action="store_true", help="do not give hakari the template levels"
    )
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--n-boot", type=int, default=500)
    parser.add_argument(
        "--skill-gap", type=float, default=0.3, help="skill shift of model B in simulations"
    )
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:  # one real grid, one scenario, one budget, one repetition each
        args.reps, args.sim_reps, args.budgets, args.n_boot = 1, 1, [2.0], 40
        args.grids, args.scenarios = args.grids or ["demo_sentiment_en__greedy"], ["tiny"]
    started = time.perf_counter()
    tallies: Tallies = defaultdict(Tally)
    real = [] if args.no_real else real_grids(args.grids)
    if real:
        bench_grids(real, real_pairs(real), "real", args.reps, args, tallies, seed_base=1)
    external = [] if args.no_external else external_grids(args.grids)
    if external:
        pairs = real_pairs(external)
        bench_grids(external, pairs, "external", args.reps, args, tallies, seed_base=1)
    shown: list[tuple[Scenario, FullGrid]] = []
    if not args.no_sim:
        scenarios = [
            s for s in SCENARIOS if not args.scenarios or any(x in s.name for x in args.scenarios)
        ]
        for k, scenario in enumerate(scenarios):
            populations = [
                population_truth(scenario, args.alpha),
                population_truth(scenario, args.alpha, shift=args.skill_gap),
            ]
            for rep in range(args.sim_reps):
                rng = np.random.default_rng([k, rep])
                a, inst = simulate(scenario, rng)
                b, _ = simulate(scenario, rng, shift=args.skill_gap, instance=inst)
                if rep == 0:
                    shown.append((scenario, a))
                bench_grids([a, b], [(0, 1)], "simulated", 1, args, tallies, 7 + rep, populations)
    sources = (
        [] if args.no_real and not external else [f"{args.reps} design seeds per real grid"]
    ) + ([] if args.no_sim else [f"{args.sim_reps} simulated grid pairs per scenario"])
    print(
        f"Budgeted estimation against the full grid; alpha {args.alpha:g}, n_boot {args.n_boot}, "
        + ", ".join(sources)
    )
    print_features([*real, *external], shown)
    print_summary(tallies)
    print_tables(tallies, args)
    print_population(tallies)
    print_by_grid(2.0)
    print_goals(tallies)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
