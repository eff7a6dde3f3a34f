"""Estimates and intervals from a partly observed grid: every metric computed as usual on
multiply imputed grids, the imputation carried into the two-way bootstrap.

Given an `AnswerGrid` with missing cells, `completion.impute` draws M completed grids from
the posterior predictive of the completion model. On each completed grid m every metric
of every template is computed by hakari's own scorers (`aggregate.scorers`), corpus-level
ones (MCC, Pearson, Spearman) included, so no metric needs its own estimator.

Two intervals per statistic, for two questions:

* **the full grid** (`grid_ci`): what the full run on the same templates and instances
  would have reported. The statistic on each completed grid is a posterior draw of that
  value; the interval is the equal-tailed quantiles of the M draws, and the point
  estimate their mean (for the Sharpe score too, so an estimated Sharpe can differ from
  mean / (alpha std + 1) of the estimated mean and std in the last digits). With no
  missing cell every draw is the observed grid and the interval has width 0.
* **the populations** (`ci`, the same target as a full run's `ci_low`/`ci_high`, see
  `intervals`): replicate b of the templates × instances bootstrap is scored on completed
  grid b mod M, so the replicates vary with the imputation as well as with the resampling;
  the instance part of the studentised standard error (the variance of the instance-only
  replicates) then holds the between-imputation variance too, which is Rubin's total
  variance with a bootstrap-t reference distribution in place of the normal one.
  The replicate draws come from the same generator sequence as `resampling.bootstrap`,
  so with no missing cell these intervals are exactly the full run's.

The decision a reader must know: the point estimates are posterior means over the
imputations, not the metric of one "best" completed grid, so every number (and the
spread of the draws) reflects the model's uncertainty about the unseen cells.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hakari._util import checks
from hakari.aggregate.budget.completion import ModelChoice, impute
from hakari.aggregate.budget.covariates import covariate_design
from hakari.aggregate.budget.grid import AnswerGrid
from hakari.aggregate.budget.records import EstimatorRecord
from hakari.aggregate.budget.shrinkage import template_shrinkage
from hakari.aggregate.intervals import (
    DEFAULT_CI_METHOD,
    STATISTICS,
    Interval,
    Replicates,
    difference_bounds,
    statistic_bounds,
    template_se,
    template_statistics,
)
from hakari.aggregate.paired import PairedComparison, PairedStatistic, verdict_of
from hakari.aggregate.scorers import make_scorer, multiplicities
from hakari.aggregate.summary import AggregateStats, sharpe_caveat
from hakari.scoring import corpus
from hakari.scoring.corpus import ReplicateScorer

ESTIMATOR_NAME = "latent-class multiple imputation"
ESTIMATOR_VERSION = 3
DEFAULT_DRAWS = 100
# The chunking of `resampling.draw_replicates` (same generator calls, same replicates).
_CHUNK_CELLS = 1 << 21

StatisticFn = Callable[[Sequence[np.ndarray]], dict[str, tuple[np.ndarray, np.ndarray]]]


@dataclass(frozen=True, eq=False)
class ImputedScores:
    """One model's template scores for one metric, on imputed grids.

    `draws[m]` are the T template scores on completed grid m; `resampled[b]` and
    `every[b]` those of bootstrap replicate b (resampled templates, resp. all templates,
    on its resampled instances), scored on completed grid b mod M. `unshrunk` are the
    draws before the template shrinkage (the same as `draws` without it).
    """

    template_ids: tuple[str, ...]
    draws: np.ndarray
    resampled: np.ndarray
    every: np.ndarray
    n_instances: int
    seed: int
    unshrunk: np.ndarray | None = None

    @property
    def draw_key(self) -> tuple[tuple[str, ...], int, int, int]:
        return self.template_ids, self.n_instances, len(self.resampled), self.seed


@dataclass(frozen=True, eq=False)
class StatisticDraws:
    """One statistic: its population replicates and its posterior draws on the grid."""

    replicates: Replicates
    grid_draws: np.ndarray

    def grid_interval(self, confidence: float) -> tuple[float, float]:
        tail = (1.0 - confidence) / 2.0
        low, high = np.quantile(self.grid_draws, [tail, 1.0 - tail])
        return float(low), float(high)


@dataclass(frozen=True, eq=False)
class BudgetEstimate:
    """The estimates of one model × task × decoding × metric from a partly observed grid."""

    metric: str
    stats: AggregateStats  # posterior means, population and full-grid intervals, marked
    per_template: dict[str, float]
    per_template_ci: dict[str, tuple[float, float]]  # full-grid intervals
    std_ci: tuple[float | None, float | None]  # (None, None) without a bootstrap
    grid_ci: dict[str, tuple[float, float]]  # mean / std / sharpe: full-grid intervals
    statistics: dict[str, StatisticDraws]
    scores: ImputedScores
    confidence: float
    ci_method: str
    n_boot: int
    seed: int


@dataclass(frozen=True, eq=False)
class Completion:
    """The imputed grids of one model × task × decoding and the model that drew them."""

    grid: AnswerGrid
    codes: np.ndarray  # (M, T, N)
    values: list[np.ndarray | None]
    model: ModelChoice
    held_out: dict[str, float] = field(default_factory=dict)

    @property
    def n_draws(self) -> int:
        return int(self.codes.shape[0])

    def record(self) -> EstimatorRecord:
        return EstimatorRecord(
            name=ESTIMATOR_NAME,
            version=ESTIMATOR_VERSION,
            model=self.model.label,
            held_out_log_score=dict(self.held_out),
            imputations=self.n_draws,
            cells_observed=int(self.grid.observed.sum()),
        )


def complete(grid: AnswerGrid, *, n_draws: int = DEFAULT_DRAWS, seed: int = 0) -> Completion:
    """Draw `n_draws` completed grids (codes, and donor values where the kind needs them)."""
    codes, choice, held_out = impute(grid.coded, n_draws, seed)
    rng = np.random.default_rng([seed, 1])
    values = [grid.complete_values(codes[m], rng) for m in range(n_draws)]
    return Completion(grid, codes, values, choice, held_out)


def _label_item_table(grid: AnswerGrid, metric: str, options: Mapping[str, Any]) -> np.ndarray:
    """(K, N): the item score of answering label k on instance i."""
    rows = [
        corpus.per_item_scores(metric, [label] * grid.n_instances, grid.references, **options)
        for label in grid.labels
    ]
    return np.vstack([np.asarray(r, dtype=np.float64) for r in rows if r is not None])


def draw_scorers(
    completion: Completion, metric: str, options: Mapping[str, Any]
) -> tuple[np.ndarray, list[ReplicateScorer]]:
    """The template scores on every completed grid (M, T) and each grid's scorer."""
    grid = completion.grid
    n = grid.n_instances
    identity = np.arange(n)[None, :]
    ones = np.ones((1, n))
    per_item = corpus.get(metric).per_item
    table = _label_item_table(grid, metric, options) if grid.kind == "label" and per_item else None
    scores = np.empty((completion.n_draws, grid.n_templates))
    scorers: list[ReplicateScorer] = []
    for m in range(completion.n_draws):
        codes = completion.codes[m]
        values = completion.values[m]
        if grid.kind == "label":
            if table is not None:
                items = table[codes, np.arange(n)[None, :]]
                scorer = make_scorer(metric, [], grid.references, options, items)
            else:
                refs = grid.gold_codes.tolist()
                scorer = make_scorer(metric, [row.tolist() for row in codes], refs, options)
        elif grid.kind == "score":
            assert values is not None
            items = values[:, :, grid.value_names.index(metric)]
            scorer = make_scorer(metric, [], grid.references, options, items)
        else:
            assert values is not None
            scorer = make_scorer(metric, list(values[:, :, 0]), grid.references, options)
        scores[m] = scorer(identity, ones)[0]
        scorers.append(scorer)
    return scores, scorers


