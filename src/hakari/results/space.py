"""results.json's `space[METRIC]`: what a prompt space tells (built by
`hakari.aggregate.dimensions`, which documents how each number is computed).

Read from a file, every number must be one the computation can give (finite; a share at
most 1, eta² and the best-minus-worst difference not below 0): a hand-edited share of
1e308, inf or NaN is refused in one line naming the file and the field, not shown as a
normal number.
"""

from __future__ import annotations

import math

from pydantic import ConfigDict, ValidationInfo, field_validator

from hakari._util.records import Record, read_from_file

_ROUNDING = 1e-9  # a share computed as 1 may come out 1 + 4e-15


def _number(
    value: float | None, info: ValidationInfo, low: float | None, high: float | None
) -> float | None:
    """`value` when it is a number the space record can hold (checked on files only)."""
    if value is None or not read_from_file(info):
        return value
    if (
        math.isfinite(value)
        and (low is None or value >= low - _ROUNDING)
        and (high is None or value <= high + _ROUNDING)
    ):
        return value
    bounds = [f"≥ {low:g}"] if low is not None else []
    bounds += [f"≤ {high:g}"] if high is not None else []
    raise ValueError(
        f"{info.field_name} is {value!r}, not a finite number {' and '.join(bounds)}".rstrip()
        + ": a damaged or hand-edited space record"
    )


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

    @field_validator("mean", "ci_low", "ci_high")
    @classmethod
    def _finite(cls, value: float | None, info: ValidationInfo) -> float | None:
        return _number(value, info, None, None)


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

    @field_validator("share", "share_ci_low", "share_ci_high")
    @classmethod
    def _a_share(cls, value: float | None, info: ValidationInfo) -> float | None:
        return _number(value, info, None, 1.0)  # omega² can fall below 0, never above 1

    @field_validator("eta_squared")
    @classmethod
    def _a_proportion(cls, value: float | None, info: ValidationInfo) -> float | None:
        return _number(value, info, 0.0, 1.0)

    @field_validator("best_minus_worst")
    @classmethod
    def _not_negative(cls, value: float, info: ValidationInfo) -> float | None:
        return _number(value, info, 0.0, None)

    @field_validator("diff_ci_low", "diff_ci_high")
    @classmethod
    def _finite(cls, value: float | None, info: ValidationInfo) -> float | None:
        return _number(value, info, None, None)


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

    @field_validator("q", "value", "ci_low", "ci_high")
    @classmethod
    def _finite(cls, value: float | None, info: ValidationInfo) -> float | None:
        return _number(value, info, None, None)


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

    @field_validator("confidence")
    @classmethod
    def _a_level(cls, value: float | None, info: ValidationInfo) -> float | None:
        return _number(value, info, 0.0, 1.0)
