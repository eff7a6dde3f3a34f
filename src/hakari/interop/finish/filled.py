"""`--fill`: the missing cells of an imported grid estimated by the runner's imputed
estimator, as a budgeted run estimates the cells it did not run (part of the finisher,
`finish`).

Every item of the task is kept; each model × task × decoding's observed cells are
completed as a grid of per-item scores (a source's scores, or the per-item scores of
accuracy, exact match, F1 from answers and golds) by multiple imputation
(`estimators.Imputed`, with the templates' levels as covariates), finished by the one
finisher and compared by the one comparisons function. Every number is marked estimated,
with a `budget` record saying how many cells were observed ("stopped": "imported"),
exactly as `hakari report` shows a budgeted run's.

Corpus metrics that are no mean of per-item scores (MCC, Pearson, Spearman) cannot be
filled this way: `--fill` refuses them in one line.
"""

from __future__ import annotations

from hakari.errors import HakariInputError
from hakari.interop.cells import GridKey, ImportedGrid
from hakari.interop.finish.prepare import (
    Finished,
    Prepared,
    Settings,
    prepare,
    scorer_names,
    scoring_error,
    task_items,
)
from hakari.results import BudgetRound, ModelResult, TaskResult
from hakari.runner.estimators import (
    BudgetRun,
    Imputed,
    ModelEstimate,
    compare_models,
    finish_model,
)
from hakari.runner.stopping import half_width
from hakari.scoring import corpus

STOPPED = "imported"  # the budget record's reason: the cells the source had
DESIGN = "imported cells"  # which cells ran: the ones the source had


def finish_filled(grid: ImportedGrid, settings: Settings) -> Finished:
    out = Finished()
    scorers = scorer_names(grid)
    items_of = task_items(grid)
    prepared: dict[GridKey, Prepared] = {}
    estimates: dict[GridKey, ModelEstimate] = {}
    for key in grid.keys():
        model, task, decoding = key
        prep, dropped = prepare(grid, key, items_of[task], scorers, every_item=True)
        if dropped is not None:
            out.dropped.append(dropped)
        out.items[key] = prep.items
        _check_fillable(grid, key, prep)
        try:
            estimates[key] = Imputed().estimate(prep.grid, prep.cells, settings.options)
        except ValueError as exc:
            raise scoring_error(task, exc) from None
        prepared[key] = prep
    for key, prep in prepared.items():
        model, task, decoding = key
        estimate = estimates[key]
        result = finish_model(
            prep.grid, prep.cells, estimate, Imputed(_run(key, prep, estimate, settings))
        )
        tasks = out.models.setdefault(model, ModelResult(identity=grid.identities[model])).tasks
        if task not in tasks:
            tasks[task] = TaskResult(
                language=grid.tasks[task].language,  # type: ignore[arg-type]
                n_instances=len(out.items[key]),
                metrics=[m.key for m in grid.tasks[task].metrics],
            )
        tasks[task].decodings[decoding] = result
    by_task: dict[tuple[str, str], dict[str, ModelEstimate]] = {}
    for (model, task, decoding), estimate in estimates.items():
        by_task.setdefault((task, decoding), {})[model] = estimate
    for (task, decoding), per_model in by_task.items():
        made = compare_models(per_model, Imputed())
        if made.pairs:
            out.paired.setdefault(task, {})[decoding] = made.records()
        if made.groups:
            out.groups.setdefault(task, {})[decoding] = made.groups
    return out


def _check_fillable(grid: ImportedGrid, key: GridKey, prep: Prepared) -> None:
    model, task, _ = key
    info = grid.tasks[task]
    if prep.templates != list(info.templates):
        missing = [t for t in info.templates if t not in prep.templates]
        raise HakariInputError(
            f"model {model!r}, task {task!r} has no cell of template {missing[0]!r}: "
            "--fill estimates missing cells of templates that have some, not whole templates",
            field="--fill",
        )
    for metric in prep.grid.metrics:
        if not corpus.get(metric.scorer).per_item:
            raise HakariInputError(
                f"{metric.scorer} is not a mean of per-item scores: --fill cannot estimate its "
                "missing cells (import without --fill: the items every template has)",
                field="--fill",
            )


def _run(key: GridKey, prep: Prepared, estimate: ModelEstimate, settings: Settings) -> BudgetRun:
    """What the `budget` record says of an imported grid: the cells the source had, one
    round."""
    observed, size = estimate.cells_run, prep.grid.size
    half = {
        key[0]: {
            metric: half_width(m.stats.sharpe_ci_low, m.stats.sharpe_ci_high)
            for metric, m in estimate.metrics.items()
        }
    }
    return BudgetRun(
        design=DESIGN,
        seed=settings.seed,
        stopped=STOPPED,
        rounds=(BudgetRound(cells=observed, fraction=observed / size, sharpe_ci_half_width=half),),
    )
