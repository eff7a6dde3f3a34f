"""Cells → numbers → results.json: the estimators and the one finisher, for a run and for
results imported from another harness alike.

Modules: `grid.py` (what the estimators read: `GridTask`, a task's view without prompts,
`task_grid` makes it from a hakari `Task`; `Cells`, one model's answers by (template,
item), fallbacks, given per-item scores and counters; `FinishOptions`), `base.py` (the
`Estimator` protocol, `ModelEstimate`, `Pair`, `BudgetRun`), `direct.py` (every cell ran:
metrics on the answers, the templates × instances bootstrap), `imputed.py` (cells are
missing: multiple imputation, `hakari.aggregate.budget`), `finish.py` (the one finisher:
templates, aggregate, `space`, counters, `estimated` marks, `budget`; `finish_grid`),
`compare.py` (between models: `paired`, `model_groups` under one rule, the alpha sweep).

The importer's entry point is `finish_grid(grid, {model: cells}, estimator, options) ->
GridResult` (each model's `DecodingResult`, the `paired` items, the `model_groups`).
Build a `GridTask` by hand — `GridMetric(key, scorer, options)` per metric: a source's
per-item scores (lm-evaluation-harness's `acc_norm`, a table's `score`) are
`GridMetric("acc_norm", "given_score")` with the scores in `Cells.scores["acc_norm"]`;
answers hakari scores itself are `GridMetric("accuracy", "accuracy")` with
`Cells.answers` —, one `Cells` per model, and choose the estimator: `Direct()` for a
complete grid (`direct.missing_cells` is 0), `Imputed(BudgetRun(design=..., seed=...,
stopped=...))` to fill a grid with missing cells (first ask `imputed.cannot_estimate`).
`FinishOptions(alpha, n_boot, seed)` are the statistics' options. The numbers are the
ones a native run of the same answers writes, to the last bit. The caller then places
`decodings[model]` under `models[MODEL].tasks[TASK].decodings[DECODING]` of its
`EvalResults`, `paired` and `model_groups` (when not empty) under `[TASK][DECODING]`, and
sets `alpha_sweep` with `compare.alpha_sweeps(results)` once every grid is in.
"""

from __future__ import annotations

from hakari.runner.estimators.base import (
    BudgetRun,
    Estimator,
    MetricEstimate,
    ModelEstimate,
    Pair,
)
from hakari.runner.estimators.compare import (
    GROUPS_FROM,
    MAX_COMPARED_MODELS,
    Comparisons,
    alpha_sweeps,
    check_compared_models,
    compare_models,
)
from hakari.runner.estimators.direct import Direct, MissingCells, missing_cells
from hakari.runner.estimators.finish import GridResult, finish_grid, finish_model
from hakari.runner.estimators.grid import (
    Cell,
    Cells,
    FinishOptions,
    GridMetric,
    GridTask,
    Item,
    task_grid,
)
from hakari.runner.estimators.imputed import Imputed, cannot_estimate

__all__ = [
    "GROUPS_FROM",
    "MAX_COMPARED_MODELS",
    "BudgetRun",
    "Cell",
    "Cells",
    "Comparisons",
    "Direct",
    "Estimator",
    "FinishOptions",
    "GridMetric",
    "GridResult",
    "GridTask",
    "Imputed",
    "Item",
    "MetricEstimate",
    "MissingCells",
    "ModelEstimate",
    "Pair",
    "alpha_sweeps",
    "cannot_estimate",
    "check_compared_models",
    "compare_models",
    "finish_grid",
    "finish_model",
    "missing_cells",
    "task_grid",
]
