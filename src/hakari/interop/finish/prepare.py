"""The finisher's inputs of an imported grid: each model × task × decoding as the runner's
`GridTask` (templates with levels, items with golds, metrics with their results.json key
and scorer) and `Cells` (answers, fallbacks, the source's per-item scores), and the
statistics' settings (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hakari.errors import HakariInputError
from hakari.interop.cells import MISSING, Cell, GridKey, ImportedGrid, MetricSpec, item_order
from hakari.results import DroppedCells, ModelResult
from hakari.runner.estimators import Cells, FinishOptions, GridMetric, GridTask
from hakari.runner.estimators.grid import metric_options
from hakari.scoring.corpus.given import GIVEN_MEAN, GIVEN_SCORE

MIN_SHARED_ITEMS = 10  # a paired comparison on fewer shared items is refused


@dataclass(frozen=True)
class Settings:
    """The statistics' settings (the same meaning and defaults as `hakari run`'s)."""

    alpha: float = 1.0
    n_boot: int = 1000
    seed: int = 0
    fill: bool = False
    min_shared: int = MIN_SHARED_ITEMS

    @property
    def options(self) -> FinishOptions:
        return FinishOptions(self.alpha, self.n_boot, self.seed)


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
    """One model × task × decoding ready to finish: its grid and its cells."""

    grid: GridTask
    cells: Cells

    @property
    def templates(self) -> list[str]:
        return list(self.grid.template_ids)

    @property
    def items(self) -> list[str]:
        return list(self.grid.items)  # type: ignore[arg-type]

    def restricted(self, templates: list[str], items: list[str]) -> Prepared:
        """The same cells on part of the grid (the templates and items given)."""
        gold = dict(zip(self.grid.items, self.grid.golds, strict=True))
        grid = GridTask(
            **{
                **vars(self.grid),
                "template_ids": tuple(templates),
                "items": tuple(items),
                "golds": tuple(gold[i] for i in items),
            }
        )
        kept = {(t, i) for t in templates for i in items}
        cells = Cells(
            answers={c: a for c, a in self.cells.answers.items() if c in kept},
            fallbacks=self.cells.fallbacks & kept,
            scores={
                k: {c: v for c, v in s.items() if c in kept} for k, s in self.cells.scores.items()
            },
        )
        return Prepared(grid, cells)


def scorer_names(grid: ImportedGrid) -> dict[tuple[str, str], str]:
    """(task, metric key) -> the registered scorer: the metric's own, or the mean of the
    source's scores (`given_score`, cut to [0, 1], when every score of the metric lies
    there; else `given_mean`, not cut)."""
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
            out[(task, metric.key)] = GIVEN_SCORE if unit else GIVEN_MEAN
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
    grid: ImportedGrid,
    key: GridKey,
    task_items: list[str],
    scorers: dict[tuple[str, str], str],
    *,
    every_item: bool = False,
) -> tuple[Prepared, DroppedCells | None]:
    """One model × task × decoding's grid (its templates; the items every template has,
    unless `every_item`) and cells; the missing cells counted."""
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
    language: Any = info.language
    view = GridTask(
        name=task,
        metrics=tuple(
            GridMetric(m.key, scorer, metric_options(language, scorer, info.qa_mode))
            for m in info.metrics
            for scorer in [scorers[(task, m.key)]]
        ),
        template_ids=tuple(templates),
        items=tuple(items),
        golds=tuple(grid.gold(task, item) for item in items),
        # the completion model (`--fill`) reads per-item scores: every metric must be a
        # mean of them, whatever the answers are
        answer_type="text",
        levels={t: dict(levels) for t, levels in info.templates.items() if levels and t in cells},
        source=task,
    )
    return Prepared(view, _cells(grid, key, templates, items, info.metrics)), dropped


def _cells(
    grid: ImportedGrid,
    key: GridKey,
    templates: list[str],
    items: list[str],
    metrics: list[MetricSpec],
) -> Cells:
    """The cells the source has of `templates` × `items`: the answer (and fallback flag)
    of each, and each source metric's score (the mean over several runs of a cell)."""
    out = Cells(scores={m.key: {} for m in metrics if not m.from_answers})
    for template in templates:
        for item in items:
            runs = grid.cells[key][template].get(item)
            if runs is None:  # a missing cell (`every_item`): the filled estimator's
                continue
            cell = (template, item)
            out.add(cell, runs[0].answer, bool(runs[0].extra.get("fallback")))
            for metric in metrics:
                if metric.from_answers:
                    _check_answer(grid, key, template, item, runs, metric)
                else:
                    out.scores[metric.key][cell] = _given(runs, metric)
    return out


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


def _check_answer(
    grid: ImportedGrid, key: GridKey, template: str, item: str, runs: list[Cell], metric: MetricSpec
) -> None:
    """A metric computed from answers reads one answer and the item's gold."""
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


def _given(runs: list[Cell], metric: MetricSpec) -> float:
    """The source's score of a cell (the mean over its runs)."""
    values = []
    for cell in runs:
        if metric.key not in cell.scores:
            raise cell.origin.error(f"no score {metric.key!r} for this cell", metric.key)
        values.append(cell.scores[metric.key])
    return float(np.mean(values)) if len(values) > 1 else values[0]


def scoring_error(task: str, exc: ValueError) -> HakariInputError:
    """A metric that cannot score these answers (or scores), in one line."""
    return HakariInputError(f"task {task!r}: {exc}", field="--metric")
