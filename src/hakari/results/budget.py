"""What a budgeted run did on one task × decoding: `budget` of a decoding in results.json
(the design, the estimator, the rounds). Computed by `hakari.aggregate.budget` and the
runner; typed here so that reading a results.json does not import scipy."""

from __future__ import annotations

from hakari._util.records import Record


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


class EstimatorRecord(Record):
    """How a budgeted run's numbers were estimated (`budget.estimator`)."""

    name: str
    """The estimator: "latent-class multiple imputation" (`hakari.aggregate.budget`)."""
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
