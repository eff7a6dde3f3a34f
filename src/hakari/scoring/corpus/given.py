"""The mean of per-item scores given by a source (0..1): for results imported from another
harness, whose per-sample scores are the data (lm-evaluation-harness's per-sample `acc` or
`acc_norm`, a long table's `score` column), not answers hakari scores itself.

The "predictions" are the given scores, one per item, each in [0, 1]; the references are
not read. The metric is a mean of per-item scores (`per_item`), so its bootstrap is the
same vectorised per-item scorer as accuracy's: given the 0/1 scores of a native accuracy,
every number (template scores, aggregates, intervals, paired differences) is the same to
the last bit. A score outside [0, 1], NaN, infinite or missing is a `ValueError` naming the
metric: the intervals are cut to [0, 1], as accuracy's and F1's are.

No task file can name it (it scores no answer type): a run's metrics score answers; an
importer maps a source's metric name to it (`hakari.runner.estimators.GridMetric`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hakari.scoring.corpus.base import (
    CorpusMetric,
    MetricOptions,
    MetricValue,
    register,
)

GIVEN_SCORE = "given_score"


@register
class GivenScore(CorpusMetric):
    name = GIVEN_SCORE
    answer_types = frozenset()  # scores no answers: what a source gives, imported
    description = "mean of per-item scores given by a source (0..1)"
    per_item = True
    value_range = (0.0, 1.0)

    def compute(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> MetricValue:
        return MetricValue(float(self.item_scores(predictions, references, options).mean()))

    def item_scores(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> np.ndarray:
        strange = [p for p in predictions if p is None or isinstance(p, str | bytes)]
        if strange:
            raise ValueError(f"metric {self.name!r}: a given score is {strange[0]!r}, not a number")
        scores = np.asarray(predictions, dtype=np.float64)
        bad = ~np.isfinite(scores) | (scores < 0.0) | (scores > 1.0)
        if bad.any():
            item = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"metric {self.name!r}: the given score of item {item} is {scores[item]!r}, "
                "not a number in [0, 1]"
            )
        return scores
