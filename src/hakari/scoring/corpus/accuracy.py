"""Accuracy: the share of instances whose predicted label equals the gold (0..1).

A `None` prediction (the engine applies fallbacks first, so it should not occur) is a
class of its own that no reference has: always wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hakari.scoring.corpus.base import (
    CorpusMetric,
    MetricOptions,
    MetricValue,
    encode_labels,
    register,
)


@register
class Accuracy(CorpusMetric):
    name = "accuracy"
    answer_types = frozenset({"label"})
    description = "share of exact label matches"
    per_item = True
    value_range = (0.0, 1.0)

    def compute(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> MetricValue:
        scores = self.item_scores(predictions, references, options)
        return MetricValue(float(scores.mean()))

    def item_scores(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> np.ndarray:
        pred_codes, ref_codes, _ = encode_labels(predictions, references)
        return (pred_codes == ref_codes).astype(np.float64)
