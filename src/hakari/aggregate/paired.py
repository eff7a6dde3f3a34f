"""Which model is better: paired differences of mean and Sharpe score with bootstrap CIs.

Two models scored on the same task × decoding share the templates and the instances, so
their scores are compared on the same replicates: each replicate draws one set of
instance indices and one set of template indices (`resampling.draw_replicates`, the same
draws as `bootstrap` with the same seed) and scores both models on them. The difference
A − B of each statistic is computed per replicate, so template and instance effects that
both models share cancel, and the interval of the difference is much narrower than two
overlapping single-model intervals suggest.

The difference's interval uses the method of the single-model intervals (studentised by
default, `intervals`): the template influence of a difference is the difference of the
per-template influences (template t of A is paired with template t of B), the instance
part is the variance of the difference over instance-only resamples. The point
difference is exactly `stat(A) − stat(B)` of the paper's formulas. The verdict reads the
interval: "a_better" when it lies above 0, "b_better" below 0, else "inconclusive"
(all hakari metrics are higher-is-better); `p_value` is the two-sided bootstrap-t p-value
of "no difference", for readers who want one number. Intervals are cut to the range of
the difference (`intervals.difference_bounds`), which contains 0: no verdict changes.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hakari.aggregate.intervals import (
    DEFAULT_CI_METHOD,
    difference_bounds,
    template_statistics,
)
from hakari.aggregate.resampling import (
    BootstrapResult,
    StatisticFn,
    bootstrap,
    check_bootstrap_options,
    statistic_replicates,
)
from hakari.results.paired import (
    PairedComparison,
    PairedStatistic,
    verdict_of,
)
from hakari.scoring import corpus

PAIRED_STATISTICS = ("mean", "sharpe")


def _difference(alpha: float) -> StatisticFn:
    def statistic(scores: Sequence[np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        a, b = template_statistics(scores[0], alpha), template_statistics(scores[1], alpha)
        return {s: (a[s][0] - b[s][0], a[s][1] - b[s][1]) for s in a}

    return statistic


def compare(
    model_a: str,
    a: BootstrapResult,
    model_b: str,
    b: BootstrapResult,
    metric: str,
    *,
    confidence: float | None = None,
    ci_method: str | None = None,
) -> PairedComparison:
    """A − B from the two models' bootstraps, which must have seen the same draws (same
    templates in the same order, instances, n_boot and seed) and the same alpha."""
    if a.replicates.draw_key != b.replicates.draw_key:
        raise ValueError(
            f"{model_a!r} and {model_b!r} were not bootstrapped on the same templates, "
            "instances, replicates and seed; a paired comparison needs the same draws"
        )
    if a.alpha != b.alpha:
        raise ValueError(f"alpha differs: {a.alpha} for {model_a!r}, {b.alpha} for {model_b!r}")
    confidence = a.confidence if confidence is None else confidence
    ci_method = a.ci_method if ci_method is None else ci_method
    check_bootstrap_options(a.n_boot, confidence, ci_method)
    reps = statistic_replicates(_difference(a.alpha), [a.replicates, b.replicates])
    bounds = difference_bounds(corpus.get(metric).value_range)

    def statistic(name: str) -> PairedStatistic:
        interval = reps[name].bounded(ci_method, confidence, bounds[name])
        value_a, value_b = getattr(a.stats, name), getattr(b.stats, name)
        return PairedStatistic(
            a=value_a,
            b=value_b,
            diff=value_a - value_b,
            ci_low=interval.low,
            ci_high=interval.high,
            p_value=reps[name].p_value(),
            verdict=verdict_of(interval.low, interval.high),
            ci_clipped=list(interval.clipped),
        )

    comparison = PairedComparison(
        model_a=model_a,
        model_b=model_b,
        metric=metric,
        alpha=a.alpha,
        n_templates=len(a.replicates.template_ids),
        n_instances=a.replicates.n_instances,
        n_boot=a.n_boot,
        confidence=confidence,
        seed=a.seed,
        ci_method=ci_method,
        mean=statistic("mean"),
        sharpe=statistic("sharpe"),
    )
    comparison._replicates = reps
    return comparison


def compare_all(bootstraps: Mapping[str, BootstrapResult], metric: str) -> list[PairedComparison]:
    """Every pair of models, A before B in the mapping's order."""
    return [
        compare(model_a, bootstraps[model_a], model_b, bootstraps[model_b], metric)
        for model_a, model_b in itertools.combinations(bootstraps, 2)
    ]


def paired_bootstrap(
    predictions: Mapping[str, Mapping[str, Sequence[Any]]],
    references: Sequence[Any],
    metric: str,
    *,
    alpha: float = 1.0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    ci_method: str = DEFAULT_CI_METHOD,
    **metric_options: Any,
) -> list[PairedComparison]:
    """Every pair of models (in the order given: A before B) compared on one metric.

    `predictions` maps model -> template id -> predictions on the shared `references`;
    every model must have the same templates (taken in the first model's order). Each
    model is bootstrapped with the same seed, hence on the same draws, then `compare`d.
    """
    models = list(predictions)
    if len(models) < 2:
        raise ValueError("a paired comparison needs at least two models")
    template_ids = list(predictions[models[0]])
    for model in models[1:]:
        if set(predictions[model]) != set(template_ids):
            raise ValueError(
                f"models {models[0]!r} and {model!r} were scored on different templates; "
                "a paired comparison needs the same templates"
            )
    bootstraps = {
        model: bootstrap(
            {t: predictions[model][t] for t in template_ids},
            references,
            metric,
            alpha=alpha,
            n_boot=n_boot,
            confidence=confidence,
            seed=seed,
            ci_method=ci_method,
            **metric_options,
        )
        for model in models
    }
    return compare_all(bootstraps, metric)
