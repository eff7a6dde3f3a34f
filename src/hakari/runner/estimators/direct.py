"""The direct estimator: every cell of the grid ran, so each template's metric is computed
on its answers (or on the per-item scores a source gave) over every item, and the
aggregate's intervals come from the templates × instances bootstrap
(`aggregate.resampling`), whose replicates the paired comparisons reuse.

A grid with a missing cell is refused (`MissingCells`): the imputed estimator fills cells.
"""

from __future__ import annotations

import time
from typing import Any

from hakari import aggregate as agg
from hakari.aggregate import BootstrapResult
from hakari.results import BudgetRecord
from hakari.runner.estimators.base import MetricEstimate, ModelEstimate, Pair
from hakari.runner.estimators.grid import Cells, FinishOptions, GridMetric, GridTask
from hakari.scoring import corpus


class MissingCells(ValueError):
    """A grid given to the direct estimator lacks cells (answers or given scores)."""


def missing_cells(grid: GridTask, cells: Cells) -> int:
    """How many cells of the grid have no answer."""
    return sum((tid, item) not in cells.answers for tid in grid.template_ids for item in grid.items)


def predictions(grid: GridTask, cells: Cells, metric: GridMetric) -> dict[str, list[Any]]:
    """Template id → what `metric` scores on every item, in the grid's order: the
    answers, or the scores a source gave."""
    given = cells.scores.get(metric.key) if metric.given else None
    if metric.given and given is None:
        raise MissingCells(f"grid of task {grid.name!r}: no given scores of metric {metric.key!r}")
    values = given if given is not None else cells.answers
    out: dict[str, list[Any]] = {}
    for tid in grid.template_ids:
        try:
            out[tid] = [values[(tid, item)] for item in grid.items]
        except KeyError as exc:
            what = f"a given score of {metric.key!r}" if metric.given else "an answer"
            raise MissingCells(
                f"grid of task {grid.name!r}: cell {exc.args[0]!r} has no {what} "
                f"({missing_cells(grid, cells)} cells without an answer); the direct "
                "estimator needs every cell, the imputed one fills missing cells"
            ) from None
    return out


class Direct:
    """Every cell ran: the metrics on the answers, intervals from the bootstrap."""

    estimated = False

    def estimate(self, grid: GridTask, cells: Cells, options: FinishOptions) -> ModelEstimate:
        started = time.perf_counter()
        out = {m.key: self._metric(grid, cells, m, options) for m in grid.metrics}
        return ModelEstimate(out, len(cells.answers), time.perf_counter() - started)

    def _metric(
        self, grid: GridTask, cells: Cells, metric: GridMetric, options: FinishOptions
    ) -> MetricEstimate:
        preds = predictions(grid, cells, metric)
        golds = list(grid.golds)
        scorer, kw = metric.scorer, dict(metric.options)
        values = {tid: corpus.compute_detailed(scorer, p, golds, **kw) for tid, p in preds.items()}
        per_template = {tid: float(v.value) for tid, v in values.items()}
        undefined = {tid: v.degenerate for tid, v in values.items() if v.degenerate is not None}
        if options.n_boot == 0 or len(golds) < 2:
            return MetricEstimate(
                metric,
                per_template,
                agg.aggregate(per_template, alpha=options.alpha),
                undefined=undefined,
            )
        # the bootstrap's point estimates come from the same per-template scores its
        # replicates use
        boot = agg.bootstrap(
            preds,
            golds,
            scorer,
            alpha=options.alpha,
            n_boot=options.n_boot,
            seed=options.seed,
            **kw,
        )
        return MetricEstimate(
            metric,
            per_template,
            boot.stats,
            template_ci=boot.template_intervals(),
            replicates=boot.replicates,
            confidence=boot.confidence,
            ci_method=boot.ci_method,
            compared=boot,
            undefined=undefined,
        )

    def compare(self, model_a: str, a: MetricEstimate, model_b: str, b: MetricEstimate) -> Pair:
        boot_a, boot_b = a.compared, b.compared
        assert isinstance(boot_a, BootstrapResult) and isinstance(boot_b, BootstrapResult)
        record = agg.compare(model_a, boot_a, model_b, boot_b, a.metric.scorer)
        return Pair(record, record.replicates["sharpe"])

    def budget(self, grid: GridTask, estimate: ModelEstimate) -> BudgetRecord | None:
        return None
