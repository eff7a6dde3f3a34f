"""A task family's members pooled into one score per template (`--tasks jmmlu`).

Two means, because reports differ: over questions (each member's score weighted by its
instances: the score on the union of the questions) and over subjects (each member
weighs the same). Both are computed per template on the templates every member ran,
then summarised over those templates like a task (mean, population std, Sharpe).
Pooling by instance weights is exact for metrics that are means over instances
(accuracy), which is what a family's members are scored with; other metrics are not
pooled.

Each pooled score carries the interval of its mean over templates × items when the
members were bootstrapped (`MemberDraws`: each member's items resampled by its own
bootstrap, the templates resampled together, `intervals.pooled_mean_interval`). The
leaderboard view (`runner.leaderboard`) pools through the same functions, each member on
its own metric.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hakari.aggregate.intervals import pooled_mean_interval, statistic_bounds
from hakari.results import EvalResults, FamilyScore, FamilySummary, sharpe_score
from hakari.scoring import corpus
from hakari.tasks.loader import Task

POOLED_METRICS = ("accuracy",)  # means over instances: weighting by instances is exact


@dataclass(frozen=True, eq=False)
class MemberDraws:
    """One member's bootstrap on one metric: `every[b]` all its templates' scores on
    replicate b's instances, in `template_ids` order."""

    template_ids: tuple[str, ...]
    every: np.ndarray  # (n_boot, T)
    confidence: float
    ci_method: str


DrawsFn = Callable[[str, str, str, str], MemberDraws | None]
"""(model, task, decoding, metric) -> the member's bootstrap, None when none ran."""


def no_draws(model: str, task: str, decoding: str, metric: str) -> MemberDraws | None:
    return None


@dataclass(frozen=True, eq=False)
class Pooled:
    """Members' scores on the templates they all ran, ready to pool."""

    members: list[str]
    metrics: list[str]
    template_ids: list[str]
    scores: np.ndarray  # (members, T)
    sizes: np.ndarray  # (members,) instances
    draws: list[MemberDraws] | None  # every member's, or None


def member_scores(
    results: EvalResults,
    model: str,
    decoding: str,
    members: Sequence[tuple[str, str]],
    draws: DrawsFn = no_draws,
) -> Pooled | None:
    """The (task, metric) members that ran with `decoding` and have the metric, on the
    templates every one of them ran; None when none did."""
    tasks = results.models[model].tasks
    ran = [
        (n, m, tasks[n].decodings[decoding])
        for n, m in members
        if n in tasks and decoding in tasks[n].decodings and tasks[n].decodings[decoding].templates
    ]
    if not ran or any(m not in t.metrics for _, m, r in ran for t in r.templates.values()):
        return None
    shared = [tid for tid in ran[0][2].templates if all(tid in r.templates for _, _, r in ran)]
    if not shared:
        return None
    got = [draws(model, n, decoding, m) for n, m, _ in ran]
    return Pooled(
        members=[n for n, _, _ in ran],
        metrics=[m for _, m, _ in ran],
        template_ids=shared,
        scores=np.array([[r.templates[t].metrics[m] for t in shared] for _, m, r in ran]),
        sizes=np.array([max(r.templates[t].n for t in shared) for _, _, r in ran], dtype=float),
        draws=None if any(d is None for d in got) else [d for d in got if d is not None],
    )


def member_every(pooled: Pooled, columns: Sequence[Sequence[str]]) -> list[np.ndarray] | None:
    """Each member's replicate scores on `columns` (per pooled column, the template ids
    averaged into it), (n_boot, len(columns)) each; None without every member's draws or
    when their replicate counts differ."""
    if pooled.draws is None or len({len(d.every) for d in pooled.draws}) != 1:
        return None
    out = []
    for d in pooled.draws:
        position = {t: i for i, t in enumerate(d.template_ids)}
        out.append(
            np.stack([d.every[:, [position[t] for t in c]].mean(axis=1) for c in columns], axis=1)
        )
    return out


def family_summaries(
    results: EvalResults, tasks: Sequence[Task], alpha: float, draws: DrawsFn = no_draws
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
                    summary = _pool(results, model, names, decoding, metric, alpha, draws)
                    if summary is not None:
                        out.setdefault(family, {}).setdefault(model, {}).setdefault(decoding, {})[
                            metric
                        ] = summary
    return out or None


def _pool(
    results: EvalResults,
    model: str,
    names: list[str],
    decoding: str,
    metric: str,
    alpha: float,
    draws: DrawsFn,
) -> FamilySummary | None:
    pooled = member_scores(results, model, decoding, [(n, metric) for n in names], draws)
    if pooled is None:
        return None
    every = member_every(pooled, [[t] for t in pooled.template_ids])
    ids, sizes = pooled.template_ids, pooled.sizes
    equal = np.ones_like(sizes)
    return FamilySummary(
        members=pooled.members,
        n_questions=int(sizes.sum()),
        over_questions=pooled_score(pooled, ids, pooled.scores, sizes, every, alpha),
        over_subjects=pooled_score(pooled, ids, pooled.scores, equal, every, alpha),
    )


def pooled_score(
    pooled: Pooled,
    ids: list[str],
    scores: np.ndarray,
    weights: np.ndarray,
    every: list[np.ndarray] | None,
    alpha: float,
) -> FamilyScore:
    """The members' `scores` (members, len(ids)) pooled per column with `weights`, over
    the columns; with the members' replicates (`every`), the mean's interval."""
    values = weights @ scores / weights.sum()
    mean, std = float(values.mean()), float(values.std())
    ci: tuple[float | None, float | None] = (None, None)
    if every is not None and pooled.draws:
        lows, highs = zip(*(corpus.get(m).value_range for m in pooled.metrics), strict=True)
        bounds = statistic_bounds((min(lows), max(highs)))["mean"]
        replicates = np.tensordot(weights, np.stack(every), axes=1) / weights.sum()
        head = pooled.draws[0]
        interval = pooled_mean_interval(
            values, replicates, method=head.ci_method, confidence=head.confidence, bounds=bounds
        )
        ci = (interval.low, interval.high)
    return FamilyScore(
        per_template={t: float(v) for t, v in zip(ids, values, strict=True)},
        mean=mean,
        std=std,
        sharpe=sharpe_score(mean, std, alpha),
        min=float(values.min()),
        max=float(values.max()),
        ci_low=ci[0],
        ci_high=ci[1],
    )
