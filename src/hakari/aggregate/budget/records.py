"""The budget's records in results.json (`budget.design`, `budget.estimator`), kept apart
from the estimator so that reading a results.json does not import scipy."""

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
