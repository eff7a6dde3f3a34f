"""Every template's corpus-level metric on many resamples of the instances, vectorised.

A replicate scorer (`hakari.scoring.corpus.ReplicateScorer`, built by each registered
metric) maps (instance indices (b, n), instance multiplicities (b, n)) to the metric of
every template under every replicate, shape (b, n_templates), without a Python loop over
replicates. Degenerate replicates (constant predictions or references) score 0.0, as in
`hakari.scoring.corpus`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hakari.scoring import corpus
from hakari.scoring.corpus.base import class_counts


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
) -> corpus.ReplicateScorer:
    return corpus.get(metric).replicate_scorer(
        predictions, references, corpus.options_of(metric, dict(options)), item_scores
    )


def multiplicities(idx: np.ndarray, n: int) -> np.ndarray:
    """How many times each instance occurs in each replicate: (b, n) indices -> (b, n)."""
    return class_counts(idx, n)


def check_inputs(
    metric: str, predictions: Sequence[Sequence[Any]], references: Sequence[Any]
) -> None:
    corpus.get(metric)  # known, or a ValueError naming the known ones
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
