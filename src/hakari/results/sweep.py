"""Alpha sweep: how the ranking of models by Sharpe score changes with alpha (paper,
Figures 3 and 5): `alpha_sweep[TASK][DECODING][METRIC]` of results.json. A function of the
published means and stds only, so a report recomputes it for merged runs without the
aggregation code."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import ConfigDict

from hakari._util.records import Record
from hakari.results.stats import sharpe_score


class AlphaSweepPoint(Record):
    """The models' Sharpe scores and ranking at one alpha: one item of
    `alpha_sweep[TASK][DECODING][METRIC]` in results.json."""

    model_config = ConfigDict(frozen=True)

    alpha: float
    """The alpha of eq. 1 for this point (0.0, 0.1, ..., 2.0 by default)."""
    scores: dict[str, float]
    """Model -> its Sharpe score `mean / (alpha * std + 1)` at this alpha, from its
    published mean and std (the metric's scale)."""
    ranking: list[str]
    """The models, best score first; equal scores ordered by model name."""


def default_alphas() -> list[float]:
    """0.0, 0.1, ..., 2.0, rounded to one decimal (paper, Figures 3 and 5)."""
    return [round(0.1 * k, 1) for k in range(21)]


def rank_models(scores: Mapping[str, float]) -> list[str]:
    """Model names, best score first; equal scores are ordered by model name (ascending)."""
    return sorted(scores, key=lambda model: (-scores[model], model))


def alpha_sweep(
    model_stats: Mapping[str, tuple[float, float]], alphas: Sequence[float] | None = None
) -> list[AlphaSweepPoint]:
    """Sharpe score and ranking of each model for each alpha.

    `model_stats` maps model -> (mean, std) over templates. Returns one point per alpha
    (rankings: see `rank_models`).
    """
    if len(model_stats) == 0:
        raise ValueError("alpha_sweep needs at least one model")
    sweep = default_alphas() if alphas is None else [float(a) for a in alphas]
    out: list[AlphaSweepPoint] = []
    for alpha in sweep:
        scores = {m: sharpe_score(mean, std, alpha) for m, (mean, std) in model_stats.items()}
        out.append(AlphaSweepPoint(alpha=alpha, scores=scores, ranking=rank_models(scores)))
    return out
