"""Bootstrap over templates × instances: replicate statistics and their intervals.

Each replicate resamples templates with replacement and, independently, instances with
replacement; the same instance indices are used for every template of the replicate,
because all templates are scored on the same instances. The corpus-level metric is
recomputed per template on the resampled instances (`scorers`), then mean, std and Sharpe
over the resampled templates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hakari import metrics
from hakari.aggregate.scorers import check_inputs, item_matrix, make_scorer, multiplicities
from hakari.aggregate.summary import AggregateStats, aggregate, sharpe_array

# Replicates are processed in chunks of about this many (replicate, instance) cells, which
# bounds memory at a few tens of MB whatever the split size.
_CHUNK_CELLS = 1 << 21


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Point estimates with percentile CIs, and the replicate statistics they came from."""

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

    def to_dict(self) -> dict[str, Any]:
        """`stats.to_dict()` plus the std CI and the bootstrap settings."""
        out: dict[str, Any] = dict(self.stats.to_dict())
        out.update(
            std_ci_low=self.std_ci[0],
            std_ci_high=self.std_ci[1],
            n_boot=self.n_boot,
            confidence=self.confidence,
            seed=self.seed,
            ci_method="percentile",
        )
        return out


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


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


def bootstrap(
    predictions: Mapping[str, Sequence[Any]],
    references: Sequence[Any],
    metric: str,
    *,
    alpha: float = 1.0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    **metric_options: Any,
) -> BootstrapResult:
    """Percentile CIs for the mean over templates and for the Sharpe score.

    `predictions` maps template id -> predictions on the shared instances. Each replicate
    draws instance indices (shared by all templates) and template indices, both uniformly
    with replacement, from `numpy.random.default_rng(seed)`; the result is deterministic
    for a given seed and inputs.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    template_ids = list(predictions)
    preds = [predictions[t] for t in template_ids]
    check_inputs(metric, preds, references)
    item_scores = None
    if metric in metrics.PER_ITEM_METRICS:
        # Score the text once: the point estimate is the mean of the per-item scores.
        item_scores = item_matrix(metric, preds, references, metric_options)
        per_template = {
            t: float(row.mean()) for t, row in zip(template_ids, item_scores, strict=True)
        }
    else:
        per_template = _point_scores(metric, template_ids, preds, references, metric_options)
    point = aggregate(per_template, alpha=alpha)

    scorer = make_scorer(metric, preds, references, metric_options, item_scores)
    n, n_templates = len(references), len(template_ids)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n)
    means, stds = np.empty(n_boot), np.empty(n_boot)
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        idx = rng.integers(0, n, size=(b, n))
        picked_templates = rng.integers(0, n_templates, size=(b, n_templates))
        scores = scorer(idx, multiplicities(idx, n))
        resampled = np.take_along_axis(scores, picked_templates, axis=1)
        means[start : start + b] = resampled.mean(axis=1)
        stds[start : start + b] = resampled.std(axis=1, ddof=0)
    sharpes = sharpe_array(means, stds, alpha)

    mean_ci = _percentile_interval(means, confidence)
    sharpe_ci = _percentile_interval(sharpes, confidence)
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
        std_ci=_percentile_interval(stds, confidence),
        sharpe_ci=sharpe_ci,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        replicate_means=means,
        replicate_stds=stds,
        replicate_sharpes=sharpes,
    )
