"""Bootstrap over templates × instances: replicate statistics and their intervals.

Each replicate resamples templates with replacement and, independently, instances with
replacement; the same instance indices are used for every template of the replicate,
because all templates are scored on the same instances. The corpus-level metric is
recomputed per template on the resampled instances (`scorers`), then mean, std and Sharpe
over the resampled templates. The same replicate also gives the statistics on the
resampled instances with every template kept, which the studentised interval needs
(`intervals`). The draws depend only on the numbers of instances, templates and
replicates and on the seed, so models scored on the same task with the same seed see the
same resamples, and their stored template scores (`TemplateReplicates`) are all a paired
comparison needs (`paired`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hakari._util import checks
from hakari.aggregate.intervals import (
    CI_METHODS,
    DEFAULT_CI_METHOD,
    STATISTICS,
    Replicates,
    TemplateInterval,
    statistic_bounds,
    template_intervals,
    template_se,
    template_statistics,
)
from hakari.aggregate.scorers import (
    check_inputs,
    item_matrix,
    make_scorer,
    multiplicities,
)
from hakari.aggregate.summary import AggregateStats, aggregate
from hakari.errors import HakariInputError
from hakari.scoring import corpus

# Replicates are processed in chunks of about this many (replicate, instance) cells, which
# bounds memory at a few tens of MB whatever the split size.
_CHUNK_CELLS = 1 << 21

StatisticFn = Callable[[Sequence[np.ndarray]], dict[str, tuple[np.ndarray, np.ndarray]]]
"""Per-model template scores (each (..., T)) -> {statistic: (value (...), influence (..., T))}."""


@dataclass(frozen=True, eq=False)
class TemplateReplicates:
    """The template scores of every replicate of one model on one metric.

    `resampled[b]` are the scores of the templates drawn in replicate b (on its resampled
    instances), `every[b]` the scores of all templates, in `template_ids` order, on the
    same resampled instances. Two models with the same `draw_key` saw the same draws.
    """

    template_ids: tuple[str, ...]
    observed: np.ndarray  # (T,) scores on all instances
    resampled: np.ndarray  # (n_boot, T)
    every: np.ndarray  # (n_boot, T)
    n_instances: int
    seed: int
    picked: np.ndarray | None = None  # (n_boot, T): the template positions of `resampled`

    @property
    def draw_key(self) -> tuple[tuple[str, ...], int, int, int]:
        return self.template_ids, self.n_instances, len(self.resampled), self.seed


def bootstrap_bytes(n_boot: int, *, kept_templates: int, widest: int) -> int:
    """About the most memory a run's bootstraps hold at once: the template scores of every
    replicate kept for the paired comparisons (`TemplateReplicates`: two (n_boot, T)
    float arrays and the (n_boot, T) template positions for each model × decoding ×
    metric; `kept_templates` sums their T), plus
    the working arrays of the aggregate being computed (its statistics and their
    influences, about eight (n_boot, T) arrays for the widest task) and one chunk of
    resampled instance indices."""
    floats = n_boot * (3 * kept_templates + 8 * widest)
    return 8 * (floats + 3 * _CHUNK_CELLS)


def check_bootstrap_options(n_boot: int, confidence: float, ci_method: str) -> None:
    """The same rule as the CLI's `--n-boot` (`checks.bootstrap_replicates`), for the
    Python API: an interval needs replicates beyond both of its ends."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if checks.bootstrap_replicates(n_boot, "n_boot", confidence=confidence) == 0:
        raise HakariInputError("0 replicates give no interval; ask for none", field="n_boot")
    if ci_method not in CI_METHODS:
        raise ValueError(f"unknown CI method {ci_method!r}; expected one of {CI_METHODS}")


def draw_replicates(
    scorer: corpus.ReplicateScorer, n_instances: int, n_templates: int, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(resampled, every) template scores of the replicates of `default_rng(seed)`
    (`draw_replicate_templates` without the template positions)."""
    resampled, every, _ = draw_replicate_templates(scorer, n_instances, n_templates, n_boot, seed)
    return resampled, every


def draw_replicate_templates(
    scorer: corpus.ReplicateScorer, n_instances: int, n_templates: int, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(resampled, every) template scores of the replicates of `default_rng(seed)`, and
    the template positions each replicate drew (`resampled[b] = every[b, picked[b]]`).

    Per chunk of replicates the generator draws the instance indices (shared by all
    templates), then the template indices, so the draws depend only on (n_instances,
    n_templates, n_boot, seed): every model scored with the same ones sees the same
    resamples.
    """
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n_instances)
    resampled, every = np.empty((n_boot, n_templates)), np.empty((n_boot, n_templates))
    picked = np.empty((n_boot, n_templates), dtype=np.int64)
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        idx = rng.integers(0, n_instances, size=(b, n_instances))
        picked_templates = rng.integers(0, n_templates, size=(b, n_templates))
        scores = scorer(idx, multiplicities(idx, n_instances))
        every[start : start + b] = scores
        resampled[start : start + b] = np.take_along_axis(scores, picked_templates, axis=1)
        picked[start : start + b] = picked_templates
    return resampled, every, picked


