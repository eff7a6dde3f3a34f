"""What an import's statistics cannot measure, said in its notes (printed, recorded in
results.json's `imported.notes`, shown by `hakari report`).

A correlation (Pearson, Spearman) or MCC of a template whose answers are all one value is
undefined; the finisher records it for imports and native runs alike (`undefined` in
results.json, said by every report view and by `hakari import`), so it is not noted here.

Models of one task on different sets of templates: each model's headline statistics are
over its own templates, the paired comparison over the templates they share, and the two
can rank the models apart; the note names the templates not shared.
"""

from __future__ import annotations

from hakari.interop.cells import ImportedGrid


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
