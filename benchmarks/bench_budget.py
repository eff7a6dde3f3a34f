"""Budgeted multi-template evaluation against the full grid: how far each estimator's
per-template scores, mean, std and Sharpe score land from the full grid's, whether its
95% intervals cover the full-grid value, how wide they are, and whether two models are
ranked as the full grid ranks them. Prints one table per metric family and the goals.

Grids (`budget_grids`): the real complete grids under `tests/fixtures/grids/` (made by
`make_budget_grids.py` with hakari's own runs), the external ones under
`../shared/real-grids`, simulated ones, the skill-server grids of issue 38 (a stub that
answers JMMLU marketing's first 40 questions under 20 templates, right with probability
0.9, 0.6 or 0.3 shifted per template, by the hash of the prompt: source `skill 0.9` ...)
and the fake grids of the hostile rounds (the demo task, 6 × 32, answered by the hash of
the prompt: source `fake`). hakari's rows say which estimator it used
(`budget.estimator.metrics`: the imputation, or the design-weighted cell mean where the
imputation does not fit), and the skill and fake grids' table gives the mean error of the
design-weighted mean of the cells run beside hakari's.
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
        [--no-real | --no-sim | --no-external | --no-skill | --no-fake] [--budgets 2]
        [--grids jnli] [--scenarios spread] [--skills 0.9 0.6 0.3] [--skill-grids 1]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

from budget_grids import (
    SCENARIOS,
    SKILL_LEVELS,
    FullGrid,
    Scenario,
    SkillServer,
    external_grids,
    fake_grid,
    population_truth,
    real_grids,
    simulate,
    skill_grid,
)
from budget_tables import (
    BY_GRID,
    ESTIMATORS,
    STATS,
    Estimate,
    Tallies,
    Tally,
    family,
    print_by_grid,
    print_features,
    print_goals,
    print_population,
    print_skill,
    print_summary,
    print_tables,
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

BUDGETS = (1.0, 2.0, 3.0, 5.0)


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
    estimates, completion = budget_estimate(
        observed,
        full.metrics,
        alpha=alpha,
        n_boot=n_boot,
        seed=seed,
        metric_options=options,
        **extra,
    )
    # which estimator made each metric's numbers (estimators before version 4: the
    # imputation, always)
    chosen = getattr(completion, "estimators", {})
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
            plain_mean=cells_run_mean(full, metric, mask),
            used=chosen[metric].used if metric in chosen else "imputation",
        )
    return out


def cells_run_mean(full: FullGrid, metric: str, mask: np.ndarray) -> float | None:
    """The design-weighted mean of the cells run (the yardstick of issue 38): each
    instance's mean over its cells, averaged per stratum, the strata weighted by their
    share of the instances; None for a metric that is not a mean of item scores."""
    if metric not in ("accuracy", "exact_match", "f1"):
        return None
    if full.kind == "label":
        scores = (full.answers == full.golds[None, :]).astype(float)
    else:
        assert full.item_scores is not None
        scores = full.item_scores[metric]
    run = mask.sum(axis=0)
    per_instance = np.where(mask, scores, 0.0).sum(axis=0) / np.maximum(run, 1)
    strata = full.strata()
    total = 0.0
    for s in np.unique(strata):
        members = (strata == s) & (run > 0)
        total += float(np.mean(strata == s)) * float(per_instance[members].mean())
    return total


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
                        if source in ("real", "external"):
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
    parser.add_argument(
        "--no-skill", action="store_true", help="skip the skill-server grids (issue 38)"
    )
    parser.add_argument("--skills", type=float, nargs="+", default=list(SKILL_LEVELS))
    parser.add_argument(
        "--skill-grids", type=int, default=1, help="stub servers (salts) per skill level"
    )
    parser.add_argument("--no-fake", action="store_true", help="skip the fake 6 × 32 grids")
    parser.add_argument("--fake-grids", type=int, default=10, help="salts of the fake stub")
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
        args.skills, args.skill_grids, args.no_fake = args.skills[:1], 1, True
    started = time.perf_counter()
    tallies: Tallies = defaultdict(Tally)
    real = [] if args.no_real else real_grids(args.grids)
    if real:
        bench_grids(real, real_pairs(real), "real", args.reps, args, tallies, seed_base=1)
    external = [] if args.no_external else external_grids(args.grids)
    if external:
        pairs = real_pairs(external)
        bench_grids(external, pairs, "external", args.reps, args, tallies, seed_base=1)
    for skill in [] if args.no_skill else args.skills:
        grids = [skill_grid(SkillServer(skill), salt) for salt in range(args.skill_grids)]
        bench_grids(grids, [], f"skill {skill:g}", args.reps, args, tallies, seed_base=1)
    if not args.no_fake:
        grids = [fake_grid(salt) for salt in range(args.fake_grids)]
        bench_grids(grids, [], "fake", args.reps, args, tallies, seed_base=1)
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
    if not args.no_skill:
        sources.append(f"{args.skill_grids} skill server(s) per skill level × {args.reps} seeds")
    if not args.no_fake:
        sources.append(f"{args.fake_grids} fake stub grids × {args.reps} seeds")
    print(
        f"Budgeted estimation against the full grid; alpha {args.alpha:g}, n_boot {args.n_boot}, "
        + ", ".join(sources)
    )
    print_features([*real, *external], shown)
    print_summary(tallies)
    print_tables(tallies, args)
    print_population(tallies)
    print_by_grid(2.0)
    print_skill(tallies)
    print_goals(tallies)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
