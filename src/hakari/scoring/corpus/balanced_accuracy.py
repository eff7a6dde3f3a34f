"""Balanced accuracy over answer strings (sklearn's `balanced_accuracy_score`): the mean,
over the gold classes present, of the share of each class's items answered exactly
(NFKC'd answer == NFKC'd gold, as `llmjp_exact_match`). An answer outside the classes
is wrong for its item's class. Reported beside exact match for the NLI sets, whose
classes are unbalanced (JSICK's test split is 62% neutral). Not a mean of per-item
scores, so the bootstrap recomputes it on each replicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from hakari.scoring.corpus.base import CorpusMetric, MetricOptions, MetricValue, register
from hakari.scoring.corpus.llmjp import gold_text, nfkc


def balanced_accuracy(predictions: Sequence[str], golds: Sequence[str]) -> float:
    hits: dict[str, list[float]] = {}
    for p, g in zip(predictions, golds, strict=True):
        hits.setdefault(g, []).append(float(p == g))
    return float(np.mean([np.mean(v) for v in hits.values()]))


@register
class BalancedAccuracy(CorpusMetric):
    name = "balanced_accuracy"
    answer_types: ClassVar[frozenset[Any]] = frozenset({"text"})
    description = "mean over gold classes of each class's exact-match rate"
    value_range = (0.0, 1.0)

    def compute(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> MetricValue:
        golds = [gold_text(r) for r in references]
        return MetricValue(balanced_accuracy([nfkc(p) for p in predictions], golds))
