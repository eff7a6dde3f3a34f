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
from typing import Any, Literal, get_args

import numpy as np
from pydantic import ConfigDict, Field, PrivateAttr

from hakari._util.records import Record
from hakari.aggregate.intervals import (
    DEFAULT_CI_METHOD,
    Replicates,
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
from hakari.scoring import corpus

Verdict = Literal["a_better", "b_better", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
PAIRED_STATISTICS = ("mean", "sharpe")


def verdict_of(ci_low: float, ci_high: float) -> Verdict:
    """What the CI of A − B says: "a_better" above 0, "b_better" below 0, else
    "inconclusive"."""
    if ci_low > 0:
        return "a_better"
    if ci_high < 0:
        return "b_better"
    return "inconclusive"


class PairedStatistic(Record):
    """One statistic (mean or Sharpe score) of A and of B, their difference A − B and its
    CI; on the metric's scale (differences: twice its range at most)."""

    model_config = ConfigDict(frozen=True)
    WRITTEN_WHEN_GIVEN = frozenset({"grid_ci_low", "grid_ci_high"})

    a: float
    """Model A's published point estimate (its `aggregate[METRIC]` value)."""
    b: float
    """Model B's published point estimate."""
    diff: float
    """`a - b` exactly."""
    ci_low: float
    """Lower end of the CI of the difference, from both models scored on the same
    resampled templates × instances (level and method: the comparison's)."""
    ci_high: float
    """Upper end of the CI of the difference."""
    p_value: float
    """Two-sided bootstrap-t p-value of "no difference" (add-one estimate, in (0, 1])."""
    verdict: Verdict
    """"a_better" when the CI lies above 0, "b_better" below 0, else "inconclusive"
    (every hakari metric is higher-is-better)."""
    ci_clipped: list[str] = Field(default_factory=list)
    """The ends of the CI that were cut to the range a difference can take ("low",
    "high"; `intervals.difference_bounds`, which contains 0: no verdict changes; a
    budgeted run also "grid_low", "grid_high" for the full-grid interval); absent in files
    written before issue 17."""
    grid_ci_low: float | None = None
    """Estimated comparisons only (a budgeted run): lower end of the interval of the
    difference the full grid would have given."""
    grid_ci_high: float | None = None
    """Estimated comparisons only: upper end of the full-grid interval of the difference."""


class PairedComparison(Record):
    """Model A against model B on one task × decoding × metric: one item of
    `paired[TASK][DECODING]` in results.json, its keys in this order."""

    model_config = ConfigDict(frozen=True)
    WRITTEN_WHEN_GIVEN = frozenset({"estimated"})

    model_a: str
    """Model A's spec (A ran before B)."""
    model_b: str
    """Model B's spec."""
    metric: str
    """The metric compared."""
    alpha: float
    """The alpha of the Sharpe scores compared (the run's `--alpha`)."""
    mean: PairedStatistic
    """The difference of the means over templates."""
    sharpe: PairedStatistic
    """The difference of the Sharpe scores; its verdict is the report's."""
    n_templates: int
    """Templates both models were scored on."""
    n_instances: int
    """Instances both models were scored on."""
    n_boot: int
    """Bootstrap replicates (shared by both models: the same draws)."""
    confidence: float
    """Confidence level of both CIs, e.g. 0.95."""
    seed: int
    """Seed of the shared draws."""
    ci_method: str
    """How the CIs were read: "studentized" or "percentile" (`hakari.aggregate.intervals`)."""
    estimated: bool | None = None
    """True when both models' numbers were estimated from the same part of the grid (a
    budgeted run; the CIs then carry the imputation's uncertainty too). Written for such
    runs only."""

    _replicates: dict[str, Replicates] = PrivateAttr(default_factory=dict)

    @property
    def replicates(self) -> dict[str, Replicates]:
        """The difference's replicates per statistic (empty for a comparison read from a
        file: only one computed in this process has them)."""
        return self._replicates


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
