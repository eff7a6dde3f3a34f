"""Summary of per-template scores: mean, population std, extremes, Sharpe score.

One aggregate is computed per model × task × decoding × metric from the corpus-level
metric of each instruction template. The spread is the **population** standard deviation
(ddof=0) of the per-template scores; the paper (Sakai et al., §5.2) does not say which it
uses, so every result records `std_kind="population"`.

Sharpe score (paper eq. 1): `mean / (alpha * std + 1)`; alpha 0 gives the plain mean.
The formula is kept exactly, also for a negative mean (MCC or a correlation below 0),
where it rewards spread instead of penalising it; such aggregates carry
`sharpe_caveat="negative_mean"`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from pydantic import ConfigDict

from hakari._util.records import Record

STD_KIND = "population"


def sharpe_score(mean: float, std: float, alpha: float = 1.0) -> float:
    """Sharpe score `mean / (alpha * std + 1)` (paper eq. 1)."""
    if not (math.isfinite(mean) and math.isfinite(std) and math.isfinite(alpha)):
        raise ValueError(f"sharpe_score needs finite values, got {mean=}, {std=}, {alpha=}")
    if std < 0 or alpha < 0:
        raise ValueError(f"sharpe_score needs std >= 0 and alpha >= 0, got {std=}, {alpha=}")
    return mean / (alpha * std + 1.0)


def sharpe_array(mean: np.ndarray, std: np.ndarray, alpha: float) -> np.ndarray:
    return mean / (alpha * std + 1.0)


def sharpe_caveat(mean: float) -> str | None:
    """ "negative_mean" when mean < 0: eq. 1 then *rewards* spread (a larger denominator
    brings a negative mean closer to 0), so the Sharpe score no longer penalises
    instability and should be read with the mean and std beside it; else None."""
    return "negative_mean" if mean < 0 else None


class AggregateStats(Record):
    """Summary of the per-template scores of one model × task × decoding × metric:
    `aggregate[METRIC]` of results.json, its keys in this order.

    Every score is on the metric's own scale (accuracy, exact match, F1: 0 to 1; MCC,
    Pearson, Spearman: -1 to 1). The interval settings (`std_ci_low` to `ci_clipped`)
    are written only when a bootstrap ran.
    """

    model_config = ConfigDict(frozen=True)
    WRITTEN_WHEN_GIVEN = frozenset(
        {
            "std_ci_low",
            "std_ci_high",
            "n_boot",
            "confidence",
            "seed",
            "ci_method",
            "ci_clipped",
            "estimated",
            "mean_grid_ci_low",
            "mean_grid_ci_high",
            "std_grid_ci_low",
            "std_grid_ci_high",
            "sharpe_grid_ci_low",
            "sharpe_grid_ci_high",
        }
    )

    mean: float
    """Mean of the per-template scores (each the metric on all instances)."""
    std: float
    """Spread of the per-template scores: their standard deviation, ≥ 0, of the kind
    `std_kind` names (population, ddof=0)."""
    min: float
    """The worst template's score."""
    max: float
    """The best template's score."""
    sharpe: float
    """Sharpe score `mean / (alpha * std + 1)` (paper eq. 1); the mean when alpha is 0.
    See `sharpe_caveat` for a negative mean."""
    alpha: float
    """The alpha of eq. 1 (`--alpha`, ≥ 0, default 1.0)."""
    ci_low: float | None = None
    """Lower end of the bootstrap CI of the mean (level `confidence`, method
    `ci_method`); null when no bootstrap ran (`--n-boot 0`, or a single instance)."""
    ci_high: float | None = None
    """Upper end of the bootstrap CI of the mean; null when no bootstrap ran."""
    std_kind: str = STD_KIND
    """How `std` is computed: "population" (ddof=0) in every hakari version."""
    n_templates: int
    """How many templates were scored (the number of per-template scores)."""
    sharpe_ci_low: float | None = None
    """Lower end of the bootstrap CI of the Sharpe score; null when no bootstrap ran."""
    sharpe_ci_high: float | None = None
    """Upper end of the bootstrap CI of the Sharpe score; null when no bootstrap ran."""
    sharpe_caveat: str | None = None
    """ "negative_mean" when mean < 0 (eq. 1 then rewards spread: compare such models by
    mean and std), else null. Absent from files of versions before it was recorded."""
    median: float
    """Median of the per-template scores."""
    max_minus_min: float
    """`max - min`: the best minus the worst template (FormatSpread's spread), ≥ 0."""
    q10: float
    """10th percentile of the per-template scores (`numpy.quantile`, linear)."""
    q90: float
    """90th percentile of the per-template scores (`numpy.quantile`, linear)."""
    std_ci_low: float | None = None
    """Lower end of the bootstrap CI of `std` (with a bootstrap only)."""
    std_ci_high: float | None = None
    """Upper end of the bootstrap CI of `std` (with a bootstrap only)."""
    n_boot: int | None = None
    """Bootstrap replicates behind the CIs (`--n-boot`; with a bootstrap only)."""
    confidence: float | None = None
    """Confidence level of every CI here, e.g. 0.95 (with a bootstrap only)."""
    seed: int | None = None
    """Seed of the bootstrap's draws (`--seed`; with a bootstrap only)."""
    ci_method: str | None = None
    """How the CIs were read from the replicates: "studentized" (the default) or
    "percentile" (see `hakari.aggregate.intervals`; with a bootstrap only)."""
    ci_clipped: list[str] | None = None
    """The CI ends that were cut to the range their quantity can take ("mean_low",
    "std_low", "sharpe_high"...; [] when none): the mean in the metric's range, the std
    in [0, half its width], the Sharpe score between the range's ends and 0
    (`hakari.aggregate.intervals`; with a bootstrap only, absent before issue 17)."""
    estimated: bool | None = None
    """True when every number here was estimated from part of the template × instance
    grid (`--budget`, `--target-ci`, `--until-decided`; `hakari.aggregate.budget`): the
    point values are posterior means over imputations of the cells not run, and the CIs
    above target the same populations as a full run's. Written for such runs only."""
    mean_grid_ci_low: float | None = None
    """Estimated runs only: lower end of the interval of the mean that the *full grid*
    (every template on every instance of this run) would have given."""
    mean_grid_ci_high: float | None = None
    """Estimated runs only: upper end of the full-grid interval of the mean."""
    std_grid_ci_low: float | None = None
    """Estimated runs only: lower end of the full-grid interval of `std`."""
    std_grid_ci_high: float | None = None
    """Estimated runs only: upper end of the full-grid interval of `std`."""
    sharpe_grid_ci_low: float | None = None
    """Estimated runs only: lower end of the full-grid interval of the Sharpe score."""
    sharpe_grid_ci_high: float | None = None
    """Estimated runs only: upper end of the full-grid interval of the Sharpe score."""


def aggregate(per_template: Mapping[str, float], *, alpha: float = 1.0) -> AggregateStats:
    """Mean, population std, extremes, quantiles and Sharpe score over templates."""
    if len(per_template) == 0:
        raise ValueError("aggregate needs at least one template score")
    scores = np.asarray(list(per_template.values()), dtype=np.float64)
    if not np.all(np.isfinite(scores)):
        bad = [t for t, s in per_template.items() if not math.isfinite(s)]
        raise ValueError(f"non-finite template scores for {bad}")
    mean = float(scores.mean())
    std = float(scores.std(ddof=0))
    q10, median, q90 = (float(q) for q in np.quantile(scores, [0.1, 0.5, 0.9]))
    low, high = float(scores.min()), float(scores.max())
    return AggregateStats(
        mean=mean,
        std=std,
        min=low,
        max=high,
        sharpe=sharpe_score(mean, std, alpha),
        alpha=alpha,
        n_templates=len(scores),
        sharpe_caveat=sharpe_caveat(mean),
        median=median,
        max_minus_min=high - low,
        q10=q10,
        q90=q90,
    )
