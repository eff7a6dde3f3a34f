"""When a task × decoding stops, and why: the one stop rule of every plan.

A key (task × decoding) stops after a round when a criterion holds (`stop_reason`) or
when its rounds run out (`ran_out`): "grid_full" (every cell ran: the full grid is one
round of every cell), "budget" (the cells bought), "target_ci", "decided" (both:
"target_ci+decided"); a key still open when a later model failed is "interrupted" (its
numbers come from the cells run so far).

Criteria. `--target-ci W`: every model's Sharpe interval (every metric of the task) has a
half-width of at most W. `--until-decided`: every pair of models differs on every metric's
Sharpe score after the multiple-comparison correction (`aggregate.multiple`, read from
`estimators.compare`), at the level 0.05 / L for a run with at most L rounds (Bonferroni
over the looks: `decision_level`). Neither acts on a degenerate interval (zero width, or
one that excludes its own estimate: too few bootstrap replicates, fewer than
`enough_replicates`); the rounds then go on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from hakari.aggregate.intervals import DEFAULT_CI_METHOD, Replicates
from hakari.results import BudgetRound
from hakari.runner.estimators import Comparisons, ModelEstimate
from hakari.runner.estimators.compare import LEVEL
from hakari.runner.plan import Plan

GRID_FULL = "grid_full"
BUDGET = "budget"
INTERRUPTED = "interrupted"  # a later model failed: estimated from the cells run so far


def decision_level(n_rounds: int) -> float:
    """The level a pair must reach at one look (Bonferroni over the possible looks)."""
    return LEVEL / n_rounds


def ran_out(cells_run: int, grid_size: int) -> str:
    """Why a key whose rounds ran out stopped: its grid is full, or its budget spent."""
    return GRID_FULL if cells_run >= grid_size else BUDGET


def stop_reason(
    plan: Plan, estimates: Mapping[str, ModelEstimate], comparisons: Comparisons, level: float
) -> str | None:
    """Which criterion stopped this task × decoding (None: keep going). A degenerate
    interval never stops a run (`usable_interval`)."""
    if not plan.sequential:
        return None
    stats = [m.stats for e in estimates.values() for m in e.metrics.values()]
    if not stats or not all(
        usable_interval(s.sharpe, s.sharpe_ci_low, s.sharpe_ci_high)
        and enough_replicates(s.n_boot, s.confidence)
        for s in stats
    ):
        return None
    reasons = []
    if plan.target_ci is not None:
        widths = [half_width(s.sharpe_ci_low, s.sharpe_ci_high) or 0.0 for s in stats]
        if max(widths) > plan.target_ci:
            return None
        reasons.append("target_ci")
    if plan.until_decided:
        tests = [t for per_metric in comparisons.adjusted.values() for t in per_metric]
        if not tests or any(t.p_romano_wolf >= level for t in tests):
            return None
        differences = [p.sharpe for pairs in comparisons.pairs.values() for p in pairs]
        if not all(_usable_difference(d) for d in differences):
            return None
        reasons.append("decided")
    return "+".join(reasons)


def _usable_difference(replicates: Replicates) -> bool:
    low, high = replicates.interval(DEFAULT_CI_METHOD, 0.95)
    return usable_interval(replicates.point, low, high)


def round_log(
    cells: int, grid_size: int, estimates: Mapping[str, ModelEstimate], comparisons: Comparisons
) -> BudgetRound:
    """What the stop rule read after a round (a budgeted run's `budget.rounds`)."""
    half_widths = {
        model: {
            key: half_width(m.stats.sharpe_ci_low, m.stats.sharpe_ci_high)
            for key, m in estimate.metrics.items()
        }
        for model, estimate in estimates.items()
    }
    log = BudgetRound(cells=cells, fraction=cells / grid_size, sharpe_ci_half_width=half_widths)
    if comparisons.adjusted:
        log.max_p_adjusted = max(
            t.p_romano_wolf for tests in comparisons.adjusted.values() for t in tests
        )
    return log


def usable_interval(estimate: float, low: float | None, high: float | None) -> bool:
    """An interval a stopping rule may read: finite, of positive width, holding its own
    estimate. Too few bootstrap replicates give zero-width intervals or ones that
    exclude the estimate (a Sharpe "CI" [1.121, 1.121] for 0.471)."""
    if low is None or high is None:
        return False
    if not all(math.isfinite(x) for x in (estimate, low, high)):
        return False
    return high > low and low <= estimate <= high


def enough_replicates(n_boot: int | None, confidence: float | None) -> bool:
    """Bootstrap replicates enough for each tail of the interval to hold at least one
    (2 / (1 − confidence): 40 at 0.95); with fewer, an end is an interpolation between
    the extreme replicates, which a stopping rule must not read."""
    if not n_boot or confidence is None:
        return False
    return n_boot >= math.ceil(2 / (1 - confidence) - 1e-9)


def half_width(low: float | None, high: float | None) -> float | None:
    return (high - low) / 2 if low is not None and high is not None else None
