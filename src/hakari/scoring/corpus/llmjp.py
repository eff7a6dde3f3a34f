"""What llm-jp-eval's per-item metrics share (v1.3.0 `utils.get_evaluation_result`): the
prediction and the gold are NFKC-normalised (the prediction was already cut at its first
blank line and stripped: `tasks/extract.blank_line_answer`), each item scores 0..1, and
the metric is the mean over items. A jaster item has one gold; a reference given as a
list (how hakari passes text golds) is its first element. A `None` prediction is "".

This module registers no metric; the metrics are one module each: `llmjp_exact_match`,
`char_f1`, `set_f1`, `exact_match_figure` (Nejumi), `balanced_accuracy`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from hakari.scoring.corpus.base import CorpusMetric, MetricOptions


def nfkc(text: Any) -> str:
    return unicodedata.normalize("NFKC", "" if text is None else str(text))


def gold_text(reference: Any) -> str:
    """The one gold of an item, NFKC'd: a list's first element, or the value."""
    if isinstance(reference, list | tuple):
        if not reference:
            raise ValueError("an item has no gold answer")
        reference = reference[0]
    return nfkc(reference)


class LlmJpItemMetric(CorpusMetric):
    """A mean of per-item scores of (prediction, gold) strings."""

    answer_types: ClassVar[frozenset[Any]] = frozenset({"text"})
    per_item = True
    value_range = (0.0, 1.0)

    def item(self, prediction: str, gold: str) -> float:
        raise NotImplementedError

    def item_scores(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> np.ndarray:
        return np.array(
            [
                self.item(nfkc(p), gold_text(r))
                for p, r in zip(predictions, references, strict=True)
            ],
            dtype=np.float64,
        )
