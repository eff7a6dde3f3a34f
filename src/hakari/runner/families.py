"""A task family's members pooled into one score per template (`--tasks jmmlu`).

Two means, because reports differ: over questions (each member's score weighted by its
instances: the score on the union of the questions) and over subjects (each member
weighs the same). Both are computed per template on the templates every member ran,
then summarised over those templates like a task (mean, population std, Sharpe).
Pooling by instance weights is exact for metrics that are means over instances
(accuracy), which is what a family's members are scored with; other metrics are not
pooled.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from hakari.aggregate.summary import sharpe_score
from hakari.results import EvalResults, FamilyScore, FamilySummary
from hakari.tasks.loader import Task

POOLED_METRICS = ("accuracy",)  # means over instances: weighting by instances is exact


def family_summaries(
    results: EvalResults, tasks: Sequence[Task], alpha: float
) -> dict[str, dict[str, dict[str, dict[str, FamilySummary]]]] | None:
    """FAMILY -> MODEL -> DECODING -> METRIC -> summary; None when no family ran."""
    members: dict[str, list[str]] = defaultdict(list)
    for task in tasks:
        if task.family is not None:
            members[task.family].append(task.name)
    out: dict[str, dict[str, dict[str, dict[str, FamilySummary]]]] = {}
    for family, names in members.items():
        for model, result in results.models.items():
            decodings = {d for n in names if n in result.tasks for d in result.tasks[n].decodings}
            for decoding in sorted(decodings):
                for metric in POOLED_METRICS:
                    summary = _pool(results, model, names, decoding, metric, alpha)
                    if summary is not None:
                        out.setdefault(family, {}).setdefault(model, {}).setdefault(decoding, {})[
                            metric
                        ] = summary
    return out or None


def _pool(
    results: EvalResults, model: str, names: list[str], decoding: str, metric: str, alpha: float
) -> FamilySummary | None:
    tasks = results.models[model].tasks
    runs = [
        tasks[n].decodings[decoding] for n in names if n in tasks and decoding in tasks[n].decodings
    ]
    runs = [r for r in runs if r.templates]
    if not runs or any(metric not in t.metrics for r in runs for t in r.templates.values()):
        return None
    shared = [tid for tid in runs[0].templates if all(tid in r.templates for r in runs)]
    if not shared:
        return None
    scores = np.array([[r.templates[t].metrics[metric] for t in shared] for r in runs])
    sizes = np.array([max(r.templates[t].n for t in shared) for r in runs], dtype=float)
    questions = sizes @ scores / sizes.sum()
    subjects = scores.mean(axis=0)
    return FamilySummary(
        members=[n for n in names if n in tasks],
        n_questions=int(sizes.sum()),
        over_questions=_score(shared, questions, alpha),
        over_subjects=_score(shared, subjects, alpha),
    )


def _score(ids: list[str], values: np.ndarray, alpha: float) -> FamilyScore:
    mean, std = float(values.mean()), float(values.std())
    return FamilyScore(
        per_template={t: float(v) for t, v in zip(ids, values, strict=True)},
        mean=mean,
        std=std,
        sharpe=sharpe_score(mean, std, alpha),
        min=float(values.min()),
        max=float(values.max()),
    )
