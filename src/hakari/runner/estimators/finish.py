"""The one finisher: an estimator's numbers → results.json's records, whatever made the
cells (a run of any plan, an import) and whichever estimator read them.

`finish_model` builds one model's `DecodingResult`: the templates (score, fallback rate,
cells run, levels, intervals), the aggregate of every metric, the templates whose metric
is undefined (`undefined`: a correlation of answers that are one value, counted as 0.0,
never silently), the prompt space's record (`space`, when templates carry levels), every
counter of the cells, and, for estimated numbers, the `estimated` marks and the `budget`
record. `compare.compare_models` builds what lies between models. `finish_grid` does both
for a whole grid: the importer's entry point (see the package docstring).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from hakari.aggregate.dimensions import summarize
from hakari.results import DecodingResult, TemplateResult
from hakari.results.paired import ModelGroups, PairedComparison
from hakari.runner.estimators.base import Estimator, ModelEstimate
from hakari.runner.estimators.compare import compare_models
from hakari.runner.estimators.grid import Cells, FinishOptions, GridTask
from hakari.scoring import corpus

# the counters results.json writes only when not 0
OPTIONAL_COUNTERS = ("unencodable_answers", "unreadable_cache_rows", "refusals", "redacted_secrets")


def finish_model(
    grid: GridTask, cells: Cells, estimate: ModelEstimate, estimator: Estimator
) -> DecodingResult:
    """One model's results on the grid (see the module docstring)."""
    dec = DecodingResult()
    ran = Counter(tid for tid, _ in cells.answers)
    fell = Counter(tid for tid, _ in cells.fallbacks)
    for tid in grid.template_ids:
        dec.templates[tid] = _template(grid, tid, ran[tid], fell[tid], estimate, estimator)
    for key, metric in estimate.metrics.items():
        dec.aggregate[key] = metric.stats
        if metric.undefined:
            dec.undefined = {**(dec.undefined or {}), key: dict(metric.undefined)}
    _space(grid, dec, estimate, estimator)
    dec.generated, dec.cached = cells.generated, cells.cached
    for name in OPTIONAL_COUNTERS:
        value = getattr(cells, name)
        if value:
            setattr(dec, name, value)
    if cells.constraint_misses is not None:
        dec.constraint_misses = cells.constraint_misses
    dec.wall_s = round(cells.wall_s + estimate.seconds, 3)
    budget = estimator.budget(grid, estimate)
    if budget is not None:
        dec.budget = budget
    return dec


def _template(
    grid: GridTask, tid: str, n: int, fallbacks: int, estimate: ModelEstimate, estimator: Estimator
) -> TemplateResult:
    metrics = estimate.metrics.values()
    optional: dict[str, object] = {}
    if estimator.estimated:
        optional["estimated"] = True
        optional["metrics_ci"] = {m.metric.key: list(m.template_grid_ci[tid]) for m in metrics}
    ci = {m.metric.key: m.template_ci[tid] for m in metrics if tid in m.template_ci}
    if ci:
        optional["ci"] = ci
    levels = grid.template_levels(tid)
    if levels is not None:
        optional["levels"] = levels
    return TemplateResult(
        metrics={m.metric.key: m.per_template[tid] for m in metrics},
        fallback_rate=fallbacks / n if n else 0.0,
        n=n,
        **optional,  # type: ignore[arg-type]
    )


def _space(grid: GridTask, dec: DecodingResult, estimate: ModelEstimate, est: Estimator) -> None:
    """What a prompt space tells, from the same bootstrap as the aggregate (templates
    with levels only: a grid without a space writes nothing)."""
    levels = {tid: grid.template_levels(tid) for tid in grid.template_ids}
    for key, metric in estimate.metrics.items():
        boot = metric if metric.replicates is not None else None
        value_range = corpus.get(metric.metric.scorer).value_range
        space = summarize(metric.per_template, levels, boot, value_range)
        if space is None:
            continue
        if est.estimated:
            space = space.model_copy(update={"estimated": True})
        dec.space = {**(dec.space or {}), key: space}


@dataclass(frozen=True, eq=False)
class GridResult:
    """A grid finished: each model's `DecodingResult` (in the order given), results.json's
    `paired[TASK][DECODING]` and `model_groups[TASK][DECODING]` (metric key → groups)."""

    decodings: dict[str, DecodingResult]
    paired: list[PairedComparison]
    model_groups: dict[str, ModelGroups]


def finish_grid(
    grid: GridTask, cells: Mapping[str, Cells], estimator: Estimator, options: FinishOptions
) -> GridResult:
    """Every model's cells of one grid → their results and the comparisons between
    them, by the estimator given (`Direct()`: every cell ran; `Imputed(BudgetRun(...))`:
    cells are missing)."""
    estimates = {model: estimator.estimate(grid, c, options) for model, c in cells.items()}
    decodings = {
        model: finish_model(grid, cells[model], estimates[model], estimator) for model in cells
    }
    comparisons = compare_models(estimates, estimator)
    return GridResult(decodings, comparisons.records(), comparisons.groups)
