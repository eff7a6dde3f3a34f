"""The statistics of one model × task × decoding in results.json: `aggregate[METRIC]`
(`AggregateStats`), a template's interval (`TemplateInterval`) and a point of the alpha
sweep (`AlphaSweepPoint`, `hakari.results.sweep`). Computed by `hakari.aggregate` (summary,
intervals);
typed here so that reading a run needs none of the code that computes them."""

from __future__ import annotations

import math

from pydantic import ConfigDict, model_validator

from hakari._util.records import Record

STD_KIND = "population"


def sharpe_score(mean: float, std: float, alpha: float = 1.0) -> float:
    """Sharpe score `mean / (alpha * std + 1)` (paper eq. 1)."""
    if not (math.isfinite(mean) and math.isfinite(std) and math.isfinite(alpha)):
        raise ValueError(f"sharpe_score needs finite values, got {mean=}, {std=}, {alpha=}")
    if std < 0 or alpha < 0:
        raise ValueError(f"sharpe_score needs std >= 0 and alpha >= 0, got {std=}, {alpha=}")
    return mean / (alpha * std + 1.0)


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


class TemplateInterval(Record):
    """`templates[ID].ci[METRIC]` of results.json: the bootstrap interval of one
    template's score, at the `confidence` of the task × decoding's aggregate (the same
    `n_boot` replicates and `seed`): the percentile interval of the template's score over
    the instance resamples, the template fixed. Written only when a bootstrap ran."""

    model_config = ConfigDict(frozen=True)

    low: float
    """Lower end, on the metric's scale."""
    high: float
    """Upper end, on the metric's scale (≥ `low`)."""

    @model_validator(mode="after")
    def _ordered(self) -> TemplateInterval:
        if not self.low <= self.high:  # NaN fails too
            raise ValueError(f"an interval needs low ≤ high (got {self.low}, {self.high})")
        return self
