"""Between models: every pair's comparison on the same grid, the correction over all
pairs and the groups of tied models (`compare_models`), and the alpha sweep over the
models' published means and spreads (`alpha_sweeps`).

The one rule, for every estimator: **every pair of models is compared on every metric
that has a bootstrap (`paired`), from two models on; the groups of statistically tied
models (`model_groups`, Romano-Wolf step-down over all pairs, `aggregate.multiple`) are
written from `GROUPS_FROM` = three models on.** With two models there is one pair: its
correction is the identity (Romano-Wolf over one hypothesis is the plain bootstrap-t
test) and its groups repeat the pair's verdict, so `paired` says it all. The corrected
tests are computed from two models on all the same: the stopping rule of
`--until-decided` reads them (`runner.stopping`). At most `MAX_COMPARED_MODELS` models
are compared (`check_compared_models`, called before any work by the run's preflight and
the import).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from hakari import aggregate as agg
from hakari.aggregate.multiple import AdjustedTest, adjust, group_record
from hakari.errors import HakariInputError
from hakari.results import EvalResults
from hakari.results.paired import ModelGroups, PairedComparison
from hakari.results.sweep import AlphaSweepPoint
from hakari.runner.estimators.base import Estimator, ModelEstimate, Pair

GROUPS_FROM = 3  # models: with two, `paired` says it all (module docstring)
LEVEL = 0.05  # the family-wise error level of the groups' verdicts
# The most models of one task × decoding compared pairwise: their pairs grow as K², each
# with its bootstrap replicates held for the correction (150 models: 11,175 pairs, past
# 35 s and 1.4 GB before the first answer was written). Beyond it a run or an import with
# a bootstrap is refused before any work; with --n-boot 0 nothing is compared.
MAX_COMPARED_MODELS = 50


def check_compared_models(n_models: int, n_boot: int, field: str, where: str = "") -> None:
    """`n_models` compared pairwise (a bootstrap ran: `n_boot` > 0) within the bound: one
    `HakariInputError` naming `field` before any work, else nothing."""
    if n_boot == 0 or n_models <= MAX_COMPARED_MODELS:
        return
    pairs = n_models * (n_models - 1) // 2
    raise HakariInputError(
        f"{n_models} models{where} would be compared pairwise ({pairs:,} pairs, each with "
        f"its bootstrap); at most {MAX_COMPARED_MODELS} are: evaluate or import them in "
        f"groups of {MAX_COMPARED_MODELS}, or give --n-boot 0 (no intervals, no comparisons)",
        field=field,
    )


@dataclass(frozen=True, eq=False)
class Comparisons:
    """The models of one grid compared: per metric key, every pair in run order (A ran
    before B), the pairs' corrected tests, and the groups (from `GROUPS_FROM` models)."""

    pairs: dict[str, list[Pair]]
    adjusted: dict[str, list[AdjustedTest]]
    groups: dict[str, ModelGroups]

    def records(self) -> list[PairedComparison]:
        """results.json's `paired[TASK][DECODING]`: every pair on every metric."""
        return [pair.record for pairs in self.pairs.values() for pair in pairs]


def compare_models(estimates: Mapping[str, ModelEstimate], estimator: Estimator) -> Comparisons:
    """Every pair of the models (in the mapping's order) on every metric whose estimates
    can be compared (a bootstrap ran), corrected together (see the module docstring)."""
    models = list(estimates)
    pairs: dict[str, list[Pair]] = {}
    adjusted: dict[str, list[AdjustedTest]] = {}
    groups: dict[str, ModelGroups] = {}
    for key in estimates[models[0]].metrics if models else ():
        comparable = [m for m in models if estimates[m].metrics[key].compared is not None]
        if len(comparable) < 2:
            continue
        found = []
        for a, b in itertools.combinations(comparable, 2):
            pair = estimator.compare(a, estimates[a].metrics[key], b, estimates[b].metrics[key])
            if pair.record.metric != key:  # scored by a metric of another name
                pair = Pair(pair.record.model_copy(update={"metric": key}), pair.sharpe)
            found.append(pair)
        pairs[key] = found
        adjusted[key] = adjust(
            [(p.record.model_a, p.record.model_b) for p in found],
            [p.sharpe for p in found],
            [p.sharpe.p_value() for p in found],
        )
        if len(comparable) >= GROUPS_FROM:
            scores = {m: estimates[m].metrics[key].stats.sharpe for m in comparable}
            groups[key] = group_record(
                adjusted[key], scores, level=LEVEL, estimated=estimator.estimated
            )
    return Comparisons(pairs, adjusted, groups)


def alpha_sweeps(results: EvalResults) -> dict[str, dict[str, dict[str, list[AlphaSweepPoint]]]]:
    """`alpha_sweep[TASK][DECODING][METRIC]`: the models ranked at every alpha, from the
    means and spreads results.json publishes (metrics two or more models have)."""
    sweeps: dict[str, dict[str, dict[str, list[AlphaSweepPoint]]]] = {}
    model_names = list(results.models)
    first = results.models[model_names[0]]
    for task_name, task_result in first.tasks.items():
        for decoding, dec in task_result.decodings.items():
            for metric in dec.aggregate:
                stats = {}
                for model in model_names:
                    other = results.models[model].tasks.get(task_name)
                    other_dec = other.decodings.get(decoding) if other else None
                    if other_dec is None or metric not in other_dec.aggregate:
                        continue
                    a = other_dec.aggregate[metric]
                    stats[model] = (a.mean, a.std)
                if len(stats) > 1:
                    sweeps.setdefault(task_name, {}).setdefault(decoding, {})[metric] = (
                        agg.alpha_sweep(stats)
                    )
    return sweeps
