"""What a budgeted run did on one task × decoding: `budget` of a decoding in results.json
(the design, the estimator, the rounds). Computed by `hakari.aggregate.budget` and the
runner; typed here so that reading a results.json does not import scipy."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, model_validator

from hakari._util.records import Record, read_from_file


class DesignRecord(Record):
    """Which part of a task's grid a budgeted run evaluated (`budget.design`)."""

    name: str
    """The design: "balanced-levels" (`hakari.aggregate.budget.design`)."""
    seed: int
    """The seed of the design's order (the run's `--seed`): the same cells for every model."""
    cells_run: int
    """Template × instance cells evaluated."""
    grid_size: int
    """Cells of the full grid: templates × instances."""
    fraction: float
    """`cells_run / grid_size`."""

    @model_validator(mode="after")
    def _within_the_grid(self, info: ValidationInfo) -> DesignRecord:
        # a hand-edited record printed "estimated from 520000000% of the grid"
        if not read_from_file(info):
            return self
        if self.grid_size < 1 or not 0 <= self.cells_run <= self.grid_size:
            raise ValueError(
                f"cells_run {self.cells_run} is not within the grid of {self.grid_size} "
                "cells: a damaged or hand-edited budget record"
            )
        if abs(self.fraction - self.cells_run / self.grid_size) > 1e-6:
            raise ValueError(
                f"fraction {self.fraction} is not cells_run / grid_size "
                f"({self.cells_run} / {self.grid_size}): a damaged or hand-edited budget record"
            )
        return self


class MetricEstimatorRecord(Record):
    """Which estimator made one metric's numbers, and the check that chose it
    (`budget.estimator.metrics[METRIC]`; `hakari.aggregate.budget.fallback`)."""

    used: str
    """"latent-class multiple imputation", or "design-weighted cell mean" (the cells run
    and their design alone, where the imputation does not fit)."""
    reason: str
    """Why: "fits" (the imputation passed both checks), "instances uninformative" (no
    model predicted held-out cells from their instances' other cells better than from
    their template and gold label alone), "mean departs" (the imputed mean lay further
    from the design-weighted mean of the cells run than that mean's 99% interval allows),
    or "not a mean of item scores" (MCC, Pearson, Spearman: only the imputation
    estimates them)."""
    imputed_mean: float
    """The imputation's mean over templates."""
    design_mean: float | None
    """The design-weighted mean of the cells run (null for a metric that is not a mean of
    item scores)."""
    design_se: float | None
    """Its design-based standard error."""
    design_df: float | None
    """Its degrees of freedom (Student's t)."""


class EstimatorRecord(Record):
    """How a budgeted run's numbers were estimated (`budget.estimator`)."""

    name: str
    """The estimator: "latent-class multiple imputation" (`hakari.aggregate.budget`); from
    version 4 with its checks and its fallback, the design-weighted cell mean, where the
    imputation does not fit: `metrics` says which made each metric's numbers, and why; from
    version 5 that fallback's point estimate is the plain mean of the cells run (each
    instance's mean, per gold label, weighted by the labels' shares)."""
    version: int
    """Its version: numbers of one version are comparable with each other."""
    model: str
    """The completion model used: "stratified" or "latent-K" (K latent classes)."""
    held_out_log_score: dict[str, float]
    """Model -> its mean log predictive probability of held-out cells, which chose the
    model (empty when no instance was seen twice: the stratified model is used)."""
    imputations: int
    """Completed grids drawn (the multiple imputations behind every number)."""
    cells_observed: int
    """Cells the estimate was made from."""
    instance_evidence: float | None = None
    """How far (in standard errors, capped at 1000) the best latent model predicted
    held-out cells better than the stratified one: below 2, an instance's other cells
    tell nothing the imputation can use (null when no instance was seen twice; absent
    before version 4)."""
    pooled_share: float | None = None
    """How much of the unseen cells' calibration rests on the model's prior rather than
    on each template's own cells run in the gold label (0: none; absent before version
    4). Above 0.25 with instance_evidence below 2, the imputation has nothing to stand on
    and the metrics that are means of item scores fall back to the design-weighted cell
    mean."""
    metrics: dict[str, MetricEstimatorRecord] = Field(default_factory=dict)
    """Metric -> which estimator made its numbers and why (absent before version 4)."""


class BudgetRound(Record):
    """One round of a budgeted or sequential run of a task × decoding."""

    WRITTEN_WHEN_GIVEN = frozenset({"max_p_adjusted"})

    cells: int
    """Cells run after this round (cumulative)."""
    fraction: float
    """`cells` over the grid's cells."""
    sharpe_ci_half_width: dict[str, dict[str, float | None]]
    """Model -> metric -> half the width of its Sharpe interval after this round (null
    without a bootstrap)."""
    max_p_adjusted: float | None = None
    """Several models: the largest corrected p-value of a pair after this round (the pair
    furthest from decided)."""


class BudgetRecord(Record):
    """What a budgeted run did on one task × decoding: `budget` of the decoding."""

    budget: str | None
    """`--budget` as given ("2x", "0.1", "5000"); null: up to the full grid."""
    target_ci: float | None
    """`--target-ci`: the Sharpe half-width that stops the rounds; null if not asked."""
    until_decided: bool
    """`--until-decided`: rounds until every pair of models differs."""
    design: DesignRecord
    """Which cells ran (the balanced design) and how many of the grid's."""
    estimator: EstimatorRecord
    """How the numbers were estimated from them."""
    stopped: str
    """Why the rounds ended: "budget" (the cells bought), "grid_full", "target_ci",
    "decided" (or both, joined by "+"), or "interrupted" (a later model failed: the
    numbers are estimated from the cells run so far)."""
    rounds: list[BudgetRound]
    """Each round, in order."""
    decision_level: float | None
    """`--until-decided`: the level a pair had to reach at a round (0.05 over the number
    of rounds the run could have: Bonferroni over the looks); null otherwise."""
