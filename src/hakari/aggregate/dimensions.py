"""What a prompt space tells: how much of the spread over templates each dimension
explains, its best and worst level, and the template distribution's percentiles.

Input: the template scores and their bootstrap (`Bootstrapped`: a full run's
`resampling.BootstrapResult`, or a budgeted run's estimate on its imputed replicates; the
same templates × instances replicates as the mean, std and Sharpe intervals; no second
bootstrap) and each template's level on every dimension of the space.

Share of the variance (one-way, main effect, per dimension on its own). With `T`
template scores `x_t`, their mean `m`, the mean `m_l` of the `n_l` templates at level
`l` of the dimension and `k` levels present:

* `SS_between = sum_l n_l (m_l - m)^2`, `SS_total = sum_t (x_t - m)^2`;
* `eta_squared = SS_between / SS_total`, the share of the between-level variance in
  the total variance over templates, as observed;
* `omega_squared = (SS_between - (k - 1) MS_within) / (SS_total + MS_within)` with
  `MS_within = (SS_total - SS_between) / (T - k)`: the same share with the part that
  chance alone gives removed. eta² is biased upward: with 40 templates a dimension of 5
  levels that does nothing has an expected eta² of 4/39 = 0.10. `share` (the headline,
  the number the reports show) is omega², which can fall below 0 (less than chance).

Each dimension is taken alone: in a sampled space (`space:N`) the dimensions are only
about balanced, so shares of different dimensions need not add to 1.

Intervals, from the aggregate's replicates: the share's is the percentile interval of
omega² over the templates × instances replicates (each replicate's resampled templates
keep their levels; replicates where fewer than two levels or no within-level freedom
remain are left out). A resample of templates with replacement repeats templates, which
shrinks the variance within levels and lifts the replicates' omega²: the interval leans
high (it errs towards "this dimension may matter"), and for a share at its floor it can
start just above the point. Efron's bias-corrected interval was tried and rejected: at
the floor it collapses to a point ([-0.08, -0.08] on a real grid), a certainty the data
do not give. The best-minus-worst difference (the levels with the highest and
the lowest mean, on the observed scores) is read with the aggregate's `ci_method`
(studentised: the template influence of `m_best - m_worst` is
`1{t in best} (x_t - m_best) T / n_best - 1{t in worst} (x_t - m_worst) T / n_worst`);
replicates that miss either level are left out. Each level's mean gets the same kind of
interval (influence `1{t in l} (x_t - m_l) T / n_l`; replicates that miss the level are
left out), cut to the metric's range. The 5th, 50th and 95th percentiles of
the template scores (`numpy.quantile`, linear) get the percentile interval of the same
percentile of each replicate's resampled template scores, cut to the metric's range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from hakari.aggregate.intervals import Interval, Replicates, percentile_interval, template_se
from hakari.results.space import DimensionEffect, LevelMean, Percentile, SpaceSummary

PERCENTILES = (5.0, 50.0, 95.0)
SHARE = "omega_squared"
SHARE_TEXT = (
    "omega squared: (SS_between - (k-1) MS_within) / (SS_total + MS_within) over the "
    "template scores, each dimension alone (eta_squared: SS_between / SS_total)"
)


class TemplateDraws(Protocol):
    """The template scores of a bootstrap's replicates (`resampling.TemplateReplicates`,
    `budget.draws.ImputedScores`): `every[b]` all templates' scores on replicate b's
    instances, `resampled[b] = every[b, picked[b]]` the templates it drew."""

    @property
    def template_ids(self) -> tuple[str, ...]: ...

    @property
    def resampled(self) -> np.ndarray: ...

    @property
    def every(self) -> np.ndarray: ...

    @property
    def picked(self) -> np.ndarray | None: ...


class Bootstrapped(Protocol):
    """The bootstrap behind an aggregate and how its intervals are read (None: none ran)."""

    @property
    def replicates(self) -> TemplateDraws | None: ...

    @property
    def confidence(self) -> float | None: ...

    @property
    def ci_method(self) -> str | None: ...


@dataclass(frozen=True)
class _Boot:
    draws: TemplateDraws
    confidence: float
    ci_method: str


def summarize(
    per_template: Mapping[str, float],
    levels: Mapping[str, Mapping[str, str] | None],
    bootstrapped: Bootstrapped | None,
    value_range: tuple[float, float] = (-np.inf, np.inf),
) -> SpaceSummary | None:
    """The space record of one metric, or None when no template carries levels.

    Templates without levels (hand-written ones beside a space) are left out of the
    decomposition; `bootstrapped` (the aggregate's bootstrap over the same templates, or
    None) gives the intervals."""
    boot = None
    if bootstrapped is not None and bootstrapped.replicates is not None:
        assert bootstrapped.confidence is not None and bootstrapped.ci_method is not None
        boot = _Boot(bootstrapped.replicates, bootstrapped.confidence, bootstrapped.ci_method)
    order = per_template if boot is None else boot.draws.template_ids
    ids = [t for t in order if levels.get(t)]
    if not ids:
        return None
    x = np.array([per_template[t] for t in ids], dtype=np.float64)
    rows = _replicate_rows(ids, boot)
    dims = list(dict.fromkeys(d for t in ids for d in levels[t] or {}))
    effects = {
        d: _effect([(levels[t] or {}).get(d, "") for t in ids], x, rows, boot, value_range)
        for d in dims
    }
    return SpaceSummary(
        definition=SHARE_TEXT,
        percentiles=_percentiles(x, rows, boot, value_range),
        dimensions=effects,
        n_templates=len(ids),
        confidence=None if boot is None else boot.confidence,
    )


Rows = tuple[np.ndarray, np.ndarray, np.ndarray] | None
"""(picked template positions (B, T), their scores (B, T), every template's scores on
the replicate's instances (B, T)) of the bootstrap."""


def _replicate_rows(ids: Sequence[str], boot: _Boot | None) -> Rows:
    if boot is None:
        return None
    reps = boot.draws
    picked = reps.picked
    if picked is None or tuple(ids) != reps.template_ids:
        # hand-written templates beside the space's: their draws mix both, so the
        # space's numbers get no interval rather than one from other templates
        return None
    return picked, reps.resampled, reps.every


def level_codes(values: Sequence[str]) -> tuple[list[str], np.ndarray]:
    names = list(dict.fromkeys(values))
    index = {name: i for i, name in enumerate(names)}
    return names, np.array([index[v] for v in values], dtype=np.int64)


def level_sums(codes: np.ndarray, x: np.ndarray, n_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per level, how many templates and the sum of their scores: codes and x (..., T) ->
    counts and sums (..., L)."""
    onehot = codes[..., None] == np.arange(n_levels)
    return onehot.sum(axis=-2), (onehot * x[..., None]).sum(axis=-2)


def shares(codes: np.ndarray, x: np.ndarray, n_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """(eta², omega²) over the last axis; NaN where undefined (module docstring)."""
    counts, sums = level_sums(codes, x, n_levels)
    n = x.shape[-1]
    mean = x.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # sum of counts x squared deviations of the level means (not sums²/n - n·mean²,
        # whose cancellation made eta² of an all-explaining dimension 1.0000000000000087)
        level_mean = sums / np.maximum(counts, 1)
        between = (counts * (level_mean - mean[..., None]) ** 2).sum(-1)
        total = ((x - mean[..., None]) ** 2).sum(axis=-1)
        between = np.minimum(between, total)  # a share is at most 1, whatever the rounding
        k = (counts > 0).sum(axis=-1)
        within = (total - between) / (n - k)
        eta = np.where(total > 1e-15, between / total, np.nan)
        omega = (between - (k - 1) * within) / (total + within)
        omega = np.where((total > 1e-15) & (k > 1) & (n > k), omega, np.nan)
    return eta, omega


def _effect(
    values: list[str],
    x: np.ndarray,
    rows: Rows,
    boot: _Boot | None,
    value_range: tuple[float, float],
) -> DimensionEffect:
    names, codes = level_codes(values)
    counts, sums = level_sums(codes, x, len(names))
    means = sums / counts
    ranked = np.argsort(means, kind="stable")  # ties: two distinct levels still
    best, worst = int(ranked[-1]), int(ranked[0])
    eta, omega = shares(codes, x, len(names))
    level_means = [
        LevelMean(level=name, n_templates=int(c), mean=float(m))
        for name, c, m in zip(names, counts, means, strict=True)
    ]
    effect = DimensionEffect(
        share=_finite(omega),
        eta_squared=_finite(eta),
        levels=level_means,
        best=names[best],
        worst=names[worst],
        best_minus_worst=float(means[best] - means[worst]),
    )
    if rows is None or boot is None:
        return effect
    picked, resampled, _ = rows
    drawn = codes[picked]
    _, omega_star = shares(drawn, resampled, len(names))
    defined = omega_star[np.isfinite(omega_star)]
    update: dict[str, Any] = {}
    if defined.size and effect.share is not None:
        low, high = percentile_interval(defined, boot.confidence)
        share = Interval.within(low, high, (-np.inf, 1.0))
        update |= {"share_ci_low": share.low, "share_ci_high": share.high}
    if best != worst:
        diff = _replicates(partial(_difference, best=best, worst=worst), codes, x, rows)
        if diff is not None:
            low, high = diff.interval(boot.ci_method, boot.confidence)
            update |= {"diff_ci_low": low, "diff_ci_high": high}
    update["levels"] = [
        _with_interval(
            lm, _replicates(partial(_level_mean, level=i), codes, x, rows), boot, value_range
        )
        for i, lm in enumerate(level_means)
    ]
    return effect.model_copy(update=update)


def _with_interval(
    level: LevelMean,
    reps: Replicates | None,
    boot: _Boot,
    value_range: tuple[float, float],
) -> LevelMean:
    if reps is None:
        return level
    interval = reps.bounded(boot.ci_method, boot.confidence, value_range)
    return level.model_copy(update={"ci_low": interval.low, "ci_high": interval.high})


Statistic = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""(level codes, scores) over the last axis -> the statistic and each template's
influence on it."""


def _level_mean(codes: np.ndarray, x: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean score of the templates at `level` over the last axis and each template's
    influence on it (NaN where no template is at the level)."""
    n = x.shape[-1]
    inside = codes == level
    n_level = inside.sum(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (x * inside).sum(-1, keepdims=True) / n_level
        influence = np.where(inside, (x - mean) * n / n_level, 0.0)
    return mean[..., 0], influence


def _difference(
    codes: np.ndarray, x: np.ndarray, best: int, worst: int
) -> tuple[np.ndarray, np.ndarray]:
    """m_best - m_worst over the last axis and each template's influence on it."""
    m_best, i_best = _level_mean(codes, x, best)
    m_worst, i_worst = _level_mean(codes, x, worst)
    return m_best - m_worst, i_best - i_worst


def _replicates(
    statistic: Statistic, codes: np.ndarray, x: np.ndarray, rows: Rows
) -> Replicates | None:
    """The statistic on the observed templates and on the aggregate's replicates
    (replicates where it is undefined left out; None when it is undefined on all)."""
    assert rows is not None
    picked, resampled, every = rows
    point, point_infl = statistic(codes, x)
    values, infl = statistic(codes[picked], resampled)
    on_every, _ = statistic(np.broadcast_to(codes, every.shape), every)
    keep = np.isfinite(values)
    if not keep.any():
        return None
    return Replicates(
        point=float(point),
        point_se=float(template_se(point_infl)),
        values=values[keep],
        values_se=template_se(infl[keep]),
        instance_values=on_every[keep],
    )


def _percentiles(
    x: np.ndarray, rows: Rows, boot: _Boot | None, value_range: tuple[float, float]
) -> list[Percentile]:
    qs = np.array(PERCENTILES) / 100.0
    points = np.quantile(x, qs)
    if rows is None or boot is None:
        return [Percentile(q=q, value=float(v)) for q, v in zip(PERCENTILES, points, strict=True)]
    per_replicate = np.quantile(rows[1], qs, axis=1)  # (3, B)
    out = []
    for q, value, column in zip(PERCENTILES, points, per_replicate, strict=True):
        interval = Interval.within(*percentile_interval(column, boot.confidence), value_range)
        out.append(Percentile(q=q, value=float(value), ci_low=interval.low, ci_high=interval.high))
    return out


def _finite(value: np.ndarray) -> float | None:
    v = float(value)
    return v if np.isfinite(v) else None
