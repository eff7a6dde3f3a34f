"""Model against model in results.json: `paired[TASK][DECODING]` (`PairedComparison`,
one pair on one metric) and `model_groups[TASK][DECODING][METRIC]` (`ModelGroups`: every
pair after the multiple-comparison correction, and the groups of tied models). Computed by
`hakari.aggregate.paired` and `hakari.aggregate.multiple`."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import ConfigDict, Field, PrivateAttr

from hakari._util.records import Record

Verdict = Literal["a_better", "b_better", "inconclusive"]


VERDICTS: tuple[Verdict, ...] = get_args(Verdict)


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

    _replicates: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def replicates(self) -> dict[str, Any]:
        """The difference's replicates per statistic (empty for a comparison read from a
        file: only one computed in this process has them)."""
        return self._replicates


class GroupTest(Record):
    """One pair of models after the correction: an item of `model_groups[...].tests`."""

    model_config = ConfigDict(frozen=True)

    model_a: str
    """Model A's spec (A ran before B)."""
    model_b: str
    """Model B's spec."""
    diff: float
    """A − B of the Sharpe scores (the published point estimates)."""
    p_value: float
    """The pair's own two-sided bootstrap-t p-value (as in `paired`)."""
    p_adjusted: float
    """Romano-Wolf step-down adjusted p-value: the family-wise error of calling this pair
    (and every pair with a smaller one) different."""
    p_holm: float
    """Holm's adjusted p-value, for comparison (never below `p_adjusted` in practice)."""
    simultaneous_ci_low: float
    """Lower end of the difference's simultaneous interval: all pairs' intervals hold
    together with the family's confidence (max-|t| quantile)."""
    simultaneous_ci_high: float
    """Upper end of the simultaneous interval."""
    verdict: Literal["a_better", "b_better", "tied"]
    """"a_better" / "b_better" when `p_adjusted` is below `level`, else "tied"."""


class ModelGroups(Record):
    """Which models differ: `model_groups[TASK][DECODING][METRIC]` in results.json (runs
    with at least three models, every plan alike: with two, `paired` says it all)."""

    model_config = ConfigDict(frozen=True)

    statistic: str
    """The statistic compared: "sharpe"."""
    correction: str
    """The multiple-comparison correction, in words (`hakari.aggregate.multiple`)."""
    level: float
    """The family-wise error level of the verdicts and groups, e.g. 0.05."""
    scores: dict[str, float]
    """Model -> its Sharpe score (the published point estimate)."""
    tests: list[GroupTest]
    """Every pair of models, in run order."""
    groups: list[list[str]]
    """Maximal sets of models with no significant difference between any two, each best
    first, ordered by their best member: models in no common group differ."""
    estimated: bool
    """True when the scores were estimated from part of the grid (a budgeted run)."""
    groups_cut: bool = False
    """True when `groups` stops at `aggregate.multiple.MAX_GROUPS` (1,000): the ties
    formed more maximal groups than that (the tests above still hold every pair)."""
