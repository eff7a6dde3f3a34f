"""Which of K models are actually different: every pair compared, the family of K(K-1)/2
tests corrected together, and the models grouped into sets that are statistically tied.

Correction: **Romano-Wolf step-down** on the studentised differences (Romano & Wolf,
2005, "Exact and approximate stepdown methods for multiple hypothesis testing", JASA
100:94-108). All pairs are computed on the same bootstrap replicates (`paired`), so the
joint distribution of their pivots `t*_h = (d*_h - d_h) / se*_h` is known; the step-down
compares the largest remaining |t_h| with the quantiles of the *maximum* of the remaining
|t*_h|. It controls the family-wise error rate like Holm's procedure but uses how the
comparisons depend on each other (pairs that share a model are strongly correlated, so
the max of K(K-1)/2 pivots is far below what Holm's union bound assumes); with one pair
it is the plain bootstrap-t test. Holm-adjusted p-values are given beside it, for readers
who know that one.

Why the decision reads adjusted p-values and not the per-pair intervals: an interval per
pair at 95% decides 5% of truly tied pairs by chance *each*; with 10 models that is 45
pairs and about two false "differences" per table.

Groups: models sorted by the statistic; a group is a maximal set of models no two of
which differ significantly after the correction (the maximal cliques of the "not
different" graph, as in a compact letter display). A model can be in several groups;
models in no common group differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hakari.aggregate.intervals import Replicates
from hakari.results.paired import GroupTest, ModelGroups

CORRECTION = "romano-wolf step-down (max-|t| bootstrap); holm alongside"
# The tied groups listed at most: a pattern of ties can have exponentially many maximal
# groups (3^(n/3) among n models, Moon and Moser), which no reader needs and which would
# run unbounded; past this the enumeration stops (the first found, ordered as always)
# and the record says so (`ModelGroups.groups_cut`)
MAX_GROUPS = 1000


class _Enough(Exception):
    """`MAX_GROUPS` groups found."""


@dataclass(frozen=True)
class AdjustedTest:
    """One hypothesis "A and B do not differ" after the correction."""

    model_a: str
    model_b: str
    diff: float
    p_value: float
    p_romano_wolf: float
    p_holm: float
    simultaneous_low: float
    simultaneous_high: float

    def verdict(self, level: float) -> str:
        if self.p_romano_wolf >= level:
            return "tied"
        return "a_better" if self.diff > 0 else "b_better"

    def to_dict(self, level: float) -> dict[str, Any]:
        return {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "diff": self.diff,
            "p_value": self.p_value,
            "p_adjusted": self.p_romano_wolf,
            "p_holm": self.p_holm,
            "simultaneous_ci_low": self.simultaneous_low,
            "simultaneous_ci_high": self.simultaneous_high,
            "verdict": self.verdict(level),
        }


def _pivots(reps: Replicates) -> tuple[float, float, np.ndarray]:
    """(observed |t|, se, t* for every replicate; 0 where its se* is 0)."""
    se_hat, _ = reps.pivots()
    instance_var = float(np.var(reps.instance_values))
    se_star = np.sqrt(reps.values_se**2 + instance_var)
    safe = np.where(se_star > 0, se_star, 1.0)
    t_star = np.where(se_star > 0, (reps.values - reps.point) / safe, 0.0)
    observed = abs(reps.point) / se_hat if se_hat > 0 else (0.0 if reps.point == 0 else np.inf)
    return observed, se_hat, t_star


def adjust(
    pairs: Sequence[tuple[str, str]],
    replicates: Sequence[Replicates],
    p_values: Sequence[float],
    *,
    confidence: float = 0.95,
) -> list[AdjustedTest]:
    """Romano-Wolf and Holm adjusted p-values and simultaneous intervals of every pair's
    difference; `replicates[h]` are pair h's difference replicates (same draws for all)."""
    if not pairs:
        return []
    if len({len(r.values) for r in replicates}) != 1:
        raise ValueError("all pairs must come from the same bootstrap replicates")
    observed, se, t_star = zip(*(_pivots(r) for r in replicates), strict=True)
    t_obs = np.asarray(observed)
    abs_star = np.abs(np.vstack(t_star))  # (H, B)
    n_boot = abs_star.shape[1]
    # Step-down: hypotheses by decreasing |t|; each compared with the max over itself and
    # the ones still standing (the running max from the last hypothesis up: one pass,
    # not one max per hypothesis, which grew as pairs² = models⁴); adjusted p-values made
    # monotone.
    order = np.argsort(-t_obs, kind="stable")
    standing = np.maximum.accumulate(abs_star[order[::-1]], axis=0)[::-1]  # (H, B)
    exceed = np.count_nonzero(standing >= t_obs[order][:, None], axis=1)
    running = np.maximum.accumulate((1 + exceed) / (n_boot + 1))
    rw = np.empty(len(pairs))
    rw[order] = np.minimum(1.0, running)
    holm = _holm(np.asarray(p_values, dtype=np.float64))
    critical = float(np.quantile(abs_star.max(axis=0), confidence))
    return [
        AdjustedTest(
            model_a=a,
            model_b=b,
            diff=float(r.point),
            p_value=float(p),
            p_romano_wolf=float(rw[h]),
            p_holm=float(holm[h]),
            simultaneous_low=float(r.point - critical * se[h]),
            simultaneous_high=float(r.point + critical * se[h]),
        )
        for h, ((a, b), r, p) in enumerate(zip(pairs, replicates, p_values, strict=True))
    ]


