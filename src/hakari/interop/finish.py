"""Imported cells → the numbers of results.json, through the runner's own statistics.

INTERIM ADAPTER: the only module of `hakari.interop` that computes statistics. It feeds
the imported grid to today's runner functions (`runner.aggregation.score` per metric,
`paired_comparisons`, `model_groups`, `alpha_sweeps`; `--fill` through the budget
estimator `aggregate.budget.estimate`) until the runner's one finisher lands (issue 37),
which takes the same inputs: a typed task view (template ids with levels, item keys,
golds, metrics with their results.json key and scorer) and per-model cells. Nothing here
is a copy of a statistic: the bootstrap, the intervals, the attribution, the paired
verdicts and the groups are the runner's.

What this module decides (the rules `hakari import` states in docs/import.md):

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
  is scored as the mean of the per-item scores, with the same vectorised bootstrap as a
  native accuracy; its intervals are cut to [0, 1] when every score of that metric lies
  in [0, 1], else not cut.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from hakari.aggregate import BootstrapResult
from hakari.errors import HakariInputError
from hakari.interop.cells import MISSING, Cell, GridKey, ImportedGrid, MetricSpec, item_order
from hakari.results import DecodingResult, DroppedCells, EvalResults, ModelResult, TaskResult
from hakari.runner.aggregation import (
    BootstrapStore,
    alpha_sweeps,
    model_groups,
    paired_comparisons,
    score,
)
from hakari.runner.collect import Collected
from hakari.runner.options import RunOptions
from hakari.scoring.corpus.base import CorpusMetric, MetricOptions, MetricValue, register

MIN_SHARED_ITEMS = 10  # a paired comparison on fewer shared items is refused


# ------------------------------------------------------------------ interim source metric
class _SourceMean(CorpusMetric):
    """The mean of per-item scores a source gave (the predictions are the scores)."""

    answer_types = frozenset({"label", "number", "text"})
    description = "mean of the per-item scores given by the source"
    per_item = True

    def compute(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> MetricValue:
        return MetricValue(float(np.mean(np.asarray(predictions, dtype=np.float64))))

    def item_scores(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> np.ndarray:
        return np.asarray(predictions, dtype=np.float64)


@register
class _SourceMeanUnit(_SourceMean):
    name: ClassVar[str] = "interop_source_mean_unit"
    value_range = (0.0, 1.0)


@register
class _SourceMeanAny(_SourceMean):
    name: ClassVar[str] = "interop_source_mean"


# ------------------------------------------------------------------ the task view
@dataclass(frozen=True)
class _Template:
    id: str
    levels: dict[str, str] | None


@dataclass(frozen=True)
class _Spec:
    metrics: list[str]
    language: str
    templates: list[_Template]


@dataclass(frozen=True)
class _Task:
    spec: _Spec


@dataclass(frozen=True)
class Settings:
    """The statistics' settings (the same meaning and defaults as `hakari run`'s)."""

    alpha: float = 1.0
    n_boot: int = 1000
    seed: int = 0
    fill: bool = False
    min_shared: int = MIN_SHARED_ITEMS


@dataclass
class Finished:
    """What the finisher gives back: every model's results, the comparisons, and what
    was dropped or refused."""

    models: dict[str, ModelResult] = field(default_factory=dict)
    paired: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    groups: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    dropped: list[DroppedCells] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    items: dict[GridKey, list[str]] = field(default_factory=dict)  # items each key used


@dataclass
class _Prepared:
    """One model × task × decoding ready to score: templates, items, per metric the
    predictions per template, the golds, the fallbacks."""

    templates: list[str]
    items: list[str]
    predictions: dict[str, dict[str, list[Any]]]  # metric key -> template -> predictions
    golds: list[Any]
    fallbacks: dict[str, int]


def finish(grid: ImportedGrid, settings: Settings) -> Finished:
    """Every model × task × decoding of `grid` scored, then compared."""
    if settings.fill:
        from hakari.interop.filled import finish_filled

        return finish_filled(grid, settings)
    out = Finished()
    scorers = scorer_names(grid)
    task_items = _task_items(grid)
    prepared: dict[GridKey, _Prepared] = {}
    store: BootstrapStore = {}
    for key in grid.keys():
        model, task, decoding = key
        info = grid.tasks[task]
        prep, dropped = prepare(grid, key, task_items[task])
        if dropped is not None:
            out.dropped.append(dropped)
        prepared[key] = prep
        out.items[key] = prep.items
        result = DecodingResult()
        for metric in info.metrics:
            kept: dict[str, BootstrapResult] = {}
            part = _score_one(grid, key, prep, metric, scorers[(task, metric.key)], settings, kept)
            _merge(result, part)
            for boot in kept.values():
                store.setdefault((task, decoding), {}).setdefault(metric.key, {})[model] = boot
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
    _compare(grid, prepared, store, scorers, settings, out)
    return out


def scorer_names(grid: ImportedGrid) -> dict[tuple[str, str], str]:
    """(task, metric key) -> the registered scorer: the metric's own, or the source mean
    (cut to [0, 1] when every score of the metric lies there)."""
    out: dict[tuple[str, str], str] = {}
    for task, info in grid.tasks.items():
        for metric in info.metrics:
            if metric.scorer is not None:
                out[(task, metric.key)] = metric.scorer
                continue
            unit = all(
                0.0 <= cell.scores.get(metric.key, 0.0) <= 1.0
                for (_, t, _), per_template in grid.cells.items()
                if t == task
                for per_item in per_template.values()
                for cells in per_item.values()
                for cell in cells
            )
            out[(task, metric.key)] = _SourceMeanUnit.name if unit else _SourceMeanAny.name
    return out


def _task_items(grid: ImportedGrid) -> dict[str, list[str]]:
    """Every item any model has of each task, in canonical order."""
    seen: dict[str, dict[str, None]] = {}
    for (_, task, _), per_template in grid.cells.items():
        bucket = seen.setdefault(task, {})
        for per_item in per_template.values():
            bucket.update(dict.fromkeys(per_item))
    return {task: item_order(items) for task, items in seen.items()}


def prepare(
    grid: ImportedGrid, key: GridKey, task_items: list[str], *, every_item: bool = False
) -> tuple[_Prepared, DroppedCells | None]:
    """One model × task × decoding's templates and items (those every template has,
    unless `every_item`), each metric's predictions and the golds; the missing cells
    counted."""
    model, task, decoding = key
    info = grid.tasks[task]
    cells = grid.cells[key]
    templates = [t for t in info.templates if t in cells]
    present = set(task_items)
    common = set.intersection(*(set(cells[t]) for t in templates)) if templates else set()
    items = task_items if every_item else [i for i in task_items if i in common]
    missing_by_template = {
        t: len(present) - len(cells.get(t, {}))
        for t in info.templates
        if len(present) - len(cells.get(t, {})) > 0
    }
    dropped = None
    if missing_by_template:
        dropped = DroppedCells(
            model=model,
            task=task,
            decoding=decoding,
            missing_cells=sum(missing_by_template.values()),
            dropped_items=[] if every_item else [i for i in task_items if i not in common],
            missing_by_template=missing_by_template,
            filled=every_item,
        )
    _check_enough(grid, key, templates, items)
    predictions: dict[str, dict[str, list[Any]]] = {m.key: {} for m in info.metrics}
    fallbacks = dict.fromkeys(templates, 0)
    for template in templates:
        for metric in info.metrics:
            predictions[metric.key][template] = [
                _prediction(grid, key, template, item, metric) for item in items
            ]
        fallbacks[template] = sum(
            bool(_one(grid, key, template, item).extra.get("fallback"))
            for item in items
            if item in cells[template]
        )
    golds = [grid.gold(task, item) for item in items]
    return _Prepared(templates, items, predictions, golds, fallbacks), dropped


def _check_enough(grid: ImportedGrid, key: GridKey, templates: list[str], items: list[str]) -> None:
    model, task, _ = key
    for template in templates:
        per_item = grid.cells[key][template]
        if len(per_item) < 2:
            origin = next(iter(per_item.values()))[0].origin
            raise origin.error(
                f"template {template!r} of task {task!r} (model {model!r}) has "
                f"{len(per_item)} item: a template's score and its interval need at least 2"
            )
    if len(items) < 2:
        first = next(iter(grid.cells[key][templates[0]].values()))[0].origin
        raise first.error(
            f"model {model!r}, task {task!r}: only {len(items)} item is scored by every "
            "template, too few for any statistic; give the missing cells or use --fill"
        )


def _one(grid: ImportedGrid, key: GridKey, template: str, item: str) -> Cell:
    """The cell (several runs of one cell: the first, for its answer and flags)."""
    return grid.cells[key][template][item][0]


def _prediction(
    grid: ImportedGrid, key: GridKey, template: str, item: str, metric: MetricSpec
) -> Any:
    runs = grid.cells[key][template].get(item)
    if runs is None:  # a missing cell (`every_item`): the filled estimator ignores it
        return math.nan
    if metric.from_answers:
        if len(runs) > 1:
            raise runs[1].origin.error(
                f"item {item!r} of template {template!r} has {len(runs)} runs: the answers "
                f"of several runs cannot be averaged for {metric.key}; keep one run (--run)",
                "run",
            )
        if grid.gold(key[1], item) is None and runs[0].gold is MISSING:
            raise runs[0].origin.error(
                f"metric {metric.key} is computed from answers and golds, and item {item!r} "
                "has no gold",
                "gold",
            )
        return runs[0].answer
    values = []
    for cell in runs:
        if metric.key not in cell.scores:
            raise cell.origin.error(f"no score {metric.key!r} for this cell", metric.key)
        values.append(cell.scores[metric.key])
    return float(np.mean(values)) if len(values) > 1 else values[0]


def _score_one(
    grid: ImportedGrid,
    key: GridKey,
    prep: _Prepared,
    metric: MetricSpec,
    scorer: str,
    settings: Settings,
    kept: dict[str, BootstrapResult] | None,
) -> DecodingResult:
    """One metric of one model × task × decoding by `runner.aggregation.score`, keyed as
    the metric's results.json key."""
    info = grid.tasks[key[1]]
    task = _Task(
        _Spec(
            metrics=[scorer],
            language=info.language,
            templates=[_Template(t, info.templates.get(t)) for t in prep.templates],
        )
    )
    collected = Collected(golds=list(prep.golds))
    collected.predictions.update(prep.predictions[metric.key])
    collected.fallbacks.update(prep.fallbacks)
    opts = RunOptions(
        alpha=settings.alpha,
        n_boot=settings.n_boot,
        seed=settings.seed,
        qa_mode=info.qa_mode,  # type: ignore[arg-type]
    )
    boots: dict[str, BootstrapResult] = {}
    try:
        result = score(task, collected, opts, boots)  # type: ignore[arg-type]
    except ValueError as exc:  # a metric that cannot score these answers
        raise HakariInputError(
            f"task {key[1]!r}, metric {metric.key}: {exc}", field="--metric"
        ) from None
    if kept is not None and scorer in boots:
        kept[metric.key] = boots[scorer]
    return _renamed(result, scorer, metric.key)


