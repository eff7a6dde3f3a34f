"""The mean of per-item scores given by a source: for results imported from another
harness, whose per-sample scores are the data (lm-evaluation-harness's per-sample `acc` or
`acc_norm`, a long table's `score` column), not answers hakari scores itself.

The "predictions" are the given scores, one per item; the references are not read. The
metric is a mean of per-item scores (`per_item`), so its bootstrap is the same vectorised
per-item scorer as accuracy's. Two ranges, two names:

* `given_score`: every score in [0, 1] (a correctness, a share), the intervals cut to
  [0, 1] as accuracy's and F1's are; given the 0/1 scores of a native accuracy, every
  number (template scores, aggregates, intervals, paired differences) is the same to the
  last bit. A score outside [0, 1] is a `ValueError` naming the metric.
* `given_mean`: any finite scores (a BLEU in 0..100, a log-likelihood), the intervals
  not cut.

NaN, infinity, None or text is a `ValueError` for both. No task file can name them (they
score no answer type): a run's metrics score answers; an importer maps a source's metric
name to one (`hakari.runner.estimators.GridMetric`).
"""

from __future__ import annotations

import math
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
GIVEN_MEAN = "given_mean"


class _Given(CorpusMetric):
    answer_types = frozenset()  # scores no answers: what a source gives, imported
    per_item = True

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
        low, high = self.value_range
        bad = ~np.isfinite(scores) | (scores < low) | (scores > high)
        if bad.any():
            item = int(np.flatnonzero(bad)[0])
            wanted = "a finite number" if math.isinf(high) else f"a number in [{low:g}, {high:g}]"
            raise ValueError(
                f"metric {self.name!r}: the given score of item {item} is {scores[item]!r}, "
                f"not {wanted}"
            )
        return scores


@register
class GivenScore(_Given):
    name = GIVEN_SCORE
    description = "mean of per-item scores in [0, 1] given by a source"
    value_range = (0.0, 1.0)


@register
class GivenMean(_Given):
    name = GIVEN_MEAN
    description = "mean of per-item scores (any finite number) given by a source"
