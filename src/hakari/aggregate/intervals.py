"""Confidence intervals for the statistics over templates (mean, std, Sharpe score).

Inferential target. The templates of a task are a sample from a larger population of
instruction templates that could have been written for it, and the instances are a sample
from the population of inputs of the task. The intervals cover the statistic of those
populations: for the Sharpe score, `mu / (alpha * sigma + 1)` where `mu` and `sigma` are
the mean and the (population) standard deviation, over the template population, of each
template's metric on the instance population. The point estimate stays the paper's
formula on the observed templates (population std, ddof=0).

Method: studentised two-way bootstrap (`"studentized"`, the default). A replicate
resamples templates and instances (see `resampling`); each statistic `theta` comes with a
standard error made of two parts:

* the template part, from the delta method over the (resampled) templates: the
  influence of template t on the mean is `x_t - m`, on the std
  `((x_t - m)^2 - s^2) / (2 s)`, and on the Sharpe score
  `infl_mean / (alpha s + 1) - alpha m / (alpha s + 1)^2 * infl_std`; the standard error
  is `sqrt(sum_t infl_t^2 / (T (T - 1)))` (0 for one template);
* the instance part, the variance of the statistic over replicates that resample the
  instances only (all templates kept), which the replicates give for free.

`t* = (theta* - theta) / se*` is computed for every replicate and the interval is
`[theta - q(1 - a/2) se, theta - q(a/2) se]`. Why not the percentile interval: with 8 to
18 templates the template part dominates, and a percentile interval is a z-interval with
a ddof=0 spread that shrinks the replicate std a second time; in
`benchmarks/bench_ci_coverage.py` (template effects dominating, 8 / 12 / 14 / 18
templates) its 95% Sharpe interval covers the population value only 0.82 / 0.91 / 0.91 /
0.89 of the time, the studentised one 0.94 / 0.96 / 0.95 / 0.93. Replicates whose `se*` is 0
(every resampled template equal and no instance variation) carry no pivot and are left
out; if none is left, or the observed standard error is 0, the percentile interval is
used.

`"percentile"` (the method before this module) stays available for comparison.

Ranges. `theta - q se` knows nothing of the quantity's range: on a small run (`--limit
4`) a std interval can start below 0, an MCC std interval end above 1, an accuracy
Sharpe interval start below 0. Every interval is therefore cut to the range of its
quantity (`statistic_bounds`: the mean in the metric's range, the population std in
[0, half the range's width], the Sharpe score between the range's ends and 0; for a
difference A − B, the differences of those), and the ends that were cut are named
(`Interval.clipped`, `ci_clipped` in results.json). Cutting changes no coverage: the true
value lies in the range, so it lies in the cut interval exactly when it lay in the
uncut one; only impossible values leave. The point estimates are untouched.

One template's score (`TemplateInterval`): the template is fixed and only the instances
vary, so its interval is the percentile interval of its score over the instance resamples
the same replicates drew (the statistic is one corpus metric over many instances, where
the percentile interval is the usual one; it stays inside the metric's range).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hakari.results.stats import TemplateInterval

CI_METHODS = ("studentized", "percentile")
DEFAULT_CI_METHOD = "studentized"
STATISTICS = ("mean", "std", "sharpe")
UNBOUNDED = (-math.inf, math.inf)

Bounds = tuple[float, float]


def statistic_bounds(value_range: Bounds) -> dict[str, Bounds]:
    """The range of the mean, the population std and the Sharpe score (any alpha >= 0)
    of template scores that lie in `value_range`: the std is largest with half the
    templates at each end, and the Sharpe score has the mean's sign and at most its
    size."""
    low, high = value_range
    return {
        "mean": (low, high),
        "std": (0.0, (high - low) / 2.0),
        "sharpe": (min(low, 0.0), max(high, 0.0)),
    }


def difference_bounds(value_range: Bounds) -> dict[str, Bounds]:
    """The range of A − B for each statistic (`statistic_bounds` of each model)."""
    each = statistic_bounds(value_range)
    return {name: (low - high, high - low) for name, (low, high) in each.items()}


@dataclass(frozen=True)
class Interval:
    """A confidence interval cut to its quantity's range; `clipped` names the ends that
    were cut ("low", "high")."""

    low: float
    high: float
    clipped: tuple[str, ...] = ()

    @classmethod
    def within(cls, low: float, high: float, bounds: Bounds) -> Interval:
        floor, ceiling = bounds
        new_low = min(max(low, floor), ceiling)
        new_high = max(min(high, ceiling), new_low)
        clipped = (("low",) if new_low != low else ()) + (("high",) if new_high != high else ())
        return cls(new_low, new_high, clipped)

    @property
    def pair(self) -> tuple[float, float]:
        return self.low, self.high


def template_statistics(
    scores: np.ndarray, alpha: float
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Mean, population std and Sharpe score over the last axis, with each template's
    influence on them.

    scores: (..., T). Returns {name: (value (...), influence (..., T))}.
    """
    mean = scores.mean(axis=-1, keepdims=True)
    dev = scores - mean
    std = np.sqrt((dev * dev).mean(axis=-1, keepdims=True))
    denom = alpha * std + 1.0
    safe_std = np.where(std > 0, std, 1.0)
    infl_std = np.where(std > 0, (dev * dev - std * std) / (2.0 * safe_std), 0.0)
    infl_sharpe = dev / denom - alpha * mean / (denom * denom) * infl_std
    return {
        "mean": (mean[..., 0], dev),
        "std": (std[..., 0], infl_std),
        "sharpe": ((mean / denom)[..., 0], infl_sharpe),
    }