def _renamed(result: DecodingResult, scorer: str, key: str) -> DecodingResult:
    if scorer == key:
        return result
    for template in result.templates.values():
        template.metrics = {key: template.metrics[scorer]}
        if template.ci is not None:
            template.ci = {key: template.ci[scorer]}
    result.aggregate = {key: result.aggregate[scorer]}
    if result.space is not None:
        result.space = {key: result.space[scorer]}
    return result


def _merge(into: DecodingResult, part: DecodingResult) -> None:
    """Add one metric's templates, aggregate and space to a decoding's result."""
    for template_id, template in part.templates.items():
        mine = into.templates.get(template_id)
        if mine is None:
            into.templates[template_id] = template
            continue
        mine.metrics = {**mine.metrics, **template.metrics}
        if template.ci is not None:
            mine.ci = {**(mine.ci or {}), **template.ci}
    into.aggregate = {**into.aggregate, **part.aggregate}
    if part.space is not None:
        into.space = {**(into.space or {}), **part.space}


def _compare(
    grid: ImportedGrid,
    prepared: dict[GridKey, _Prepared],
    store: BootstrapStore,
    scorers: dict[tuple[str, str], str],
    settings: Settings,
    out: Finished,
) -> None:
    """Paired comparisons and model groups: on the models' own bootstraps where their
    items and templates agree (as a native run), else on the items they share."""
    if settings.n_boot < 1:
        return
    by_task: dict[tuple[str, str], list[str]] = {}
    for model, task, decoding in prepared:
        by_task.setdefault((task, decoding), []).append(model)
    for (task, decoding), present in by_task.items():
        if len(present) < 2:
            continue
        metrics = grid.tasks[task].metrics
        shapes = {
            (
                tuple(prepared[(m, task, decoding)].templates),
                tuple(prepared[(m, task, decoding)].items),
            )
            for m in present
        }
        if len(shapes) == 1:
            own = store.get((task, decoding), {})
            for metric in metrics:
                scorer = scorers[(task, metric.key)]
                _compared(
                    out, task, decoding, metric.key, scorer, own.get(metric.key, {}), groups=True
                )
            continue
        pairs: dict[str, list[Any]] = {m.key: [] for m in metrics}
        for a, b in itertools.combinations(present, 2):
            boots = _bootstraps_on_shared(grid, prepared, task, decoding, [a, b], scorers, settings)
            if boots is None:
                shared = _shared_items(prepared, task, decoding, [a, b])
                out.notes.append(
                    f"{task} ({decoding}): {a} and {b} are not compared: they share "
                    f"{len(shared)} items, fewer than {max(settings.min_shared, 2)}"
                )
                continue
            for metric in metrics:
                scorer = scorers[(task, metric.key)]
                pairs[metric.key] += _paired(
                    task, decoding, metric.key, scorer, boots.get(metric.key, {})
                )
        items = [c for comparisons in pairs.values() for c in comparisons]
        if items:
            out.paired.setdefault(task, {})[decoding] = items
        if len(present) >= 3:
            every = _bootstraps_on_shared(
                grid, prepared, task, decoding, present, scorers, settings
            )
            if every is None:
                out.notes.append(
                    f"{task} ({decoding}): no model groups: the {len(present)} models share "
                    f"fewer than {max(settings.min_shared, 2)} items"
                )
                continue
            for metric in metrics:
                scorer = scorers[(task, metric.key)]
                _compared(
                    out,
                    task,
                    decoding,
                    metric.key,
                    scorer,
                    every.get(metric.key, {}),
                    groups=True,
                    pairs=False,
                )


