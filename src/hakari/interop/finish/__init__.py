"""Imported cells → the numbers of results.json, through the runner's one finisher.

The only part of `hakari.interop` that computes statistics, and it computes none itself:
each model × task × decoding becomes the runner's `GridTask` and `Cells` (`prepare`), and
`hakari.runner.estimators` makes every number — `Direct` (the items every template has)
or `Imputed` (`--fill`, `filled`), `finish_model` for a model's templates, aggregates,
prompt-space attribution and counters, `compare_models` for the paired verdicts and the
groups (`compare`), `alpha_sweeps` — exactly as for a native run.

What this package decides (the rules `hakari import` states in docs/import.md):

* **Which items a model's statistics use.** By default the items every template of that
  model × task has (the rest are counted and named in `imported.dropped`); with `fill`
  every item of the task, the missing cells estimated by the budget estimator and every
  number marked estimated.
* **Comparisons on shared items only.** Models with the same items (and templates) are
  compared on their own bootstraps, as in a native run. Models whose items differ are
  compared pairwise on the items both have, re-bootstrapped on those; a pair with fewer
  than `min_shared` shared items is not compared, and a note says so. Model groups (three
  models or more) use the items all of them share.
* **A source's per-item score** (lm-eval's `acc`, an inspect scorer, a table's `score`)
  is scored as the mean of the per-item scores (`given_score`), with the same vectorised
  bootstrap as a native accuracy; its intervals are cut to [0, 1] when every score of
  that metric lies in [0, 1], else not cut (`given_mean`).
"""

from __future__ import annotations

from hakari.interop.cells import GridKey, ImportedGrid
from hakari.interop.finish.compare import compare
from hakari.interop.finish.prepare import (
    MIN_SHARED_ITEMS,
    Finished,
    Prepared,
    Settings,
    prepare,
    scorer_names,
    scoring_error,
    task_items,
)
from hakari.results import EvalResults, ModelResult, TaskResult
from hakari.runner.estimators import Direct, ModelEstimate, alpha_sweeps, finish_model

__all__ = ["MIN_SHARED_ITEMS", "Finished", "Settings", "finish", "publish_into"]


def finish(grid: ImportedGrid, settings: Settings) -> Finished:
    """Every model × task × decoding of `grid` scored, then compared."""
    if settings.fill:
        from hakari.interop.finish.filled import finish_filled

        return finish_filled(grid, settings)
    out = Finished()
    scorers = scorer_names(grid)
    items_of = task_items(grid)
    prepared: dict[GridKey, Prepared] = {}
    estimates: dict[GridKey, ModelEstimate] = {}
    for key in grid.keys():
        model, task, decoding = key
        info = grid.tasks[task]
        prep, dropped = prepare(grid, key, items_of[task], scorers)
        if dropped is not None:
            out.dropped.append(dropped)
        prepared[key] = prep
        out.items[key] = prep.items
        try:
            estimates[key] = Direct().estimate(prep.grid, prep.cells, settings.options)
        except ValueError as exc:  # a metric that cannot score these answers or scores
            raise scoring_error(task, exc) from None
        result = finish_model(prep.grid, prep.cells, estimates[key], Direct())
        task_result = out.models.setdefault(
            model, ModelResult(identity=grid.identities[model])
        ).tasks.get(task)
        if task_result is None:
            task_result = TaskResult(
                language=info.language,  # type: ignore[arg-type]
                n_instances=len(prep.items),
                metrics=[m.key for m in info.metrics],
            )
            out.models[model].tasks[task] = task_result
        task_result.decodings[decoding] = result
    compare(prepared, estimates, settings, out)
    return out


def publish_into(results: EvalResults, finished: Finished) -> None:
    """The models, comparisons, groups and alpha sweep into `results` (as a native run
    publishes them: the sweep and comparisons only with two models or more)."""
    results.models = finished.models
    if len(finished.models) > 1:
        results.paired = finished.paired or None
        if finished.groups:
            results.model_groups = finished.groups
        results.alpha_sweep = alpha_sweeps(results)
