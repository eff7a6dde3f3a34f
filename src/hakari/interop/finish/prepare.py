"""The interim finisher's inputs: the task view `runner.aggregation.score` reads, the
statistics' settings, each model × task × decoding's templates, items and predictions, and
one metric scored by the runner (see the package docstring)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from hakari.aggregate import BootstrapResult
from hakari.errors import HakariInputError
from hakari.interop.cells import MISSING, Cell, GridKey, ImportedGrid, MetricSpec, item_order
from hakari.results import DecodingResult, DroppedCells, ModelResult
from hakari.runner.aggregation import (
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
class Prepared:
    """One model × task × decoding ready to score: templates, items, per metric the
    predictions per template, the golds, the fallbacks."""

    templates: list[str]
    items: list[str]
    predictions: dict[str, dict[str, list[Any]]]  # metric key -> template -> predictions
    golds: list[Any]
    fallbacks: dict[str, int]


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


def task_items(grid: ImportedGrid) -> dict[str, list[str]]:
    """Every item any model has of each task, in canonical order."""
    seen: dict[str, dict[str, None]] = {}
    for (_, task, _), per_template in grid.cells.items():
        bucket = seen.setdefault(task, {})
        for per_item in per_template.values():
            bucket.update(dict.fromkeys(per_item))
    return {task: item_order(items) for task, items in seen.items()}


def prepare(
    grid: ImportedGrid, key: GridKey, task_items: list[str], *, every_item: bool = False
) -> tuple[Prepared, DroppedCells | None]:
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
    return Prepared(templates, items, predictions, golds, fallbacks), dropped


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


def score_one(
    grid: ImportedGrid,
    key: GridKey,
    prep: Prepared,
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


def merge_metric(into: DecodingResult, part: DecodingResult) -> None:
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