def _paired(
    task: str, decoding: str, key: str, scorer: str, per_model: dict[str, BootstrapResult]
) -> list[Any]:
    """Every pair of `per_model` on one metric (`runner.aggregation.paired_comparisons`),
    named by the metric's results.json key."""
    made = paired_comparisons({(task, decoding): {scorer: per_model}})
    return [c.model_copy(update={"metric": key}) for c in made.get(task, {}).get(decoding, [])]


def _compared(
    out: Finished,
    task: str,
    decoding: str,
    key: str,
    scorer: str,
    per_model: dict[str, BootstrapResult],
    *,
    groups: bool,
    pairs: bool = True,
) -> None:
    if len(per_model) < 2:
        return
    if pairs:
        out.paired.setdefault(task, {}).setdefault(decoding, []).extend(
            _paired(task, decoding, key, scorer, per_model)
        )
    if groups:
        made = model_groups({(task, decoding): {scorer: per_model}})
        for per_metric in made.get(task, {}).values():
            out.groups.setdefault(task, {}).setdefault(decoding, {})[key] = per_metric[scorer]


def _shared_items(
    prepared: dict[GridKey, _Prepared], task: str, decoding: str, models: Sequence[str]
) -> list[str]:
    sets = [set(prepared[(m, task, decoding)].items) for m in models]
    first = prepared[(models[0], task, decoding)].items
    return [i for i in first if all(i in s for s in sets)]


