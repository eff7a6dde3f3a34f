"""results.json's `space[METRIC]`: what a prompt space tells (built by
`hakari.aggregate.dimensions`, which documents how each number is computed)."""

from __future__ import annotations

from pydantic import ConfigDict

from hakari._util.records import Record


class LevelMean(Record):
    """One level of a dimension: the templates at it and their mean score with its
    interval."""

    model_config = ConfigDict(frozen=True)

    level: str
    """The level's name (as in `templates[ID].levels`)."""
    n_templates: int
    """Templates of this run at this level."""
    mean: float
    """Mean score of those templates, on the metric's scale."""
    ci_low: float | None = None
    """Lower end of the interval of `mean` on the aggregate's replicates (its `ci_method`,
    cut to the metric's range; null without a bootstrap; absent in files written before
    it existed)."""
    ci_high: float | None = None
    """Upper end of that interval."""


class DimensionEffect(Record):
    """What one dimension of the space does to the score: `space[METRIC].dimensions[DIM]`."""

    model_config = ConfigDict(frozen=True)

    share: float | None
    """Share of the variance over templates this dimension explains: omega² (see
    `definition` of the space record); null when the template scores do not vary or the
    dimension has a single level or no within-level freedom."""
    share_ci_low: float | None = None
    """Lower end of the percentile interval of `share` (null without a bootstrap)."""
    share_ci_high: float | None = None
    """Upper end of the percentile interval of `share`."""
    eta_squared: float | None
    """`SS_between / SS_total`: the observed between-level share, not corrected for
    chance (null when the scores do not vary)."""
    levels: list[LevelMean]
    """Every level present, in the order the templates first use them."""
    best: str
    """The level with the highest mean score."""
    worst: str
    """The level with the lowest mean score."""
    best_minus_worst: float
    """Mean of `best` minus mean of `worst` (≥ 0)."""
    diff_ci_low: float | None = None
    """Lower end of the interval of `best_minus_worst` on the same replicates (the
    aggregate's `ci_method`; null without a bootstrap)."""
    diff_ci_high: float | None = None
    """Upper end of that interval."""


class Percentile(Record):
    """A percentile of the template scores with its interval."""

    model_config = ConfigDict(frozen=True)

    q: float
    """Which percentile (5, 50, 95)."""
    value: float
    """Its value over the observed template scores (`numpy.quantile`, linear)."""
    ci_low: float | None = None
    """Lower end of its percentile interval over the replicates (null without a
    bootstrap)."""
    ci_high: float | None = None
    """Upper end of that interval."""


class SpaceSummary(Record):
    """`space[METRIC]` of a decoding whose templates carry levels (a prompt space)."""

    model_config = ConfigDict(frozen=True)
    WRITTEN_WHEN_GIVEN = frozenset({"estimated"})

    definition: str
    """How `share` is defined, in words."""
    percentiles: list[Percentile]
    """The 5th, 50th and 95th percentiles of the template scores."""
    dimensions: dict[str, DimensionEffect]
    """Dimension -> its effect, in the order of the first template's levels."""
    n_templates: int
    """Templates with levels behind these numbers."""
    confidence: float | None = None
    """Level of every interval here (the aggregate's; null without a bootstrap)."""
    estimated: bool | None = None
    """True when the template scores behind these numbers were estimated from part of
    the grid (a budgeted run: the estimated template scores, the intervals from the
    imputed replicates of the aggregate); written for such runs only."""
