"""Paired comparisons and model groups of imported models (see the package docstring),
by the runner's one comparisons function (`estimators.compare_models`): on the models'
own bootstraps where their items and templates agree, else every pair bootstrapped again
on the items it shares."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from hakari.interop.cells import GridKey
from hakari.interop.finish.prepare import Finished, Prepared, Settings, scoring_error
from hakari.runner.estimators import Comparisons, Direct, ModelEstimate, compare_models


def compare(
    prepared: Mapping[GridKey, Prepared],
    estimates: Mapping[GridKey, ModelEstimate],
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
        keys = {m: (m, task, decoding) for m in present}
        shapes = {(tuple(prepared[k].templates), tuple(prepared[k].items)) for k in keys.values()}
        if len(shapes) == 1:
            own = compare_models({m: estimates[k] for m, k in keys.items()}, Direct())
            _record(out, task, decoding, own, pairs=True)
            continue
        for a, b in itertools.combinations(present, 2):
            made = _on_shared(prepared, task, decoding, [a, b], settings)
            if made is None:
                shared = _shared_items(prepared, task, decoding, [a, b])
                out.notes.append(
                    f"{task} ({decoding}): {a} and {b} are not compared: they share "
                    f"{len(shared)} items, fewer than {max(settings.min_shared, 2)}"
                )
                continue
            _record(out, task, decoding, made, pairs=True)
        if len(present) >= 3:
            every = _on_shared(prepared, task, decoding, present, settings)
            if every is None:
                out.notes.append(
                    f"{task} ({decoding}): no model groups: the {len(present)} models share "
                    f"fewer than {max(settings.min_shared, 2)} items"
                )
                continue
            _record(out, task, decoding, every, pairs=False)


def _record(out: Finished, task: str, decoding: str, made: Comparisons, *, pairs: bool) -> None:
    if pairs and made.pairs:
        out.paired.setdefault(task, {}).setdefault(decoding, []).extend(made.records())
    for key, groups in made.groups.items():
        out.groups.setdefault(task, {}).setdefault(decoding, {})[key] = groups


def _shared_items(
    prepared: Mapping[GridKey, Prepared], task: str, decoding: str, models: Sequence[str]
) -> list[str]:
    sets = [set(prepared[(m, task, decoding)].items) for m in models]
    first = prepared[(models[0], task, decoding)].items
    return [i for i in first if all(i in s for s in sets)]


def _on_shared(
    prepared: Mapping[GridKey, Prepared],
    task: str,
    decoding: str,
    models: Sequence[str],
    settings: Settings,
) -> Comparisons | None:
    """The comparisons of `models` each estimated again on the items and templates all
    of them share; None when they share fewer than `min_shared` items."""
    items = _shared_items(prepared, task, decoding, models)
    if len(items) < max(settings.min_shared, 2):
        return None
    template_sets = [set(prepared[(m, task, decoding)].templates) for m in models]
    templates = [
        t
        for t in prepared[(models[0], task, decoding)].templates
        if all(t in s for s in template_sets)
    ]
    estimates = {}
    for model in models:
        sub = prepared[(model, task, decoding)].restricted(templates, items)
        try:
            estimates[model] = Direct().estimate(sub.grid, sub.cells, settings.options)
        except ValueError as exc:
            raise scoring_error(task, exc) from None
    return compare_models(estimates, Direct())
