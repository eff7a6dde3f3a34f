"""The imputed estimator: cells are missing (a budgeted or sequential run, an import with
gaps), so the grid is completed by multiple imputation and every number is computed on
the completed grids (`hakari.aggregate.budget.estimate`, called as it is), marked as
estimated, with the `budget` record of how the cells came to be run (`BudgetRun`).

What the completion model reads (`answer_grid`): the answers themselves for label and
numeric tasks; for free text, and whenever a metric's per-item scores are given by a
source, the grid of per-item scores (every metric must then be a mean of per-item scores:
`cannot_estimate`).

The one decision a reader must know: a metric key scored by a registered metric of
another name (an import's `acc_norm` by `given_score`) is estimated on a view of the same
completed grids whose score column bears the scorer's name, so every metric of a model
shares one completion, however its key is spelt.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from hakari.aggregate.budget.estimate import BudgetEstimate, Completion, compare, estimate
from hakari.aggregate.budget.grid import AnswerGrid, label_grid, number_grid, score_grid
from hakari.results import BudgetRecord
from hakari.results.budget import DesignRecord, MetricEstimatorRecord
from hakari.runner.estimators.base import BudgetRun, MetricEstimate, ModelEstimate, Pair
from hakari.runner.estimators.grid import Cells, FinishOptions, GridMetric, GridTask
from hakari.scoring import corpus


def cannot_estimate(answer_type: str, scorers: Sequence[str], given: bool = False) -> str | None:
    """Why the imputed estimator cannot estimate a grid of these metrics (None: it can).
    Label and numeric answers are completed as answers, so any metric works; free text
    and given scores are completed as per-item scores, which only means of per-item
    scores (EM, F1, accuracy, given scores) are."""
    if answer_type != "text" and not given:
        return None
    for scorer in scorers:
        if not corpus.get(scorer).per_item:
            what = "free-text task" if answer_type == "text" else "grid with given scores"
            return f"metric {scorer!r} of a {what} is not a mean of per-item scores"
    return None


def answer_grid(grid: GridTask, cells: Cells) -> AnswerGrid:
    """The observed cells of one model as the completion model reads them."""
    index = {item: k for k, item in enumerate(grid.items)}
    t_of = {tid: t for t, tid in enumerate(grid.template_ids)}
    shape = (len(grid.template_ids), len(grid.items))
    given = any(m.given for m in grid.metrics)
    if grid.answer_type == "label" and not given:
        answers: dict[str, dict[int, Hashable]] = {tid: {} for tid in grid.template_ids}
        for (tid, item), answer in cells.answers.items():
            answers[tid][index[item]] = answer
        return label_grid(grid.template_ids, answers, grid.golds, list(grid.labels))
    if grid.answer_type == "number" and not given:
        values = np.full(shape, np.nan)
        for (tid, item), answer in cells.answers.items():
            values[t_of[tid], index[item]] = float(answer)
        return number_grid(grid.template_ids, values, grid.golds)
    runs: dict[str, list[tuple[int, Any]]] = {tid: [] for tid in grid.template_ids}
    for tid, item in cells.answers:
        runs[tid].append((index[item], (tid, item)))
    item_scores = {m.key: _item_scores(grid, cells, m, runs, shape) for m in grid.metrics}
    return score_grid(grid.template_ids, item_scores, grid.golds)


def _item_scores(
    grid: GridTask,
    cells: Cells,
    metric: GridMetric,
    runs: dict[str, list[tuple[int, Any]]],
    shape: tuple[int, int],
) -> np.ndarray:
    """(T, N) item scores of one metric on the cells run, NaN elsewhere."""
    scores = np.full(shape, np.nan)
    given = cells.scores.get(metric.key, {}) if metric.given else None
    for t, tid in enumerate(grid.template_ids):
        run = runs[tid]
        if not run:
            continue
        rows = [k for k, _ in run]
        if given is not None:
            missing = [cell for _, cell in run if cell not in given]
            if missing:
                raise ValueError(
                    f"grid of task {grid.name!r}: cell {missing[0]!r} was run but has no "
                    f"given score of metric {metric.key!r}"
                )
            predictions = [given[cell] for _, cell in run]
        else:
            predictions = [cells.answers[cell] for _, cell in run]
        values = corpus.per_item_scores(
            metric.scorer, predictions, [grid.golds[k] for k in rows], **metric.options
        )
        assert values is not None  # `cannot_estimate` keeps corpus-level metrics out
        scores[t, rows] = values
    return scores


def scorer_groups(metrics: Sequence[GridMetric]) -> list[list[GridMetric]]:
    """The metrics in groups of distinct scorers (one group for a run's own metrics):
    each group is one call of the budget estimator."""
    groups: list[list[GridMetric]] = []
    for metric in metrics:
        group = next((g for g in groups if all(m.scorer != metric.scorer for m in g)), None)
        if group is None:
            groups.append([metric])
        else:
            group.append(metric)
    return groups


def _named_by_scorer(found: AnswerGrid, group: Sequence[GridMetric]) -> AnswerGrid:
    """The grid with each of the group's score columns named by its scorer (the other
    columns by names no scorer has): see the module docstring."""
    if found.kind != "score":
        return found
    scorer_of = {m.key: m.scorer for m in group}
    names = tuple(scorer_of.get(key, f"\x00{key}") for key in found.value_names)
    return dataclasses.replace(found, value_names=names)


def undefined_in_cells_run(grid: GridTask, cells: Cells, metric: GridMetric) -> dict[str, str]:
    """Template id -> why `metric` is undefined on the cells of it that ran (e.g. one
    answer in every cell run: a correlation without spread), `<why>_in_cells_run`. The
    completion fills its other cells, so its estimate is a number, but one resting on
    answers with no spread: named as a full run names its undefined templates."""
    if metric.given:
        return {}
    out: dict[str, str] = {}
    for tid in grid.template_ids:
        seen = [
            (cells.answers[(tid, item)], gold)
            for item, gold in zip(grid.items, grid.golds, strict=True)
            if (tid, item) in cells.answers
        ]
        if len(seen) < 2:
            continue
        answers, golds = [a for a, _ in seen], [g for _, g in seen]
        value = corpus.compute_detailed(metric.scorer, answers, golds, **dict(metric.options))
        if value.degenerate is not None:
            out[tid] = f"{value.degenerate}_in_cells_run"
    return out


class Imputed:
    """Cells are missing: every number estimated from completed grids, marked so."""

    estimated = True

    def __init__(self, run: BudgetRun | None = None) -> None:
        self.run = run  # what the `budget` record says of the cells run (needed to finish)

    def estimate(self, grid: GridTask, cells: Cells, options: FinishOptions) -> ModelEstimate:
        started = time.perf_counter()
        found = answer_grid(grid, cells)
        estimates: dict[str, BudgetEstimate] = {}
        chosen: dict[str, MetricEstimatorRecord] = {}
        completion: Completion | None = None
        for group in scorer_groups(grid.metrics):
            view = _named_by_scorer(found, group)
            made, completion = estimate(
                view,
                [m.scorer for m in group],
                alpha=options.alpha,
                n_boot=options.n_boot,
                seed=options.seed,
                metric_options={m.scorer: dict(m.options) for m in group},
                completion=None
                if completion is None
                else dataclasses.replace(completion, grid=view),
                template_levels={tid: dict(levels) for tid, levels in grid.levels.items()},
            )
            estimates |= {m.key: made[m.scorer] for m in group}
            chosen |= {m.key: completion.estimators[m.scorer] for m in group}
        assert completion is not None
        # which estimator made each metric's numbers, by results.json key (the groups'
        # records are by scorer, and two keys may share one: acc and acc_norm given)
        completion = dataclasses.replace(completion, estimators=chosen)
        metrics = {
            m.key: self._metric(
                m, estimates[m.key], options, undefined_in_cells_run(grid, cells, m)
            )
            for m in grid.metrics
        }
        seconds = time.perf_counter() - started
        return ModelEstimate(metrics, len(cells.answers), seconds, completion.record())

    @staticmethod
    def _metric(
        metric: GridMetric, est: BudgetEstimate, options: FinishOptions, undefined: dict[str, str]
    ) -> MetricEstimate:
        bootstrap = options.n_boot > 0
        return MetricEstimate(
            metric,
            est.per_template,
            est.stats,
            template_grid_ci=est.per_template_ci,
            replicates=est.scores if bootstrap else None,
            confidence=est.confidence,
            ci_method=est.ci_method,
            compared=est if bootstrap else None,
            undefined=undefined,
        )

    def compare(self, model_a: str, a: MetricEstimate, model_b: str, b: MetricEstimate) -> Pair:
        comparison = compare(model_a, a.compared, model_b, b.compared)
        return Pair(comparison.record(), comparison.statistics["sharpe"].replicates)

    def budget(self, grid: GridTask, estimate: ModelEstimate) -> BudgetRecord:
        run = self.run
        if run is None or estimate.completion is None:
            raise ValueError("an estimated grid's results need its BudgetRun (Imputed(run))")
        cells = min(estimate.cells_run, grid.size)
        return BudgetRecord(
            budget=run.budget,
            target_ci=run.target_ci,
            until_decided=run.until_decided,
            design=DesignRecord(
                name=run.design,
                seed=run.seed,
                cells_run=cells,
                grid_size=grid.size,
                fraction=cells / grid.size,
            ),
            estimator=estimate.completion,
            stopped=run.stopped,
            rounds=list(run.rounds),
            decision_level=run.decision_level,
        )
