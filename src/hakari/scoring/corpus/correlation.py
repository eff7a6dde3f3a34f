"""Pearson and Spearman correlation of predicted and gold numbers (STS), -1..1.

With a single instance, or when either side is constant, the coefficient is undefined
(scipy returns NaN); it is 0.0, the chance level, reported as degenerate
("single_instance", "constant_predictions", "constant_references"). Predictions and
golds must be finite numbers (the engine applies the fallback first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hakari.scoring.corpus.base import (
    VARIANCE_RTOL,
    CorpusMetric,
    MetricOptions,
    MetricValue,
    ReplicateScorer,
    class_counts,
    float_values,
    register,
)


class _Correlation(CorpusMetric):
    answer_types = frozenset({"number"})
    value_range = (-1.0, 1.0)

    def statistic(self, x: np.ndarray, y: np.ndarray) -> float:
        raise NotImplementedError

    def compute(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> MetricValue:
        pred = float_values(self.name, predictions, "predictions")
        ref = float_values(self.name, references, "references")
        if len(pred) < 2:
            return MetricValue(0.0, "single_instance")
        if np.all(pred == pred[0]):
            return MetricValue(0.0, "constant_predictions")
        if np.all(ref == ref[0]):
            return MetricValue(0.0, "constant_references")
        return MetricValue(self.statistic(pred, ref))

    def replicate_scorer(
        self,
        predictions: Sequence[Sequence[Any]],
        references: Sequence[Any],
        options: MetricOptions,
        item_scores: np.ndarray | None = None,
    ) -> ReplicateScorer:
        pred = np.vstack([float_values(self.name, p, "predictions") for p in predictions])
        ref = float_values(self.name, references, "references")
        return self.vectorised(pred, ref)

    def vectorised(self, pred: np.ndarray, ref: np.ndarray) -> ReplicateScorer:
        raise NotImplementedError


@register
class Pearson(_Correlation):
    name = "pearson"
    description = "Pearson correlation with the gold scores"

    def statistic(self, x: np.ndarray, y: np.ndarray) -> float:
        from scipy.stats import pearsonr

        return float(pearsonr(x, y).statistic)

    def vectorised(self, pred: np.ndarray, ref: np.ndarray) -> ReplicateScorer:
        """Weighted moment sums of data centred on the full-sample means."""
        n_templates, n = pred.shape
        # Centring on the full-sample means keeps the moment sums free of cancellation.
        x = pred - pred.mean(axis=1, keepdims=True)
        y = ref - ref.mean()
        design = np.hstack([x.T, (x * x).T, (x * y).T, y[:, None], (y * y)[:, None]])

        def score(_idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
            sums = counts @ design
            t = n_templates
            sx, sxx, sxy = sums[:, :t], sums[:, t : 2 * t], sums[:, 2 * t : 3 * t]
            sy, syy = sums[:, 3 * t : 3 * t + 1], sums[:, 3 * t + 1 :]
            var_x = n * sxx - sx * sx
            var_y = n * syy - sy * sy
            constant = (var_x <= VARIANCE_RTOL * n * sxx) | (var_y <= VARIANCE_RTOL * n * syy)
            denom = np.where(constant, 1.0, var_x * var_y)
            r = np.where(constant, 0.0, (n * sxy - sx * sy) / np.sqrt(np.abs(denom)))
            return np.clip(r, -1.0, 1.0)

        return score


@register
class Spearman(_Correlation):
    name = "spearman"
    description = "Spearman rank correlation with the gold scores"

    def statistic(self, x: np.ndarray, y: np.ndarray) -> float:
        from scipy.stats import spearmanr

        return float(spearmanr(x, y).statistic)

    def vectorised(self, pred: np.ndarray, ref: np.ndarray) -> ReplicateScorer:
        """Pearson of average ranks, the ranks recomputed within each replicate from the
        multiplicities of each distinct value (ties, duplicated instances included, share
        their average rank). Ranks are multiples of 1/2, so the sums are exact and a
        constant side gives exactly 0 variance."""
        n_templates, n = pred.shape
        pred_groups = [np.unique(row, return_inverse=True) for row in pred]
        ref_values, ref_groups = np.unique(ref, return_inverse=True)

        def score(idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
            ref_rank, ref_sq = _centred_ranks(ref_groups, len(ref_values), idx, n)
            weighted_ref_rank = counts * ref_rank
            ss_ref = ref_sq.sum(axis=1)
            out = np.empty((counts.shape[0], n_templates))
            for t, (values, groups) in enumerate(pred_groups):
                rank, sq = _centred_ranks(groups, len(values), idx, n)
                ss_pred = sq.sum(axis=1)
                cross = np.einsum("bn,bn->b", weighted_ref_rank, rank)
                denom = ss_pred * ss_ref
                safe = np.where(denom > 0, denom, 1.0)
                out[:, t] = np.where(denom > 0, cross / np.sqrt(safe), 0.0)
            return np.clip(out, -1.0, 1.0)

        return score


def _centred_ranks(
    groups: np.ndarray, n_groups: int, idx: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks, minus their mean (n+1)/2, of each distinct value in each replicate.

    groups: (n,) index of each instance's value among the sorted distinct values.
    Returns (rank of every original instance (b, n), multiplicity of every group (b, G)).
    """
    per_group = class_counts(groups[idx], n_groups)
    below = np.cumsum(per_group, axis=1) - per_group
    rank = below + (per_group + 1.0) / 2.0 - (n + 1.0) / 2.0
    return rank[:, groups], per_group * rank * rank
