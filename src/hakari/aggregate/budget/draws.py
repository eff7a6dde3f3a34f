"""The imputed grids scored: every template's metric on each completed grid and on each
bootstrap replicate (replicate b on completed grid b mod M), shrunk, and the statistics
over templates drawn from them. `estimate` turns these draws into the estimates and
intervals of a budgeted run (see its docstring for what the two intervals mean).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hakari.aggregate.budget.completion import ModelChoice, impute, pooled_share
from hakari.aggregate.budget.covariates import covariate_design
from hakari.aggregate.budget.grid import AnswerGrid
from hakari.aggregate.budget.records import EstimatorRecord, MetricEstimatorRecord
from hakari.aggregate.budget.shrinkage import template_shrinkage
from hakari.aggregate.intervals import STATISTICS, Replicates, template_se
from hakari.aggregate.scorers import make_scorer, multiplicities
from hakari.scoring import corpus
from hakari.scoring.corpus import ReplicateScorer

ESTIMATOR_NAME = "latent-class multiple imputation"
DESIGN_BASED_NAME = "design-weighted cell mean"
ESTIMATOR_VERSION = 5  # 5: the design-based fallback's point estimate is the plain cell mean
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
    picked: np.ndarray | None = None  # (n_boot, T): the template positions of `resampled`

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
class Completion:
    """The imputed grids of one model × task × decoding, the model that drew them, and
    (once `estimate` has chosen) which estimator made each metric's numbers."""

    grid: AnswerGrid
    codes: np.ndarray  # (M, T, N)
    values: list[np.ndarray | None]
    model: ModelChoice
    held_out: dict[str, float] = field(default_factory=dict)
    evidence: float | None = None  # `completion.HeldOut.evidence`
    estimators: dict[str, MetricEstimatorRecord] = field(default_factory=dict)

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
            instance_evidence=None if self.evidence is None else min(self.evidence, 1000.0),
            pooled_share=pooled_share(self.grid.observed, self.grid.coded.strata),
            metrics=dict(self.estimators),
        )


def complete(grid: AnswerGrid, *, n_draws: int = DEFAULT_DRAWS, seed: int = 0) -> Completion:
    """Draw `n_draws` completed grids (codes, and donor values where the kind needs them)."""
    codes, choice, held_out = impute(grid.coded, n_draws, seed)
    rng = np.random.default_rng([seed, 1])
    values = [grid.complete_values(codes[m], rng) for m in range(n_draws)]
    return Completion(grid, codes, values, choice, held_out.scores, held_out.evidence)


def label_item_table(grid: AnswerGrid, metric: str, options: Mapping[str, Any]) -> np.ndarray:
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
    table = label_item_table(grid, metric, options) if grid.kind == "label" and per_item else None
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


def replicate_chunks(
    n_instances: int, n_templates: int, n_boot: int, seed: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """The bootstrap replicates in chunks: (first replicate, resampled instances (b, N),
    their multiplicities (b, N), resampled templates (b, T)), drawn as
    `resampling.draw_replicates` draws them, so that every model and every estimator of
    a run gets the same replicates (paired comparisons)."""
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n_instances)
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        idx = rng.integers(0, n_instances, size=(b, n_instances))
        picked = rng.integers(0, n_templates, size=(b, n_templates))
        yield start, idx, multiplicities(idx, n_instances), picked


def imputed_replicates(
    scorers: Sequence[ReplicateScorer], n_instances: int, n_templates: int, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(every, picked): the scores of all templates on each bootstrap replicate's
    resampled instances (replicate b scored by `scorers[b % M]`) and the templates each
    replicate draws (`replicate_chunks`)."""
    n_draws = len(scorers)
    every = np.empty((n_boot, n_templates))
    picked = np.empty((n_boot, n_templates), dtype=np.int64)
    for start, idx, counts, chosen in replicate_chunks(n_instances, n_templates, n_boot, seed):
        b = idx.shape[0]
        picked[start : start + b] = chosen
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
        # each template's share of the instances run: the variance is pooled for means of
        # item scores only (`template_shrinkage`)
        shares = grid.observed.mean(axis=1) if corpus.get(metric).per_item else None
        shrinkage = template_shrinkage(draws, np.random.default_rng([seed, 2]), design, shares)
        draws = shrinkage.apply(draws, np.arange(len(draws)))
        every = shrinkage.apply(every, np.arange(n_boot) % len(scorers))
    resampled = np.take_along_axis(every, picked, axis=1)
    return ImputedScores(
        grid.template_ids, draws, resampled, every, grid.n_instances, seed, unshrunk, picked
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
