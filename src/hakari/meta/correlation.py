"""Correlation of a metric with human scores at the three levels of the summarisation
meta-evaluation literature (Bhandari et al. 2020; Deutsch et al. 2021):

* **pooled**: every (row) pair at once;
* **system**: the mean score of each system, then the correlation across systems;
* **summary**: within each group (document, prompt) across its systems, then the mean
  over groups.

Pearson, Spearman (average ranks for ties) and Kendall tau-b, as scipy computes them.
Confidence intervals are percentile bootstraps that resample the unit the level is about:
rows (pooled), systems (system level), groups (summary level).

Nothing is dropped silently. Rows where the metric or the human score is NaN are left out
of that metric's statistics and counted (`n_missing`); tied values are counted (`ties`);
a constant column makes a coefficient undefined: the value is null with the reason, and
at summary level the groups where it happens are counted and named (`undefined_groups`)
and the mean is over the other groups. Bootstrap replicates whose coefficient is undefined
are counted too (`n_boot_undefined`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import kendalltau, pearsonr, rankdata, spearmanr

from hakari._util import checks

STATS = ("pearson", "spearman", "kendall")


@dataclass(frozen=True)
class BootstrapSettings:
    n_boot: int = 1000  # 0: no intervals
    confidence: float = 0.95
    seed: int = 0

    def check(self, n_rows: int) -> None:
        """Every setting in range, and the resamples of `n_rows` rows within memory."""
        checks.integer(self.n_boot, "--n-boot", low=0)
        checks.number(
            self.confidence, "--confidence", low=0.0, high=1.0, low_open=True, high_open=True
        )
        checks.seed(self.seed)
        checks.fits_in_memory(
            bootstrap_bytes(self.n_boot, n_rows), "--n-boot", self.n_boot, "the resamples"
        )


def bootstrap_bytes(n_boot: int, n: int) -> int:
    """The most memory one interval takes: the (n_boot, n) resampled indices, both
    resampled columns, and the centred columns and products of the row-wise Pearson
    (Spearman adds the ranks), about nine (n_boot, n) arrays of 8 bytes."""
    return 9 * 8 * n_boot * n


def _constant(values: np.ndarray) -> bool:
    return bool(values.size == 0 or np.all(values == values[0]))


def coefficient(stat: str, x: np.ndarray, y: np.ndarray) -> float:
    """One coefficient, NaN where it is undefined (fewer than 2 points, a constant side)."""
    if x.size < 2 or _constant(x) or _constant(y):
        return math.nan
    if stat == "pearson":
        return float(pearsonr(x, y).statistic)
    if stat == "spearman":
        return float(spearmanr(x, y).statistic)
    if stat == "kendall":
        return float(kendalltau(x, y).statistic)  # tau-b (scipy's default variant)
    raise ValueError(stat)


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson of each row pair of two (B, n) arrays; NaN where a row is constant. Each
    row is divided by its largest magnitude first (the coefficient does not change), so
    scores near the float limit (1e300) do not overflow the sums."""
    xc = _centred(_unit_scaled(x))
    yc = _centred(_unit_scaled(y))
    den = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=1) / den
    r[den <= 1e-300] = math.nan
    return np.clip(r, -1.0, 1.0)


def _unit_scaled(rows: np.ndarray) -> np.ndarray:
    peak = np.abs(rows).max(axis=1, keepdims=True)
    return rows / np.where(peak > 0, peak, 1.0)


def _centred(rows: np.ndarray) -> np.ndarray:
    return rows - rows.mean(axis=1, keepdims=True)


def bootstrap_pairs(stat: str, x: np.ndarray, y: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """The coefficient on each resample `x[indices[b]], y[indices[b]]`."""
    xs, ys = x[indices], y[indices]
    if stat == "pearson":
        return _rowwise_pearson(xs, ys)
    if stat == "spearman":
        return _rowwise_pearson(rankdata(xs, axis=1), rankdata(ys, axis=1))
    return np.asarray([coefficient("kendall", a, b) for a, b in zip(xs, ys, strict=True)])


def _interval(values: np.ndarray, confidence: float) -> tuple[float | None, float | None, int]:
    finite = values[np.isfinite(values)]
    undefined = int(values.size - finite.size)
    if finite.size == 0:
        return None, None, undefined
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high), undefined


def _none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _ties(values: np.ndarray) -> int:
    return int(values.size - np.unique(values).size)


@dataclass
class LevelResult:
    """One metric at one level: the JSON object of `levels[LEVEL][METRIC]`."""

    coefficients: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**self.coefficients, **self.extra}


