"""Bootstrap over templates × instances: replicate statistics and their intervals.

Each replicate resamples templates with replacement and, independently, instances with
replacement; the same instance indices are used for every template of the replicate,
because all templates are scored on the same instances. The corpus-level metric is
recomputed per template on the resampled instances (`scorers`), then mean, std and Sharpe
over the resampled templates. The same replicate also gives the statistics on the
resampled instances with every template kept, which the studentised interval needs
(`intervals`). Several models scored on the same task draw the same replicates
(`draw_replicates` takes one scorer per model), which is what the paired comparison
(`paired`) relies on: with the same seed, model A's replicates in a paired comparison are
exactly those of `bootstrap` on A alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from hakari import metrics
from hakari.aggregate.intervals import (
    CI_METHODS,
    DEFAULT_CI_METHOD,
    STATISTICS,
    Replicates,
    template_se,
    template_statistics,
)
from hakari.aggregate.scorers import (
    Scorer,
    check_inputs,
    item_matrix,
    make_scorer,
    multiplicities,
)
from hakari.aggregate.summary import AggregateStats, aggregate

# Replicates are processed in chunks of about this many (replicate, instance) cells, which
# bounds memory at a few tens of MB whatever the split size.
_CHUNK_CELLS = 1 << 21

# Per-model template scores (each (..., T)) -> {statistic: (value (...), influence (..., T))}
StatisticFn = Callable[[Sequence[np.ndarray]], dict[str, tuple[np.ndarray, np.ndarray]]]
# One chunk of replicates: its slice of replicate numbers and, per model, the scores of
# the resampled templates (b, T) and of every template (b, T) on the resampled instances.
Draw = tuple[slice, list[tuple[np.ndarray, np.ndarray]]]
K = TypeVar("K")


def check_bootstrap_options(n_boot: int, confidence: float, ci_method: str) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if ci_method not in CI_METHODS:
        raise ValueError(f"unknown CI method {ci_method!r}; expected one of {CI_METHODS}")


def draw_replicates(
    scorers: Sequence[Scorer], n_instances: int, n_templates: int, n_boot: int, seed: int
) -> Iterator[Draw]:
    """The replicates of `numpy.random.default_rng(seed)`, chunk by chunk: instance indices
    (shared by all templates and all models), then template indices, per chunk."""
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n_instances)
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        idx = rng.integers(0, n_instances, size=(b, n_instances))
        picked_templates = rng.integers(0, n_templates, size=(b, n_templates))
        counts = multiplicities(idx, n_instances)
        per_model = []
        for scorer in scorers:
            scores = scorer(idx, counts)
            per_model.append((np.take_along_axis(scores, picked_templates, axis=1), scores))
        yield slice(start, start + b), per_model


def collect_replicates(
    statistics: Mapping[K, StatisticFn],
    point_scores: Sequence[np.ndarray],
    draws: Iterator[Draw],
    n_boot: int,
) -> dict[K, dict[str, Replicates]]:
    """Every statistic of every key on the observed scores and on every replicate."""
    values = {k: {s: np.empty(n_boot) for s in STATISTICS} for k in statistics}
    ses = {k: {s: np.empty(n_boot) for s in STATISTICS} for k in statistics}
    instance = {k: {s: np.empty(n_boot) for s in STATISTICS} for k in statistics}
    for rows, per_model in draws:
        picked = [p for p, _ in per_model]
        every = [e for _, e in per_model]
        for key, fn in statistics.items():
            on_picked, on_every = fn(picked), fn(every)
            for s in STATISTICS:
                values[key][s][rows] = on_picked[s][0]
                ses[key][s][rows] = template_se(on_picked[s][1])
                instance[key][s][rows] = on_every[s][0]
    out: dict[K, dict[str, Replicates]] = {}
    for key, fn in statistics.items():
        observed = fn(point_scores)
        out[key] = {
            s: Replicates(
                point=float(observed[s][0]),
                point_se=float(template_se(observed[s][1])),
                values=values[key][s],
                values_se=ses[key][s],
                instance_values=instance[key][s],
            )
            for s in STATISTICS
        }
    return out


def template_scores(
    metric: str,
    template_ids: Sequence[str],
    preds: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
) -> tuple[dict[str, float], Scorer]:
    """Each template's metric on all instances, and the scorer of its replicates."""
    check_inputs(metric, preds, references)
    item_scores = None
    if metric in metrics.PER_ITEM_METRICS:
        # Score the text once: the point estimate is the mean of the per-item scores.
        item_scores = item_matrix(metric, preds, references, options)
        per_template = {
            t: float(row.mean()) for t, row in zip(template_ids, item_scores, strict=True)
        }
    else:
        per_template = _point_scores(metric, template_ids, preds, references, options)
    return per_template, make_scorer(metric, preds, references, options, item_scores)


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Point estimates with their CIs, and the replicate statistics they came from."""

    stats: AggregateStats
    per_template: dict[str, float]
    mean_ci: tuple[float, float]
    std_ci: tuple[float, float]
    sharpe_ci: tuple[float, float]
    n_boot: int
    confidence: float
    seed: int
    replicate_means: np.ndarray
    replicate_stds: np.ndarray
    replicate_sharpes: np.ndarray
    ci_method: str = DEFAULT_CI_METHOD

    def to_dict(self) -> dict[str, Any]:
        """`stats.to_dict()` plus the std CI and the bootstrap settings."""
        out: dict[str, Any] = dict(self.stats.to_dict())
        out.update(
            std_ci_low=self.std_ci[0],
            std_ci_high=self.std_ci[1],
            n_boot=self.n_boot,
            confidence=self.confidence,
            seed=self.seed,
            ci_method=self.ci_method,
        )
        return out


def _point_scores(
    metric: str,
    template_ids: Sequence[str],
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
) -> dict[str, float]:
    return {
        tid: metrics.compute(metric, preds, references, **options)
        for tid, preds in zip(template_ids, predictions, strict=True)
    }


def replicate_statistics(
    predictions: Mapping[str, Sequence[Any]],
    references: Sequence[Any],
    metric: str,
    *,
    alpha: float,
    n_boot: int,
    seed: int,
    **metric_options: Any,
) -> tuple[dict[str, float], dict[str, Replicates]]:
    """Each template's score, and the mean, std and Sharpe replicates of `bootstrap`
    (from which an interval of any method can be read)."""
    template_ids = list(predictions)
    preds = [predictions[t] for t in template_ids]
    per_template, scorer = template_scores(metric, template_ids, preds, references, metric_options)
    observed = np.asarray(list(per_template.values()), dtype=np.float64)
    draws = draw_replicates([scorer], len(references), len(template_ids), n_boot, seed)
    reps = collect_replicates(
        {0: lambda scores: template_statistics(scores[0], alpha)}, [observed], draws, n_boot
    )[0]
    return per_template, reps


def bootstrap(
    predictions: Mapping[str, Sequence[Any]],
    references: Sequence[Any],
    metric: str,
    *,
    alpha: float = 1.0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    ci_method: str = DEFAULT_CI_METHOD,
    **metric_options: Any,
) -> BootstrapResult:
    """CIs for the mean over templates, the std and the Sharpe score.

    `predictions` maps template id -> predictions on the shared instances. Each replicate
    draws instance indices (shared by all templates) and template indices, both uniformly
    with replacement, from `numpy.random.default_rng(seed)`; the result is deterministic
    for a given seed and inputs. `ci_method` is "studentized" (default) or "percentile"
    (see `hakari.aggregate.intervals`).
    """
    check_bootstrap_options(n_boot, confidence, ci_method)
    per_template, reps = replicate_statistics(
        predictions, references, metric, alpha=alpha, n_boot=n_boot, seed=seed, **metric_options
    )
    point = aggregate(per_template, alpha=alpha)
    mean_ci = reps["mean"].interval(ci_method, confidence)
    sharpe_ci = reps["sharpe"].interval(ci_method, confidence)
    stats = replace(
        point,
        ci_low=mean_ci[0],
        ci_high=mean_ci[1],
        sharpe_ci_low=sharpe_ci[0],
        sharpe_ci_high=sharpe_ci[1],
    )
    return BootstrapResult(
        stats=stats,
        per_template=per_template,
        mean_ci=mean_ci,
        std_ci=reps["std"].interval(ci_method, confidence),
        sharpe_ci=sharpe_ci,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        replicate_means=reps["mean"].values,
        replicate_stds=reps["std"].values,
        replicate_sharpes=reps["sharpe"].values,
        ci_method=ci_method,
    )
