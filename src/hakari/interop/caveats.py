"""What an import's statistics cannot measure, said in its notes (printed, recorded in
results.json's `imported.notes`, shown by `hakari report`).

A correlation (Pearson, Spearman) or MCC of a template whose answers are all one value is
undefined (scipy gives NaN); hakari's corpus metrics count it as 0.0, chance, reported as
degenerate (`hakari.scoring.corpus`), and that 0.0 enters the template mean and the
Sharpe score. The number stays (a template that always answers the same has no skill to
show), but never silently: each such template is named.

Models of one task on different sets of templates: each model's headline statistics are
over its own templates, the paired comparison over the templates they share, and the two
can rank the models apart; the note names the templates not shared.
"""

from __future__ import annotations

from hakari.interop.cells import ImportedGrid

UNDEFINED_WHEN_CONSTANT = ("pearson", "spearman", "mcc")


def constant_answer_notes(grid: ImportedGrid) -> list[str]:
    """One note per model × task × template whose answers are one value, for each metric
    that is undefined then."""
    notes = []
    for (model, task, decoding), per_template in grid.cells.items():
        metrics = [m.key for m in grid.tasks[task].metrics if m.scorer in UNDEFINED_WHEN_CONSTANT]
        if not metrics:
            continue
        for template, per_item in per_template.items():
            answers = {repr(runs[0].answer) for runs in per_item.values()}
            if len(per_item) > 1 and len(answers) == 1:
                notes.append(
                    f"model {model!r}, task {task!r}, {decoding}, template {template!r} answers "
                    f"one value ({next(iter(answers))}) for every item: "
                    f"{', '.join(metrics)} {'is' if len(metrics) == 1 else 'are'} undefined "
                    "there and counted as 0.0 (chance) in the mean and the Sharpe score"
                )
    return notes


def template_set_notes(grid: ImportedGrid) -> list[str]:
    """One note per task × decoding whose models have different sets of templates."""
    by_task: dict[tuple[str, str], dict[str, set[str]]] = {}
    for (model, task, decoding), per_template in grid.cells.items():
        by_task.setdefault((task, decoding), {})[model] = set(per_template)
    notes = []
    for (task, decoding), sets in by_task.items():
        shared = set.intersection(*sets.values())
        extra = {m: sorted(s - shared) for m, s in sets.items() if s != shared}
        if len(sets) > 1 and extra:
            shown = "; ".join(f"{m!r} also on {', '.join(map(repr, t))}" for m, t in extra.items())
            notes.append(
                f"task {task!r}, {decoding}: the models are not on the same templates ({shown}): "
                f"each model's mean and Sharpe score are over its own templates, the paired "
                f"comparison over the {len(shared)} shared, and the two may rank them apart"
            )
    return notes