def paired_values(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """The pairs where both values are finite, and how many pairs were dropped."""
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(xa) & np.isfinite(ya)
    return xa[keep], ya[keep], int((~keep).sum())


def _undefined_reason(x: np.ndarray, y: np.ndarray) -> str | None:
    if x.size < 2:
        return f"{x.size} point(s): a correlation needs at least 2"
    if _constant(x):
        return "the metric is constant"
    if _constant(y):
        return "the human score is constant"
    return None


def _paired_level(x: np.ndarray, y: np.ndarray, boot: BootstrapSettings, unit: str) -> LevelResult:
    """Pooled or system level: coefficients over the pairs (x_i, y_i), CI over units."""
    result = LevelResult()
    reason = _undefined_reason(x, y)
    rng = np.random.default_rng(boot.seed)
    indices = (
        rng.integers(0, x.size, size=(boot.n_boot, x.size)) if x.size and boot.n_boot else None
    )
    for stat in STATS:
        value = coefficient(stat, x, y)
        entry: dict[str, Any] = {"value": _none(value), "ci_low": None, "ci_high": None}
        if reason is None and indices is not None:
            low, high, undefined = _interval(bootstrap_pairs(stat, x, y, indices), boot.confidence)
            entry.update(ci_low=low, ci_high=high, n_boot_undefined=undefined)
        result.coefficients[stat] = entry
    result.extra.update(
        n=int(x.size),
        unit=unit,
        ties={"metric": _ties(x), "human": _ties(y)},
        undefined=reason,
    )
    return result


def pooled_level(
    metric: Sequence[float], human: Sequence[float], boot: BootstrapSettings
) -> LevelResult:
    x, y, missing = paired_values(metric, human)
    result = _paired_level(x, y, boot, unit="row (bootstrap resamples rows)")
    result.extra["n_missing"] = missing
    return result


def group_means(
    values: Sequence[float] | np.ndarray, keys: Sequence[str]
) -> tuple[list[str], np.ndarray]:
    """Mean of the finite values per key, keys in first-seen order (NaN when none)."""
    sums: dict[str, list[float]] = {}
    for v, k in zip(values, keys, strict=True):
        bucket = sums.setdefault(k, [])
        if math.isfinite(v):
            bucket.append(v)
    names = list(sums)
    return names, np.asarray([np.mean(sums[k]) if sums[k] else math.nan for k in names])


def system_level(
    metric: Sequence[float],
    human: Sequence[float],
    systems: Sequence[str],
    boot: BootstrapSettings,
) -> LevelResult:
    """Per system the mean over the rows where both scores exist, then across systems."""
    x_all, y_all = np.asarray(metric, dtype=np.float64), np.asarray(human, dtype=np.float64)
    keep = np.isfinite(x_all) & np.isfinite(y_all)
    kept_systems = [s for s, k in zip(systems, keep, strict=True) if k]
    _, x = group_means(list(x_all[keep]), kept_systems)
    _, y = group_means(list(y_all[keep]), kept_systems)
    result = _paired_level(x, y, boot, unit="system (bootstrap resamples systems)")
    result.extra["n_missing"] = int((~keep).sum())
    result.extra["n_systems_total"] = len(set(systems))
    return result


def per_group_coefficients(
    stat: str, x: np.ndarray, y: np.ndarray, groups: Sequence[str]
) -> tuple[dict[str, float], dict[str, str]]:
    """The coefficient within each group; groups where it is undefined, with why."""
    order: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        order.setdefault(g, []).append(i)
    values: dict[str, float] = {}
    undefined: dict[str, str] = {}
    for g, idx in order.items():
        gx, gy = x[idx], y[idx]
        reason = _undefined_reason(gx, gy)
        if reason is None:
            values[g] = coefficient(stat, gx, gy)
        else:
            undefined[g] = reason
    return values, undefined


def summary_level(
    metric: Sequence[float],
    human: Sequence[float],
    groups: Sequence[str],
    boot: BootstrapSettings,
) -> LevelResult:
    xa, ya = np.asarray(metric, dtype=np.float64), np.asarray(human, dtype=np.float64)
    keep = np.isfinite(xa) & np.isfinite(ya)
    x, y = xa[keep], ya[keep]
    kept_groups = [g for g, k in zip(groups, keep, strict=True) if k]
    rng = np.random.default_rng(boot.seed)
    result = LevelResult()
    undefined_all: dict[str, str] = {}
    n_defined = 0
    for stat in STATS:
        values, undefined = per_group_coefficients(stat, x, y, kept_groups)
        undefined_all.update(undefined)
        arr = np.asarray(list(values.values()))
        n_defined = arr.size
        entry: dict[str, Any] = {
            "value": float(arr.mean()) if arr.size else None,
            "ci_low": None,
            "ci_high": None,
        }
        if arr.size and boot.n_boot:
            idx = rng.integers(0, arr.size, size=(boot.n_boot, arr.size))
            low, high, _ = _interval(arr[idx].mean(axis=1), boot.confidence)
            entry.update(ci_low=low, ci_high=high)
        result.coefficients[stat] = entry
    result.extra.update(
        n=n_defined,
        unit="group (mean of within-group coefficients; bootstrap resamples groups)",
        n_groups_total=len(set(groups)),
        n_missing=int((~keep).sum()),
        ties={"metric": _ties(x), "human": _ties(y)},
        undefined_groups=dict(sorted(undefined_all.items())[:50]),
        n_undefined_groups=len(undefined_all),
        undefined=None if n_defined else "no group with a defined coefficient",
    )
    return result


def correlation_matrix(
    columns: dict[str, Sequence[float] | np.ndarray], stat: str = "spearman"
) -> dict[str, dict[str, float | None]]:
    """Metric × metric coefficients; each pair uses the rows where both are finite."""
    names = list(columns)
    arrays = {n: np.asarray(columns[n], dtype=np.float64) for n in names}
    out: dict[str, dict[str, float | None]] = {n: {} for n in names}
    for i, a in enumerate(names):
        for b in names[i:]:
            x, y, _ = paired_values(arrays[a], arrays[b])
            value = _none(coefficient(stat, x, y))
            out[a][b] = out[b][a] = value
    return out
