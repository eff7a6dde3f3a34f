"""IFTEval's meta-evaluation numbers (seed 003 §2.4, Table 1), as its code computes them.

The unit is one row per system × group (IFTEval: trained model × task): the mean of the
system's scores on that group. With `hakari meta`, `--system-field` names the system and
`--group-by` the task.

* **CAT** (comparability across tasks): one Spearman correlation over all units of all
  groups concatenated.
* **CIT** (consistency inside tasks): a Spearman correlation per group across its units,
  then the unweighted mean over groups. IFTEval's pandas code silently skips a group where
  a metric is constant; here such groups are listed with the reason.
* **TFA** (task format agnosticism): per group, the relative change `(b - a) / a` between
  a "before" system (zero-shot) and an "after" system (trained on the target task), then
  the mean over groups, for each metric and for the human score (IFTEval: +12% human).
  A group where `a` is 0 or missing is listed, not averaged.

Spearman uses average ranks for ties, and NaN units are dropped pairwise and counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hakari.meta.correlation import coefficient, paired_values, per_group_coefficients


def unit_table(
    values: Sequence[float] | np.ndarray, systems: Sequence[str], groups: Sequence[str]
) -> dict[tuple[str, str], float]:
    """Mean of the finite values per (system, group); NaN where a unit has none."""
    buckets: dict[tuple[str, str], list[float]] = {}
    for v, s, g in zip(values, systems, groups, strict=True):
        bucket = buckets.setdefault((s, g), [])
        if math.isfinite(v):
            bucket.append(v)
    return {k: (float(np.mean(b)) if b else math.nan) for k, b in buckets.items()}


def cat_cit(
    metric: Sequence[float],
    human: Sequence[float],
    systems: Sequence[str],
    groups: Sequence[str],
) -> dict[str, Any]:
    m_units = unit_table(metric, systems, groups)
    h_units = unit_table(human, systems, groups)
    keys = list(m_units)
    x = np.asarray([m_units[k] for k in keys])
    y = np.asarray([h_units[k] for k in keys])
    px, py, missing = paired_values(x, y)
    cat = coefficient("spearman", px, py)
    keep = np.isfinite(x) & np.isfinite(y)
    kept_groups = [k[1] for k, ok in zip(keys, keep, strict=True) if ok]
    values, undefined = per_group_coefficients("spearman", x[keep], y[keep], kept_groups)
    cit = float(np.mean(list(values.values()))) if values else math.nan
    return {
        "CAT": {
            "value": None if math.isnan(cat) else cat,
            "n_units": int(px.size),
            "n_units_missing": missing,
        },
        "CIT": {
            "value": None if math.isnan(cit) else cit,
            "n_groups": len(values),
            "per_group": values,
            "undefined_groups": undefined,
        },
    }


def relative_change(
    values: Sequence[float] | np.ndarray,
    systems: Sequence[str],
    groups: Sequence[str],
    before: str,
    after: str,
) -> dict[str, Any]:
    units = unit_table(values, systems, groups)
    per_group: dict[str, float] = {}
    undefined: dict[str, str] = {}
    for group in dict.fromkeys(groups):
        a, b = units.get((before, group), math.nan), units.get((after, group), math.nan)
        if math.isnan(a) or math.isnan(b):
            undefined[group] = f"no score for {before if math.isnan(a) else after!r}"
        elif a == 0:
            undefined[group] = f"{before!r} scores 0: relative change undefined"
        else:
            per_group[group] = (b - a) / a
    mean = float(np.mean(list(per_group.values()))) if per_group else None
    return {"value": mean, "per_group": per_group, "undefined_groups": undefined}


def tfa(
    columns: dict[str, Sequence[float] | np.ndarray],
    systems: Sequence[str],
    groups: Sequence[str],
    before: str,
    after: str,
) -> dict[str, Any]:
    """TFA of every column (the metrics and `human`), keyed like `columns`."""
    return {
        name: relative_change(values, systems, groups, before, after)
        for name, values in columns.items()
    }
