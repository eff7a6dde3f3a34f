"""`--fill`: the missing cells of an imported grid estimated by the budget estimator, as a
budgeted run estimates the cells it did not run (part of the interim finisher, `finish`).

Every item of the task is kept; each model × task × decoding's observed cells become a
grid of per-item scores (`aggregate.budget.grid.score_grid`: a source's scores, or the
per-item scores of accuracy, exact match, F1 from answers and golds), completed by
multiple imputation (`aggregate.budget.estimate.estimate`, with the templates' levels as
covariates), compared pairwise on the same replicates, corrected for the number of pairs
(`runner.estimated.compare_models`, `runner.imputed.paired_items` / `group_items`). Every
number is marked estimated, with a `budget` record saying how many cells were observed
("stopped": "imported"), exactly as `hakari report` shows a budgeted run's.

Corpus metrics that are no mean of per-item scores (MCC, Pearson, Spearman) cannot be
filled this way: `--fill` refuses them in one line.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hakari.aggregate.budget.estimate import BudgetEstimate, Completion, estimate
from hakari.aggregate.budget.grid import score_grid
from hakari.errors import HakariInputError
from hakari.interop.cells import GridKey, ImportedGrid
from hakari.interop.finish.prepare import Finished, Settings, prepare, scorer_names, task_items
from hakari.results import (
    BudgetRecord,
    BudgetRound,
    DecodingResult,
    DesignRecord,
    ModelResult,
    TaskResult,
    TemplateResult,
)
from hakari.runner.estimated import Outcome, compare_models
from hakari.runner.imputed import group_items, paired_items
from hakari.runner.plan import half_width
from hakari.scoring import corpus

STOPPED = "imported"  # the budget record's reason: the cells the source had


def finish_filled(grid: ImportedGrid, settings: Settings) -> Finished:
    out = Finished()
    scorers = scorer_names(grid)
    items_of = task_items(grid)
    outcomes: dict[Any, Outcome] = {}  # (task, decoding): any decoding name of the source
    per_key: dict[GridKey, tuple[dict[str, BudgetEstimate], Completion, int, int]] = {}
    for key in grid.keys():
        model, task, decoding = key
        prep, dropped = prepare(grid, key, items_of[task], every_item=True)
        if dropped is not None:
            out.dropped.append(dropped)
        out.items[key] = prep.items
        info = grid.tasks[task]
        if prep.templates != list(info.templates):
            missing = [t for t in info.templates if t not in prep.templates]
            raise HakariInputError(
                f"model {model!r}, task {task!r} has no cell of template {missing[0]!r}: "
                "--fill estimates missing cells of templates that have some, not whole templates",
                field="--fill",
            )
        matrices = {
            scorers[(task, m.key)]: _item_scores(grid, key, prep, m.key, scorers)
            for m in info.metrics
        }
        observed = int((~np.isnan(next(iter(matrices.values())))).sum())
        answer_grid = score_grid(prep.templates, matrices, prep.golds)
        levels = {t: dict(v) for t, v in info.templates.items() if v}
        estimates, completion = estimate(
            answer_grid,
            list(matrices),
            alpha=settings.alpha,
            n_boot=settings.n_boot,
            seed=settings.seed,
            template_levels=levels or None,
        )
        renamed = {m.key: estimates[scorers[(task, m.key)]] for m in info.metrics}
        per_key[key] = (renamed, completion, observed, len(prep.templates) * len(prep.items))
    by_task: dict[tuple[str, str], dict[str, Any]] = {}
    for (model, task, decoding), (estimates, completion, _, _) in per_key.items():
        by_task.setdefault((task, decoding), {})[model] = (estimates, completion)
    for (task, decoding), per_model in by_task.items():
        by_model: dict[str, dict[str, BudgetEstimate]] = {m: e for m, (e, _) in per_model.items()}
        comparisons, adjusted = compare_models(by_model, settings.n_boot)
        outcomes[(task, decoding)] = Outcome(
            by_model, {m: c for m, (_, c) in per_model.items()}, comparisons, adjusted, STOPPED
        )
    for key, (estimates, completion, observed, size) in per_key.items():
        model, task, decoding = key
        result = _decoding(grid, key, estimates, completion, observed, size, settings)
        tasks = out.models.setdefault(model, ModelResult(identity=grid.identities[model])).tasks
        if task not in tasks:
            tasks[task] = TaskResult(
                language=grid.tasks[task].language,  # type: ignore[arg-type]
                n_instances=len(out.items[key]),
                metrics=[m.key for m in grid.tasks[task].metrics],
            )
        tasks[task].decodings[decoding] = result
    if settings.n_boot > 0:
        out.paired = {
            t: {
                d: [c.model_copy(update={"metric": _key(c.metric, t, scorers)}) for c in items]
                for d, items in per.items()
            }
            for t, per in paired_items(outcomes).items()
        }
        out.groups = {
            t: {
                d: {_key(m, t, scorers): g for m, g in per_metric.items()}
                for d, per_metric in per.items()
            }
            for t, per in group_items(outcomes).items()
        }
    return out


def _key(name: str, task: str, scorers: dict[tuple[str, str], str]) -> str:
    """A metric's results.json key (estimates are keyed by it already; comparisons by
    the estimate's own metric, the scorer)."""
    for (t, key), scorer in scorers.items():
        if t == task and name in (key, scorer):
            return key
    return name


