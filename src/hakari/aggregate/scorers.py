"""Vectorised corpus-level metrics of every template on many resamples of the instances.

A scorer maps (instance indices (b, n), instance multiplicities (b, n)) to the metric of
every template under every replicate, shape (b, n_templates), without a Python loop over
replicates:

* accuracy, EM, F1: a per-item score matrix times the instance multiplicities;
* MCC: confusion-matrix marginals from the multiplicities (sklearn's multiclass formula);
* Pearson: weighted moment sums of data centred on the full-sample means;
* Spearman: Pearson of average ranks, the ranks recomputed within each replicate from the
  multiplicities of each distinct value (ties, including duplicated instances, share
  their average rank).

Degenerate replicates (constant predictions or references) score 0.0, as in
`hakari.scoring.corpus`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from hakari.scoring import corpus

# Up to this many classes, MCC marginals come from one matrix product with one-hot
# encodings; above it, from bincount (cost independent of the number of classes).
_ONEHOT_MAX_CLASSES = 32
# Relative tolerance under which a resampled variance counts as zero (constant input).
_VARIANCE_RTOL = 1e-10

# A scorer maps (instance indices (b, n), instance multiplicities (b, n)) to the metric of
# every template under every replicate, shape (b, n_templates).
Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _per_item_scorer(item_scores: np.ndarray) -> Scorer:
    """item_scores: (n_templates, n_instances); the metric is the weighted mean."""
    n = item_scores.shape[1]
    transposed = np.ascontiguousarray(item_scores.T)

    def score(_idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return (counts @ transposed) / n

    return score


def _class_counts(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Per-row histogram of integer codes: (b, n) -> (b, n_classes)."""
    b = codes.shape[0]
    offsets = (np.arange(b, dtype=np.int64) * n_classes)[:, None]
    flat = np.bincount((codes + offsets).ravel(), minlength=b * n_classes)
    return flat.reshape(b, n_classes).astype(np.float64)


def _mcc_scorer(pred_codes: np.ndarray, ref_codes: np.ndarray, n_classes: int) -> Scorer:
    """pred_codes: (n_templates, n); ref_codes: (n,). sklearn's multiclass MCC formula."""
    n_templates, n = pred_codes.shape
    correct = (pred_codes == ref_codes[None, :]).T.astype(np.float64)  # (n, T)
    use_onehot = n_classes <= _ONEHOT_MAX_CLASSES
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
            pred_k = np.stack(
                [_class_counts(codes[idx], n_classes) for codes in pred_codes], axis=1
            )
            true_k = _class_counts(ref_codes[idx], n_classes)
            trace = counts @ correct
        s = float(n)
        cov_tp = trace * s - np.einsum("bk,btk->bt", true_k, pred_k)
        cov_pp = s * s - np.einsum("btk,btk->bt", pred_k, pred_k)
        cov_tt = s * s - np.einsum("bk,bk->b", true_k, true_k)[:, None]
        denom = cov_pp * cov_tt  # integer-valued, so exactly 0 for a single class
        safe = np.where(denom > 0, denom, 1.0)
        return np.where(denom > 0, cov_tp / np.sqrt(safe), 0.0)

    return score


def _pearson_scorer(pred: np.ndarray, ref: np.ndarray) -> Scorer:
    """pred: (n_templates, n) floats; ref: (n,) floats."""
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
        constant = (var_x <= _VARIANCE_RTOL * n * sxx) | (var_y <= _VARIANCE_RTOL * n * syy)
        denom = np.where(constant, 1.0, var_x * var_y)
        r = np.where(constant, 0.0, (n * sxy - sx * sy) / np.sqrt(np.abs(denom)))
        return np.clip(r, -1.0, 1.0)

    return score


def _centred_ranks(
    groups: np.ndarray, n_groups: int, idx: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks, minus their mean (n+1)/2, of each distinct value in each replicate.

    groups: (n,) index of each instance's value among the sorted distinct values.
    Returns (rank of every original instance (b, n), multiplicity of every group (b, G)).
    """
    per_group = _class_counts(groups[idx], n_groups)
    below = np.cumsum(per_group, axis=1) - per_group
    rank = below + (per_group + 1.0) / 2.0 - (n + 1.0) / 2.0
    return rank[:, groups], per_group * rank * rank


def _spearman_scorer(pred: np.ndarray, ref: np.ndarray) -> Scorer:
    """Pearson of ranks recomputed in each replicate; ranks are multiples of 1/2, so the
    sums below are exact and a constant side gives exactly 0 variance."""
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


def item_matrix(
    metric: str,
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
) -> np.ndarray:
    """(n_templates, n_instances) per-item scores of a mean-of-items metric."""
    rows = [corpus.per_item_scores(metric, p, references, **options) for p in predictions]
    return np.vstack([r for r in rows if r is not None])


def make_scorer(
    metric: str,
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
    item_scores: np.ndarray | None = None,
) -> Scorer:
    if metric in corpus.PER_ITEM_METRICS:
        if item_scores is None:
            item_scores = item_matrix(metric, predictions, references, options)
        return _per_item_scorer(item_scores)
    if metric == "mcc":
        # One code table shared by all templates.
        flat = [label for p in predictions for label in p]
        flat_codes, ref_codes, n_classes = corpus.encode_labels(flat, references)
        return _mcc_scorer(flat_codes.reshape(len(predictions), -1), ref_codes, n_classes)
    pred = np.vstack([corpus.float_values(metric, p, "predictions") for p in predictions])
    ref = corpus.float_values(metric, references, "references")
    if metric == "pearson":
        return _pearson_scorer(pred, ref)
    if metric == "spearman":
        return _spearman_scorer(pred, ref)
    raise ValueError(f"unknown metric {metric!r}")


def multiplicities(idx: np.ndarray, n: int) -> np.ndarray:
    """How many times each instance occurs in each replicate: (b, n) indices -> (b, n)."""
    return _class_counts(idx, n)


def check_inputs(
    metric: str, predictions: Sequence[Sequence[Any]], references: Sequence[Any]
) -> None:
    if metric not in corpus.METRIC_NAMES:
        raise ValueError(f"unknown metric {metric!r}; expected one of {corpus.METRIC_NAMES}")
    if len(predictions) == 0:
        raise ValueError("no templates to resample")
    if len(references) == 0:
        raise ValueError(f"metric {metric!r}: no instances to score (empty input)")
    for k, p in enumerate(predictions):
        if len(p) != len(references):
            raise ValueError(
                f"template #{k}: {len(p)} predictions but {len(references)} references"
            )


def resampled_template_scores(
    metric: str,
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    indices: np.ndarray,
    **metric_options: Any,
) -> np.ndarray:
    """The metric of every template on every row of instance indices.

    `predictions[t]` are template t's predictions; `indices` is (n_replicates, m) with
    entries in [0, n_instances). Returns (n_replicates, n_templates); entry (b, t) equals
    `corpus.compute(metric, [predictions[t][i] for i in indices[b]],
    [references[i] for i in indices[b]])` when m == n_instances (the bootstrap case).
    """
    check_inputs(metric, predictions, references)
    idx = np.asarray(indices, dtype=np.int64)
    n = len(references)
    if idx.ndim != 2 or idx.shape[1] != n:
        raise ValueError(f"indices must have shape (n_replicates, {n}), got {idx.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"indices must lie in [0, {n})")
    scorer = make_scorer(metric, predictions, references, metric_options)
    return scorer(idx, multiplicities(idx, n))