def template_se(influence: np.ndarray) -> np.ndarray:
    """Delta-method standard error over the last axis: sqrt(sum infl^2 / (T (T - 1)))."""
    n_templates = influence.shape[-1]
    if n_templates < 2:
        return np.zeros(influence.shape[:-1])
    return np.sqrt((influence * influence).sum(axis=-1) / (n_templates * (n_templates - 1)))


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """Equal-tailed quantiles of the replicate values (`numpy.quantile`, linear)."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def template_intervals(
    template_ids: Sequence[str], every: np.ndarray, confidence: float
) -> dict[str, TemplateInterval]:
    """Each template's percentile interval over the replicates' instance resamples.

    every: (n_boot, T), the scores of all templates on each replicate's instances.
    Replicates where a template's score is undefined (NaN: a correlation of a constant
    column) are left out; a template with none left gets no interval."""
    tail = (1.0 - confidence) / 2.0
    out: dict[str, TemplateInterval] = {}
    for template_id, column in zip(template_ids, every.T, strict=True):
        defined = column[~np.isnan(column)]
        if defined.size:
            low, high = np.quantile(defined, [tail, 1.0 - tail])
            out[template_id] = TemplateInterval(low=float(low), high=float(high))
    return out


@dataclass(frozen=True, eq=False)
class Replicates:
    """One statistic: its point estimate and its bootstrap replicates.

    `values` and `values_se` are the statistic and its template standard error on the
    templates × instances replicates; `instance_values` the statistic on the same
    instance resamples with every template kept.
    """

    point: float
    point_se: float
    values: np.ndarray
    values_se: np.ndarray
    instance_values: np.ndarray

    def _standard_errors(self) -> tuple[float, np.ndarray]:
        instance_var = float(np.var(self.instance_values))
        se_hat = math.sqrt(self.point_se**2 + instance_var)
        return se_hat, np.sqrt(self.values_se**2 + instance_var)

    def pivots(self) -> tuple[float, np.ndarray]:
        """The observed standard error and the studentised replicates `t*` (replicates
        with a zero standard error left out)."""
        se_hat, se_star = self._standard_errors()
        keep = se_star > 0
        return se_hat, (self.values[keep] - self.point) / se_star[keep]

    def interval(self, method: str, confidence: float) -> tuple[float, float]:
        """The interval as the method gives it (it may pass the quantity's range; see
        `bounded`)."""
        if method == "percentile":
            return percentile_interval(self.values, confidence)
        if method != "studentized":
            raise ValueError(f"unknown CI method {method!r}; expected one of {CI_METHODS}")
        se_hat, t_star = self.pivots()
        if se_hat == 0.0 or t_star.size == 0:
            return percentile_interval(self.values, confidence)
        tail = (1.0 - confidence) / 2.0
        q_low, q_high = np.quantile(t_star, [tail, 1.0 - tail])
        return float(self.point - q_high * se_hat), float(self.point - q_low * se_hat)

    def bounded(self, method: str, confidence: float, bounds: Bounds = UNBOUNDED) -> Interval:
        """The interval cut to `bounds`, the range of the quantity (module docstring)."""
        return Interval.within(*self.interval(method, confidence), bounds)

    def p_value(self) -> float:
        """Two-sided bootstrap-t p-value of "the statistic is 0" (add-one estimate):
        the share of |t*| at least |theta / se|. Meant for differences."""
        se_hat, t_star = self.pivots()
        if se_hat == 0.0 or t_star.size == 0:
            return 1.0 if self.point == 0.0 else 1.0 / (len(self.values) + 1)
        observed = abs(self.point) / se_hat
        return float((1 + np.count_nonzero(np.abs(t_star) >= observed)) / (t_star.size + 1))


def pooled_mean_interval(
    observed: np.ndarray,
    every: np.ndarray,
    *,
    method: str,
    confidence: float,
    bounds: Bounds = UNBOUNDED,
    seed: int = 0,
) -> Interval:
    """The interval of the mean over templates of pooled template scores (a family's or
    a leaderboard category's), over templates × items.

    observed: (T,) the pooled scores; every: (n_boot, T) the pooled scores on each
    replicate's instances (each member's instances resampled by its own bootstrap). The
    templates are resampled here, the same draws for every member, from
    `default_rng(seed)`; the interval is read as a task's mean's is (`Replicates`)."""
    n_boot, n_templates = every.shape
    picked = np.random.default_rng(seed).integers(0, n_templates, size=(n_boot, n_templates))
    observed_mean = template_statistics(observed, 1.0)["mean"]
    resampled_mean = template_statistics(np.take_along_axis(every, picked, axis=1), 1.0)["mean"]
    reps = Replicates(
        point=float(observed_mean[0]),
        point_se=float(template_se(observed_mean[1])),
        values=resampled_mean[0],
        values_se=template_se(resampled_mean[1]),
        instance_values=template_statistics(every, 1.0)["mean"][0],
    )
    return reps.bounded(method, confidence, bounds)