def _holm(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, h in enumerate(order):
        running = max(running, (m - rank) * p[h])
        adjusted[h] = min(1.0, running)
    return adjusted


def tied_groups(
    scores: Mapping[str, float], tests: Sequence[AdjustedTest], level: float
) -> list[list[str]]:
    """`tied_groups_cut`'s groups."""
    return tied_groups_cut(scores, tests, level)[0]


def tied_groups_cut(
    scores: Mapping[str, float], tests: Sequence[AdjustedTest], level: float
) -> tuple[list[list[str]], bool]:
    """Maximal sets of models with no significant difference between any two, each
    sorted by score (best first), the groups ordered by their best member; at most
    `MAX_GROUPS` of them, and whether more were cut."""
    models = sorted(scores, key=lambda m: (-scores[m], m))
    differ = {(t.model_a, t.model_b) for t in tests if t.verdict(level) != "tied"}
    differ |= {(b, a) for a, b in differ}
    neighbours = {m: {o for o in models if o != m and (m, o) not in differ} for m in models}
    groups: list[list[str]] = []

    def expand(clique: set[str], candidates: set[str], excluded: set[str]) -> None:
        if not candidates and not excluded:
            if len(groups) == MAX_GROUPS:
                raise _Enough
            groups.append(sorted(clique, key=models.index))
            return
        pivot = max(candidates | excluded, key=lambda m: len(neighbours[m] & candidates))
        for m in list(candidates - neighbours[pivot]):
            expand(clique | {m}, candidates & neighbours[m], excluded & neighbours[m])
            candidates = candidates - {m}
            excluded = excluded | {m}

    try:
        expand(set(), set(models), set())
        cut = False
    except _Enough:
        cut = True
    return sorted(groups, key=lambda g: (models.index(g[0]), len(g))), cut


def group_record(
    tests: Sequence[AdjustedTest],
    scores: Mapping[str, float],
    *,
    level: float = 0.05,
    estimated: bool = False,
) -> ModelGroups:
    """The corrected tests of the Sharpe differences and the groups of tied models."""
    groups, cut = tied_groups_cut(scores, tests, level)
    return ModelGroups(
        statistic="sharpe",
        correction=CORRECTION,
        level=level,
        scores=dict(scores),
        tests=[GroupTest(**t.to_dict(level)) for t in tests],
        groups=groups,
        groups_cut=cut,
        estimated=estimated,
    )
