"""What an estimator is: a function from one model's cells of a grid to its numbers
(`ModelEstimate`: per metric the template scores, the aggregate, the intervals and what a
comparison reads), and the comparison of two models' numbers on the same grid (`Pair`).

Two estimators implement it: `direct.Direct` (every cell ran: the metrics on the answers,
the templates × instances bootstrap) and `imputed.Imputed` (cells are missing: the grid is
completed by multiple imputation, `hakari.aggregate.budget`). The finisher
(`finish.finish_model`, `compare.compare_models`) turns either into results.json's records,
so a number means the same whichever estimator made it, apart from its `estimated` marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hakari.aggregate.dimensions import TemplateDraws
from hakari.aggregate.intervals import Replicates
from hakari.results import AggregateStats, BudgetRecord, BudgetRound, TemplateInterval
from hakari.results.budget import EstimatorRecord
from hakari.results.paired import PairedComparison
from hakari.runner.estimators.grid import Cells, FinishOptions, GridMetric, GridTask


@dataclass(frozen=True, eq=False)
class MetricEstimate:
    """One model's numbers on one metric of a grid (with `replicates`, `confidence` and
    `ci_method`, the bootstrap a prompt space's intervals read: `dimensions.Bootstrapped`)."""

    metric: GridMetric
    per_template: dict[str, float]  # template id -> its score, in the grid's order
    stats: AggregateStats  # results.json's aggregate[METRIC]
    # each template's interval: over the instance resamples (a bootstrap ran), or of the
    # score the full grid would give (estimated)
    template_ci: dict[str, TemplateInterval] = field(default_factory=dict)
    template_grid_ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    replicates: TemplateDraws | None = None  # the aggregate's (None: no bootstrap)
    confidence: float | None = None
    ci_method: str | None = None
    compared: Any = None  # what `Estimator.compare` reads (None: not comparable)
    # template id -> why its metric is undefined there (`MetricValue.degenerate`: a
    # correlation or MCC of answers that are one value), counted as 0.0
    undefined: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ModelEstimate:
    """One model's numbers on every metric of a grid, from `cells_run` cells."""

    metrics: dict[str, MetricEstimate]  # metric key -> its numbers, in the grid's order
    cells_run: int
    seconds: float  # the estimator's time (added to the decoding's wall_s)
    completion: EstimatorRecord | None = None  # how missing cells were filled


@dataclass(frozen=True, eq=False)
class Pair:
    """Model A against model B on one metric: results.json's `paired` item and the
    replicates of the Sharpe difference (the correction over all pairs reads them)."""

    record: PairedComparison
    sharpe: Replicates


@dataclass(frozen=True)
class BudgetRun:
    """What a budgeted run did on one task × decoding, the same for every model (the
    parts of its `budget` record that are not per model). An importer that fills a grid
    with missing cells says here where they came from (`design`) and why they stop."""

    design: str  # which cells ran: "balanced-levels" (`aggregate.budget.design`)
    seed: int  # the seed of the design's order
    stopped: str  # why the rounds ended ("budget", "grid_full", ... `runner.stopping`)
    budget: str | None = None  # `--budget` as given
    target_ci: float | None = None
    until_decided: bool = False
    rounds: Sequence[BudgetRound] = ()
    decision_level: float | None = None  # `--until-decided`: the level of one look


class Estimator(Protocol):
    """Cells → numbers, and two models' numbers → their comparison (module docstring)."""

    @property
    def estimated(self) -> bool:
        """Whether its numbers are estimated from part of the grid (marked so in
        results.json, with the `budget` record)."""

    def estimate(self, grid: GridTask, cells: Cells, options: FinishOptions) -> ModelEstimate:
        """One model's numbers on every metric of `grid`."""

    def compare(self, model_a: str, a: MetricEstimate, model_b: str, b: MetricEstimate) -> Pair:
        """A − B on one metric; both `compared` (from the same cells and seed)."""

    def budget(self, grid: GridTask, estimate: ModelEstimate) -> BudgetRecord | None:
        """The decoding's `budget` record (None: every cell ran)."""
