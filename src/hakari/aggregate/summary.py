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

import numpy as np

from hakari.results.stats import AggregateStats, sharpe_score


def sharpe_array(mean: np.ndarray, std: np.ndarray, alpha: float) -> np.ndarray:
    return mean / (alpha * std + 1.0)


def sharpe_caveat(mean: float) -> str | None:
    """ "negative_mean" when mean < 0: eq. 1 then *rewards* spread (a larger denominator
    brings a negative mean closer to 0), so the Sharpe score no longer penalises
    instability and should be read with the mean and std beside it; else None."""
    return "negative_mean" if mean < 0 else None


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
    low, high = float(scores.min()), float(scores.max())
    return AggregateStats(
        mean=mean,
        std=std,
        min=low,
        max=high,
        sharpe=sharpe_score(mean, std, alpha),
        alpha=alpha,
        n_templates=len(scores),
        sharpe_caveat=sharpe_caveat(mean),
        median=median,
        max_minus_min=high - low,
        q10=q10,
        q90=q90,
    )