def statistic_replicates(
    statistic: StatisticFn, models: Sequence[TemplateReplicates]
) -> dict[str, Replicates]:
    """Mean, std and Sharpe (as `statistic` defines them over the models' template scores)
    on the observed scores and on every replicate."""
    observed = statistic([m.observed for m in models])
    on_resampled = statistic([m.resampled for m in models])
    on_every = statistic([m.every for m in models])
    return {
        s: Replicates(
            point=float(observed[s][0]),
            point_se=float(template_se(observed[s][1])),
            values=on_resampled[s][0],
            values_se=template_se(on_resampled[s][1]),
            instance_values=on_every[s][0],
        )
        for s in STATISTICS
    }


def template_scores(
    metric: str,
    template_ids: Sequence[str],
    preds: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
) -> tuple[dict[str, float], corpus.ReplicateScorer]:
    """Each template's metric on all instances, and the scorer of its replicates."""
    check_inputs(metric, preds, references)
    item_scores = None
    if corpus.get(metric).per_item:
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
    """Point estimates with their CIs (`stats`: `aggregate[METRIC]` of results.json), and
    the replicate statistics they came from."""

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
    ci_method: str
    alpha: float
    replicates: TemplateReplicates  # the template scores behind every replicate

    def template_intervals(self) -> dict[str, TemplateInterval]:
        """Each template's interval (`intervals.template_intervals`) at this bootstrap's
        confidence."""
        reps = self.replicates
        return template_intervals(reps.template_ids, reps.every, self.confidence)


def _point_scores(
    metric: str,
    template_ids: Sequence[str],
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
) -> dict[str, float]:
    return {
        tid: corpus.compute(metric, preds, references, **options)
        for tid, preds in zip(template_ids, predictions, strict=True)
    }


def template_replicates(
    predictions: Mapping[str, Sequence[Any]],
    references: Sequence[Any],
    metric: str,
    *,
    n_boot: int,
    seed: int,
    **metric_options: Any,
) -> tuple[dict[str, float], TemplateReplicates]:
    """Each template's score on all instances, and on every replicate of `bootstrap`."""
    template_ids = list(predictions)
    preds = [predictions[t] for t in template_ids]
    per_template, scorer = template_scores(metric, template_ids, preds, references, metric_options)
    resampled, every, picked = draw_replicate_templates(
        scorer, len(references), len(template_ids), n_boot, seed
    )
    reps = TemplateReplicates(
        template_ids=tuple(template_ids),
        observed=np.asarray(list(per_template.values()), dtype=np.float64),
        resampled=resampled,
        every=every,
        n_instances=len(references),
        seed=seed,
        picked=picked,
    )
    return per_template, reps


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
    per_template, reps = template_replicates(
        predictions, references, metric, n_boot=n_boot, seed=seed, **metric_options
    )
    return per_template, statistic_replicates(
        lambda scores: template_statistics(scores[0], alpha), [reps]
    )


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
    (see `hakari.aggregate.intervals`); every interval is cut to its quantity's range
    (the metric's `value_range`), the cut ends named in `ci_clipped`.
    """
    check_bootstrap_options(n_boot, confidence, ci_method)
    per_template, scores = template_replicates(
        predictions, references, metric, n_boot=n_boot, seed=seed, **metric_options
    )
    reps = statistic_replicates(lambda s: template_statistics(s[0], alpha), [scores])
    point = aggregate(per_template, alpha=alpha)
    bounds = statistic_bounds(corpus.get(metric).value_range)
    cis = {s: reps[s].bounded(ci_method, confidence, bounds[s]) for s in STATISTICS}
    stats = point.model_copy(
        update={
            "ci_low": cis["mean"].low,
            "ci_high": cis["mean"].high,
            "sharpe_ci_low": cis["sharpe"].low,
            "sharpe_ci_high": cis["sharpe"].high,
            "std_ci_low": cis["std"].low,
            "std_ci_high": cis["std"].high,
            "n_boot": n_boot,
            "confidence": confidence,
            "seed": seed,
            "ci_method": ci_method,
            "ci_clipped": [f"{s}_{end}" for s in STATISTICS for end in cis[s].clipped],
        }
    )
    return BootstrapResult(
        stats=stats,
        per_template=per_template,
        mean_ci=cis["mean"].pair,
        std_ci=cis["std"].pair,
        sharpe_ci=cis["sharpe"].pair,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        replicate_means=reps["mean"].values,
        replicate_stds=reps["std"].values,
        replicate_sharpes=reps["sharpe"].values,
        ci_method=ci_method,
        alpha=alpha,
        replicates=scores,
    )
