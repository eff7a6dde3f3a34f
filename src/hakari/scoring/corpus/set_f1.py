"""llm-jp-eval's `set_f1` (v1.3.0 `utils.py`), for answers that are lists of lines (the
Wikipedia annotation sets): the answer's distinct stripped lines against the gold's
stripped lines; precision = answer lines found in the gold / distinct answer lines,
recall = the same count / gold lines (repeats counted, as there), F1 their harmonic mean
(0 when both are 0). An empty answer is one empty line.
"""

from __future__ import annotations

from hakari.scoring.corpus.base import register
from hakari.scoring.corpus.llmjp import LlmJpItemMetric


def set_f1(prediction: str, gold: str) -> float:
    predicted = list({x.strip() for x in prediction.split("\n")})
    golds = [x.strip() for x in gold.split("\n")]
    found = sum(1 for y in predicted if y in golds)
    precision, recall = found / len(predicted), found / len(golds)
    total = precision + recall
    return 2 * (precision * recall) / total if total != 0 else 0.0


@register
class SetF1(LlmJpItemMetric):
    name = "set_f1"
    description = "llm-jp-eval set F1 over newline-separated items"

    def item(self, prediction: str, gold: str) -> float:
        return set_f1(prediction, gold)
