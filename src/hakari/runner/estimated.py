"""The numbers of a budgeted or sequential run, made from the cells each model ran: the
observed cells as the completion model reads them (`answer_grid`), every model's
estimates (`estimate_models`), every pair's comparison with the multiple-comparison
correction (`compare_models`), and the stopping rule read from them (`stop_reason`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from hakari.aggregate.budget.estimate import (
    BudgetComparison,
    BudgetEstimate,
    Completion,
    compare,
    estimate,
)
from hakari.aggregate.budget.grid import AnswerGrid, label_grid, number_grid, score_grid
from hakari.aggregate.intervals import DEFAULT_CI_METHOD, Replicates
from hakari.aggregate.multiple import AdjustedTest, adjust
from hakari.results import BudgetRound
from hakari.runner.aggregation import metric_options
from hakari.runner.collect import CellsCollected
from hakari.runner.options import RunOptions
from hakari.runner.plan import Plan, TaskPlan, enough_replicates, half_width, usable_interval
from hakari.scoring import corpus
from hakari.tasks.space import template_levels as space_template_levels

Estimates = dict[str, dict[str, BudgetEstimate]]  # model -> metric -> estimate


@dataclass
class Outcome:
    """The estimates of one task × decoding for every model, and why it stopped."""

    estimates: Estimates
    completions: dict[str, Completion]
    comparisons: dict[str, list[BudgetComparison]]  # metric -> pairs
    adjusted: dict[str, list[AdjustedTest]]  # metric -> pairs, Sharpe, corrected
    stopped: str = ""


def answer_grid(tp: TaskPlan, cells: CellsCollected, opts: RunOptions) -> AnswerGrid:
    """The observed cells of one model as the completion model reads them."""
    spec = tp.task.spec
    index = {p: k for k, p in enumerate(tp.positions)}
    if spec.answer_type == "label":
        answers: dict[str, dict[int, Any]] = {tid: {} for tid in tp.template_ids}
        for (tid, position), answer in cells.answers.items():
            answers[tid][index[position]] = answer
        return label_grid(tp.template_ids, answers, tp.golds, list(spec.labels or ()))
    shape = (len(tp.template_ids), len(tp.positions))
    t_of = {tid: t for t, tid in enumerate(tp.template_ids)}
    if spec.answer_type == "number":
        values = np.full(shape, np.nan)
        for (tid, position), answer in cells.answers.items():
            values[t_of[tid], index[position]] = float(answer)
        return number_grid(tp.template_ids, values, tp.golds)
    item_scores: dict[str, np.ndarray] = {}
    for metric in map(str, spec.metrics):
        scores = np.full(shape, np.nan)
        for tid in tp.template_ids:
            run = [(index[p], a) for (t, p), a in cells.answers.items() if t == tid]
            if not run:
                continue
            rows = [k for k, _ in run]
            values_t = corpus.per_item_scores(
                metric,
                [a for _, a in run],
                [tp.golds[k] for k in rows],
                **metric_options(tp.task, metric, opts),
            )
            assert values_t is not None  # checked by plan.check_task_fits
            scores[t_of[tid], rows] = values_t
        item_scores[metric] = scores
    return score_grid(tp.template_ids, item_scores, tp.golds)


def estimate_models(
    tp: TaskPlan, cells: dict[str, CellsCollected], opts: RunOptions
) -> tuple[Estimates, dict[str, Completion]]:
    metrics = [str(m) for m in tp.task.spec.metrics]
    options = {m: metric_options(tp.task, m, opts) for m in metrics}
    estimates, completions = {}, {}
    for model, collected in cells.items():
        estimates[model], completions[model] = estimate(
            answer_grid(tp, collected, opts),
            metrics,
            alpha=opts.alpha,
            n_boot=opts.n_boot,
            seed=opts.seed,
            metric_options=options,
            template_levels=template_levels(tp),
        )
    return estimates, completions


def template_levels(tp: TaskPlan) -> dict[str, dict[str, str]]:
    """The templates' levels on their prompt space's dimensions (`Template.levels`), the
    estimator's template covariates; empty for templates written one by one."""
    return space_template_levels(tp.task.spec, tp.template_ids)


def compare_models(
    estimates: Estimates, n_boot: int
) -> tuple[dict[str, list[BudgetComparison]], dict[str, list[AdjustedTest]]]:
    models = list(estimates)
    comparisons: dict[str, list[BudgetComparison]] = {}
    adjusted: dict[str, list[AdjustedTest]] = {}
    if len(models) < 2:
        return comparisons, adjusted
    for metric in estimates[models[0]]:
        pairs = [
            compare(a, estimates[a][metric], b, estimates[b][metric])
            for a, b in itertools.combinations(models, 2)
        ]
        comparisons[metric] = pairs
        if n_boot > 0:
            adjusted[metric] = adjust_pairs(pairs)
    return comparisons, adjusted


def adjust_pairs(pairs: list[BudgetComparison]) -> list[AdjustedTest]:
    return adjust(
        [(c.model_a, c.model_b) for c in pairs],
        [c.statistics["sharpe"].replicates for c in pairs],
        [c.statistics["sharpe"].replicates.p_value() for c in pairs],
    )


def outcome_of(tp: TaskPlan, cells: dict[str, CellsCollected], opts: RunOptions) -> Outcome:
    """Every model's estimates of one task × decoding and every pair's comparison."""
    estimates, completions = estimate_models(tp, cells, opts)
    comparisons, adjusted = compare_models(estimates, opts.n_boot)
    return Outcome(estimates, completions, comparisons, adjusted)


def stop_reason(plan: Plan, outcome: Outcome, decision_level: float) -> str | None:
    """Which criterion stopped this task × decoding (None: keep going). A degenerate
    interval never stops a run (`plan.usable_interval`)."""
    if not plan.sequential:
        return None
    sharpe = [e.stats for per_metric in outcome.estimates.values() for e in per_metric.values()]
    if not sharpe or not all(
        usable_interval(s.sharpe, s.sharpe_ci_low, s.sharpe_ci_high)
        and enough_replicates(s.n_boot, s.confidence)
        for s in sharpe
    ):
        return None
    reasons = []
    if plan.target_ci is not None:
        widths = [half_width(s.sharpe_ci_low, s.sharpe_ci_high) or 0.0 for s in sharpe]
        if max(widths) > plan.target_ci:
            return None
        reasons.append("target_ci")
    if plan.until_decided:
        tests = [t for per_metric in outcome.adjusted.values() for t in per_metric]
        differences = [
            c.statistics["sharpe"].replicates
            for pairs in outcome.comparisons.values()
            for c in pairs
        ]
        if not tests or any(t.p_romano_wolf >= decision_level for t in tests):
            return None
        if not all(_usable_difference(d) for d in differences):
            return None
        reasons.append("decided")
    return "+".join(reasons)


def _usable_difference(replicates: Replicates) -> bool:
    low, high = replicates.interval(DEFAULT_CI_METHOD, 0.95)
    return usable_interval(replicates.point, low, high)


def round_log(cells: int, tp: TaskPlan, outcome: Outcome) -> BudgetRound:
    half_widths = {
        model: {
            metric: half_width(e.stats.sharpe_ci_low, e.stats.sharpe_ci_high)
            for metric, e in per_metric.items()
        }
        for model, per_metric in outcome.estimates.items()
    }
    log = BudgetRound(cells=cells, fraction=cells / tp.grid_size, sharpe_ci_half_width=half_widths)
    if outcome.adjusted:
        log.max_p_adjusted = max(
            t.p_romano_wolf for tests in outcome.adjusted.values() for t in tests
        )
    return log
