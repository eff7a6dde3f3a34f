"""Summary of per-template scores: mean, population std, extremes, Sharpe score.

One aggregate is computed per model × task × decoding × metric from the corpus-level
metric of each instruction template. The spread is the **population** standard deviation
(ddof=0) of the per-template scores; the paper (Sakai et al., §5.2) does not say which it
uses, so every result records `std_kind="population"`.

Sharpe score (paper eq. 1): `mean / (alpha * std + 1)`; alpha 0 gives the plain mean.
The formula is kept exactly, also for a negative mean (MCC or a correlation below 0),
where it rewards spread instead of penalising it; such aggregates carry
`sharpe_caveat="negative_mean"`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

STD_KIND = "population"


def sharpe_score(mean: float, std: float, alpha: float = 1.0) -> float:
    """Sharpe score `mean / (alpha * std + 1)` (paper eq. 1)."""
    if not (math.isfinite(mean) and math.isfinite(std) and math.isfinite(alpha)):
        raise ValueError(f"sharpe_score needs finite values, got {mean=}, {std=}, {alpha=}")
    if std < 0 or alpha < 0:
        raise ValueError(f"sharpe_score needs std >= 0 and alpha >= 0, got {std=}, {alpha=}")
    return mean / (alpha * std + 1.0)


def sharpe_array(mean: np.ndarray, std: np.ndarray, alpha: float) -> np.ndarray:
    return mean / (alpha * std + 1.0)


@dataclass(frozen=True)
class AggregateStats:
    """Summary of the per-template scores of one model × task × decoding × metric."""

    mean: float
    std: float
    min: float
    max: float
    sharpe: float
    alpha: float
    n_templates: int
    median: float
    q10: float
    q90: float
    std_kind: str = STD_KIND
    ci_low: float | None = None
    ci_high: float | None = None
    sharpe_ci_low: float | None = None
    sharpe_ci_high: float | None = None

    @property
    def sharpe_caveat(self) -> str | None:
        """ "negative_mean" when mean < 0: eq. 1 then *rewards* spread (a larger
        denominator brings a negative mean closer to 0), so the Sharpe score no longer
        penalises instability and should be read with the mean and std beside it."""
        return "negative_mean" if self.mean < 0 else None

    @property
    def max_minus_min(self) -> float:
        """Best minus worst template (FormatSpread's spread)."""
        return self.max - self.min

    def to_dict(self) -> dict[str, float | int | str | None]:
        """The `aggregate[METRIC]` layout of results.json, plus the extra keys."""
        return {
            "mean": self.mean,
            "std": self.std,
            "min": self.min,
            "max": self.max,
            "sharpe": self.sharpe,
            "alpha": self.alpha,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "std_kind": self.std_kind,
            "n_templates": self.n_templates,
            "sharpe_ci_low": self.sharpe_ci_low,
            "sharpe_ci_high": self.sharpe_ci_high,
            "sharpe_caveat": self.sharpe_caveat,
            "median": self.median,
            "max_minus_min": self.max_minus_min,
            "q10": self.q10,
            "q90": self.q90,
        }


def aggregate(per_template: Mapping[str, float], *, alpha: float = 1.0) -> AggregateStats:
    """Mean, population std, extremes, quantiles and Sharpe score over templates."""
    if len(per_template) == 0:
        raise ValueError("aggregate needs at least one template score")
    scores = np.asarray(list(per_template.values()), dtype=np.float64)
    if not np.all(np.isfinite(scores)):
        bad = [t for t, s in per_template.items() if not math.isfinite(s)]
        raise ValueError(f"non-finite template scores for {bad}")
    mean = float(scores.mean())
    std = float(scores.std(ddof=0))
    q10, median, q90 = (float(q) for q in np.quantile(scores, [0.1, 0.5, 0.9]))
    return AggregateStats(
        mean=mean,
        std=std,
        min=float(scores.min()),
        max=float(scores.max()),
        sharpe=sharpe_score(mean, std, alpha),
        alpha=alpha,
        n_templates=len(scores),
        median=median,
        q10=q10,
        q90=q90,
    )