def imputed_replicates(
    scorers: Sequence[ReplicateScorer], n_instances: int, n_templates: int, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(every, picked): the scores of all templates on each bootstrap replicate's
    resampled instances (replicate b scored by `scorers[b % M]`) and the templates each
    replicate draws; the draws are those of `resampling.draw_replicates`."""
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n_instances)
    n_draws = len(scorers)
    every = np.empty((n_boot, n_templates))
    picked = np.empty((n_boot, n_templates), dtype=np.int64)
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        idx = rng.integers(0, n_instances, size=(b, n_instances))
        picked[start : start + b] = rng.integers(0, n_templates, size=(b, n_templates))
        counts = multiplicities(idx, n_instances)
        which = (start + np.arange(b)) % n_draws
        for m in np.unique(which):
            rows = np.flatnonzero(which == m)
            every[start + rows] = scorers[int(m)](idx[rows], counts[rows])
    return every, picked


def imputed_scores(
    completion: Completion,
    metric: str,
    *,
    n_boot: int,
    seed: int,
    options: Mapping[str, Any],
    shrink: bool = True,
    levels: Mapping[str, Mapping[str, str]] | None = None,
) -> ImputedScores:
    """One metric's template scores on the imputations and on the bootstrap replicates,
    shrunk per `TemplateShrinkage` unless `shrink` is False."""
    draws, scorers = draw_scorers(completion, metric, options)
    grid = completion.grid
    every, picked = imputed_replicates(scorers, grid.n_instances, grid.n_templates, n_boot, seed)
    unshrunk = draws
    if shrink:
        design = covariate_design(grid.template_ids, levels)
        shares = grid.observed.mean(axis=1)  # each template's share of the instances run
        shrinkage = template_shrinkage(draws, np.random.default_rng([seed, 2]), design, shares)
        draws = shrinkage.apply(draws, np.arange(len(draws)))
        every = shrinkage.apply(every, np.arange(n_boot) % len(scorers))
    resampled = np.take_along_axis(every, picked, axis=1)
    return ImputedScores(
        grid.template_ids, draws, resampled, every, grid.n_instances, seed, unshrunk
    )


def statistic_draws(
    statistic: StatisticFn, models: Sequence[ImputedScores]
) -> dict[str, StatisticDraws]:
    """Mean, std and Sharpe (as `statistic` defines them over the models' template
    scores): posterior draws on the grid and population replicates.

    The point is the mean over the imputations; its template standard error the root
    mean square over the imputations of the delta-method one."""
    on_draws = statistic([m.draws for m in models])
    on_resampled = statistic([m.resampled for m in models])
    on_every = statistic([m.every for m in models])  # empty without a bootstrap
    out: dict[str, StatisticDraws] = {}
    for s in STATISTICS:
        values, influence = on_draws[s]
        reps = Replicates(
            point=float(values.mean()),
            point_se=float(np.sqrt(np.mean(template_se(influence) ** 2))),
            values=on_resampled[s][0],
            values_se=template_se(on_resampled[s][1]),
            instance_values=on_every[s][0],
        )
        out[s] = StatisticDraws(reps, values)
    return out


def summarise(
    metric: str,
    scores: ImputedScores,
    *,
    alpha: float,
    confidence: float,
    ci_method: str,
    n_boot: int,
    seed: int,
) -> BudgetEstimate:
    """Point estimates, population and full-grid intervals of one metric."""
    stats = statistic_draws(lambda s: template_statistics(s[0], alpha), [scores])
    tail = (1.0 - confidence) / 2.0
    draws = scores.draws
    per_template = {
        t: float(v) for t, v in zip(scores.template_ids, draws.mean(axis=0), strict=True)
    }
    # A template's interval is the union of its shrunk and unshrunk intervals: the
    # shrinkage keeps imputation noise out of the spread over templates, but it pulls an
    # outlying template towards the others; alone it gave per-template intervals that
    # covered the full grid's value 0.73 of the time at 3x on the real grids (nominal 0.95).
    lows, highs = np.quantile(draws, [tail, 1.0 - tail], axis=0)
    if scores.unshrunk is not None:
        raw_lows, raw_highs = np.quantile(scores.unshrunk, [tail, 1.0 - tail], axis=0)
        lows, highs = np.minimum(lows, raw_lows), np.maximum(highs, raw_highs)
    # every interval is cut to its quantity's range, as a full run's (`intervals`)
    value_range = corpus.get(metric).value_range
    lows, highs = np.clip(lows, *value_range), np.clip(highs, *value_range)
    per_template_ci = {
        t: (float(lo), float(hi))
        for t, lo, hi in zip(scores.template_ids, lows, highs, strict=True)
    }
    bounds = statistic_bounds(value_range)
    population = {
        s: stats[s].replicates.bounded(ci_method, confidence, bounds[s])
        for s in (STATISTICS if n_boot > 0 else ())
    }
    ci: dict[str, tuple[float | None, float | None]] = {
        s: population[s].pair if s in population else (None, None) for s in STATISTICS
    }
    on_grid = {
        s: Interval.within(*stats[s].grid_interval(confidence), bounds[s]) for s in STATISTICS
    }
    grid_ci = {s: on_grid[s].pair for s in STATISTICS}
    clipped = [f"{s}_{end}" for s in population for end in population[s].clipped]
    clipped += [f"{s}_grid_{end}" for s in STATISTICS for end in on_grid[s].clipped]
    q10, median, q90 = (float(q) for q in np.quantile(draws, [0.1, 0.5, 0.9], axis=1).mean(axis=1))
    low, high = float(draws.min(axis=1).mean()), float(draws.max(axis=1).mean())
    mean = stats["mean"].replicates.point
    with_bootstrap: dict[str, Any] = {}
    if n_boot > 0:
        with_bootstrap = {
            "ci_low": ci["mean"][0],
            "ci_high": ci["mean"][1],
            "sharpe_ci_low": ci["sharpe"][0],
            "sharpe_ci_high": ci["sharpe"][1],
            "std_ci_low": ci["std"][0],
            "std_ci_high": ci["std"][1],
            "n_boot": n_boot,
            "confidence": confidence,
            "seed": seed,
            "ci_method": ci_method,
        }
    aggregate = AggregateStats(
        mean=mean,
        std=stats["std"].replicates.point,
        min=low,
        max=high,
        sharpe=stats["sharpe"].replicates.point,
        alpha=alpha,
        n_templates=len(scores.template_ids),
        sharpe_caveat=sharpe_caveat(mean),
        median=median,
        max_minus_min=high - low,
        q10=q10,
        q90=q90,
        estimated=True,
        mean_grid_ci_low=grid_ci["mean"][0],
        mean_grid_ci_high=grid_ci["mean"][1],
        std_grid_ci_low=grid_ci["std"][0],
        std_grid_ci_high=grid_ci["std"][1],
        sharpe_grid_ci_low=grid_ci["sharpe"][0],
        sharpe_grid_ci_high=grid_ci["sharpe"][1],
        **with_bootstrap,
        ci_clipped=clipped,
    )
    return BudgetEstimate(
        metric=metric,
        stats=aggregate,
        per_template=per_template,
        per_template_ci=per_template_ci,
        std_ci=ci["std"],
        grid_ci=grid_ci,
        statistics=stats,
        scores=scores,
        confidence=confidence,
        ci_method=ci_method,
        n_boot=n_boot,
        seed=seed,
    )


def estimate(
    grid: AnswerGrid,
    metric_names: Sequence[str],
    *,
    alpha: float = 1.0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    n_draws: int = DEFAULT_DRAWS,
    ci_method: str = DEFAULT_CI_METHOD,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    completion: Completion | None = None,
    template_levels: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[dict[str, BudgetEstimate], Completion]:
    """Every metric's estimates from the observed cells of `grid` (one completion shared
    by all metrics); `metric_options[metric]` are passed to hakari's metric.

    `template_levels[template_id]` maps a dimension of the templates' prompt space (answer
    cue, enumerator, ...) to the template's level on it (`templates[ID].levels` of
    results.json); templates that share levels are then shrunk towards each other (see
    `covariates`). Without it, or with levels that explain nothing, the estimate is the
    same as without covariates."""
    checks.bootstrap_replicates(n_boot, "n_boot", confidence=confidence)  # 0: no intervals
    if completion is None:
        completion = complete(grid, n_draws=n_draws, seed=seed)
    options = metric_options or {}
    out: dict[str, BudgetEstimate] = {}
    for metric in metric_names:
        scores = imputed_scores(
            completion,
            metric,
            n_boot=n_boot,
            seed=seed,
            options=options.get(metric, {}),
            levels=template_levels,
        )
        out[metric] = summarise(
            metric,
            scores,
            alpha=alpha,
            confidence=confidence,
            ci_method=ci_method,
            n_boot=n_boot,
            seed=seed,
        )
    return out, completion


def difference(alpha: float) -> StatisticFn:
    """A − B of mean, std and Sharpe over templates (template t of A paired with t of B)."""

    def statistic(scores: Sequence[np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        a, b = template_statistics(scores[0], alpha), template_statistics(scores[1], alpha)
        return {s: (a[s][0] - b[s][0], a[s][1] - b[s][1]) for s in a}

    return statistic


@dataclass(frozen=True, eq=False)
class BudgetComparison:
    """Model A against model B from their estimates on the same cells and replicates."""

    model_a: str
    model_b: str
    metric: str
    a: BudgetEstimate
    b: BudgetEstimate
    statistics: dict[str, StatisticDraws]  # of the difference A − B

    def interval(self, statistic: str) -> tuple[float | None, float | None]:
        if self.a.n_boot == 0:
            return None, None
        return self.statistics[statistic].replicates.interval(self.a.ci_method, self.a.confidence)

    def record(self) -> PairedComparison:
        """One item of `paired[TASK][DECODING]`, as for a full run, marked estimated and
        with the full-grid interval of each difference (needs a bootstrap)."""

        def part(name: str) -> PairedStatistic:
            value_a = getattr(self.a.stats, name)
            value_b = getattr(self.b.stats, name)
            low, high = self.interval(name)
            assert low is not None and high is not None
            # cut to the range of A − B, as a full run's differences (`intervals`)
            bounds = difference_bounds(corpus.get(self.metric).value_range)[name]
            ci = Interval.within(low, high, bounds)
            grid = Interval.within(*self.statistics[name].grid_interval(self.a.confidence), bounds)
            return PairedStatistic(
                a=value_a,
                b=value_b,
                diff=value_a - value_b,
                ci_low=ci.low,
                ci_high=ci.high,
                p_value=self.statistics[name].replicates.p_value(),
                verdict=verdict_of(ci.low, ci.high),
                ci_clipped=[*ci.clipped, *(f"grid_{end}" for end in grid.clipped)],
                grid_ci_low=grid.low,
                grid_ci_high=grid.high,
            )

        return PairedComparison(
            model_a=self.model_a,
            model_b=self.model_b,
            metric=self.metric,
            alpha=self.a.stats.alpha,
            mean=part("mean"),
            sharpe=part("sharpe"),
            n_templates=len(self.a.scores.template_ids),
            n_instances=self.a.scores.n_instances,
            n_boot=self.a.n_boot,
            confidence=self.a.confidence,
            seed=self.a.seed,
            ci_method=self.a.ci_method,
            estimated=True,
        )


def compare(model_a: str, a: BudgetEstimate, model_b: str, b: BudgetEstimate) -> BudgetComparison:
    """A − B of two models' estimates, which must come from the same templates,
    instances, replicates and seed (a budgeted run gives every model the same cells)."""
    if a.scores.draw_key != b.scores.draw_key or a.metric != b.metric:
        raise ValueError(
            f"{model_a!r} and {model_b!r} were not estimated on the same templates, "
            "instances, replicates, seed and metric"
        )
    if a.stats.alpha != b.stats.alpha:
        raise ValueError(
            f"alpha differs: {a.stats.alpha} for {model_a!r}, {b.stats.alpha} for {model_b!r}"
        )
    stats = statistic_draws(difference(a.stats.alpha), [a.scores, b.scores])
    return BudgetComparison(model_a, model_b, a.metric, a, b, stats)
