"""Paired comparisons and model groups of imported models (see the package docstring):
on the models' own bootstraps where their items and templates agree, else every pair
bootstrapped again on the items it shares."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hakari.aggregate import BootstrapResult
from hakari.interop.cells import GridKey, ImportedGrid
from hakari.interop.finish.prepare import Finished, Prepared, Settings, score_one
from hakari.runner.aggregation import (
    BootstrapStore,
    model_groups,
    paired_comparisons,
)


def compare(
    grid: ImportedGrid,
    prepared: dict[GridKey, Prepared],
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
    prepared: dict[GridKey, Prepared], task: str, decoding: str, models: Sequence[str]
) -> list[str]:
    sets = [set(prepared[(m, task, decoding)].items) for m in models]
    first = prepared[(models[0], task, decoding)].items
    return [i for i in first if all(i in s for s in sets)]


def _bootstraps_on_shared(
    grid: ImportedGrid,
    prepared: dict[GridKey, Prepared],
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
        sub = Prepared(
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
            score_one(grid, key, sub, metric, scorers[(task, metric.key)], settings, kept)
            if metric.key in kept:
                out.setdefault(metric.key, {})[model] = kept[metric.key]
    return out
