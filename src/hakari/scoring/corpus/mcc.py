"""Matthews correlation coefficient (sklearn's multiclass formula), -1..1.

When either side has a single class the coefficient is undefined; it is 0.0 (sklearn's
convention), reported as degenerate ("constant_predictions" / "constant_references").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hakari.scoring.corpus.base import (
    CorpusMetric,
    MetricOptions,
    MetricValue,
    ReplicateScorer,
    class_counts,
    encode_labels,
    register,
)

# Up to this many classes, the resampled marginals come from one matrix product with
# one-hot encodings; above it, from bincount (cost independent of the number of classes).
ONEHOT_MAX_CLASSES = 32


@register
class MCC(CorpusMetric):
    name = "mcc"
    answer_types = frozenset({"label"})
    value_range = (-1.0, 1.0)
    description = "Matthews correlation coefficient"

    def compute(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> MetricValue:
        from sklearn.metrics import matthews_corrcoef

        pred_codes, ref_codes, _ = encode_labels(predictions, references)
        if np.all(pred_codes == pred_codes[0]):
            return MetricValue(0.0, "constant_predictions")
        if np.all(ref_codes == ref_codes[0]):
            return MetricValue(0.0, "constant_references")
        return MetricValue(float(matthews_corrcoef(ref_codes, pred_codes)))

    def replicate_scorer(
        self,
        predictions: Sequence[Sequence[Any]],
        references: Sequence[Any],
        options: MetricOptions,
        item_scores: np.ndarray | None = None,
    ) -> ReplicateScorer:
        # One code table shared by all templates.
        flat = [label for p in predictions for label in p]
        flat_codes, ref_codes, n_classes = encode_labels(flat, references)
        return _mcc_scorer(flat_codes.reshape(len(predictions), -1), ref_codes, n_classes)


def _mcc_scorer(pred_codes: np.ndarray, ref_codes: np.ndarray, n_classes: int) -> ReplicateScorer:
    """pred_codes: (n_templates, n); ref_codes: (n,). sklearn's multiclass MCC formula from
    confusion-matrix marginals weighted by the instance multiplicities."""
    n_templates, n = pred_codes.shape
    correct = (pred_codes == ref_codes[None, :]).T.astype(np.float64)  # (n, T)
    use_onehot = n_classes <= ONEHOT_MAX_CLASSES
    if use_onehot:
        eye = np.eye(n_classes)
        # columns: [pred one-hot per template (T*K) | ref one-hot (K) | correct (T)]
        design = np.hstack(
            [
                eye[pred_codes].transpose(1, 0, 2).reshape(n, n_templates * n_classes),
                eye[ref_codes],
                correct,
            ]
        )

    def score(idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        b = counts.shape[0]
        if use_onehot:
            sums = counts @ design
            tk = n_templates * n_classes
            pred_k = sums[:, :tk].reshape(b, n_templates, n_classes)
            true_k = sums[:, tk : tk + n_classes]
            trace = sums[:, tk + n_classes :]
        else:
            pred_k = np.stack([class_counts(codes[idx], n_classes) for codes in pred_codes], axis=1)
            true_k = class_counts(ref_codes[idx], n_classes)
            trace = counts @ correct
        s = float(n)
        cov_tp = trace * s - np.einsum("bk,btk->bt", true_k, pred_k)
        cov_pp = s * s - np.einsum("btk,btk->bt", pred_k, pred_k)
        cov_tt = s * s - np.einsum("bk,bk->b", true_k, true_k)[:, None]
        denom = cov_pp * cov_tt  # integer-valued, so exactly 0 for a single class
        safe = np.where(denom > 0, denom, 1.0)
        return np.where(denom > 0, cov_tp / np.sqrt(safe), 0.0)

    return score