def _item_scores(
    grid: ImportedGrid,
    key: GridKey,
    prep: Any,
    metric_key: str,
    scorers: dict[tuple[str, str], str],
) -> np.ndarray:
    """(templates, items) per-item scores of one metric, NaN where the cell is missing."""
    task = key[1]
    spec = next(m for m in grid.tasks[task].metrics if m.key == metric_key)
    rows = []
    for template in prep.templates:
        values = prep.predictions[metric_key][template]
        if not spec.from_answers:
            rows.append(np.array([float(v) for v in values], dtype=np.float64))
            continue
        scorer = scorers[(task, metric_key)]
        if not corpus.get(scorer).per_item:
            raise HakariInputError(
                f"{scorer} is not a mean of per-item scores: --fill cannot estimate its missing "
                "cells (import without --fill: the items every template has)",
                field="--fill",
            )
        present = [k for k, item in enumerate(prep.items) if item in grid.cells[key][template]]
        row = np.full(len(prep.items), np.nan)
        info = grid.tasks[task]
        options = (
            {"lang": info.language, "nfkc": info.qa_mode == "first-line"}
            if scorer in ("exact_match", "f1")
            else {}
        )
        scored = corpus.per_item_scores(
            scorer, [values[k] for k in present], [prep.golds[k] for k in present], **options
        )
        assert scored is not None
        row[present] = scored
        rows.append(row)
    return np.vstack(rows)


def _decoding(
    grid: ImportedGrid,
    key: GridKey,
    estimates: dict[str, BudgetEstimate],
    completion: Completion,
    observed: int,
    size: int,
    settings: Settings,
) -> DecodingResult:
    info = grid.tasks[key[1]]
    cells = grid.cells[key]
    result = DecodingResult()
    for template in info.templates:
        n = len(cells.get(template, {}))
        levels = info.templates[template]
        result.templates[template] = TemplateResult(
            metrics={m: e.per_template[template] for m, e in estimates.items()},
            fallback_rate=0.0,
            n=n,
            estimated=True,
            metrics_ci={m: list(e.per_template_ci[template]) for m, e in estimates.items()},
        )
        if levels:
            result.templates[template].levels = dict(levels)
    for metric, est in estimates.items():
        result.aggregate[metric] = est.stats
    half = {
        key[0]: {
            m: half_width(e.stats.sharpe_ci_low, e.stats.sharpe_ci_high)
            for m, e in estimates.items()
        }
    }
    result.budget = BudgetRecord(
        budget=None,
        target_ci=None,
        until_decided=False,
        design=DesignRecord(
            name="imported cells",
            seed=settings.seed,
            cells_run=observed,
            grid_size=size,
            fraction=observed / size,
        ),
        estimator=completion.record(),
        stopped=STOPPED,
        rounds=[BudgetRound(cells=observed, fraction=observed / size, sharpe_ci_half_width=half)],
        decision_level=None,
    )
    assert not math.isnan(result.budget.design.fraction)
    return result