def _bootstraps_on_shared(
    grid: ImportedGrid,
    prepared: dict[GridKey, _Prepared],
    task: str,
    decoding: str,
    models: Sequence[str],
    scorers: dict[tuple[str, str], str],
    settings: Settings,
) -> dict[str, dict[str, BootstrapResult]] | None:
    """metric -> model -> bootstrap of each model on the items and templates all of
    `models` share; None when they share fewer than `min_shared` items."""
    items = _shared_items(prepared, task, decoding, models)
    if len(items) < max(settings.min_shared, 2):
        return None
    template_sets = [set(prepared[(m, task, decoding)].templates) for m in models]
    templates = [
        t
        for t in prepared[(models[0], task, decoding)].templates
        if all(t in s for s in template_sets)
    ]
    info = grid.tasks[task]
    out: dict[str, dict[str, BootstrapResult]] = {}
    for model in models:
        key = (model, task, decoding)
        prep = prepared[key]
        index = {item: k for k, item in enumerate(prep.items)}
        rows = [index[i] for i in items]
        sub = _Prepared(
            templates,
            items,
            {
                metric: {t: [preds[t][r] for r in rows] for t in templates}
                for metric, preds in prep.predictions.items()
            },
            [prep.golds[r] for r in rows],
            {t: 0 for t in templates},
        )
        for metric in info.metrics:
            kept: dict[str, BootstrapResult] = {}
            _score_one(grid, key, sub, metric, scorers[(task, metric.key)], settings, kept)
            if metric.key in kept:
                out.setdefault(metric.key, {})[model] = kept[metric.key]
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
