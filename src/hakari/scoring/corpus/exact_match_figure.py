"""Nejumi Leaderboard's `exact_match_figure` (wandb/llm-leaderboard,
`scripts/evaluator/evaluate_utils/metrics.py`), for MAWPS and MGSM: 1 when Python's
`float()` reads both the answer and the gold and the two numbers are equal ("126.0"
against "126" counts), 0 when either is no number ("126個" scores 0).
"""

from __future__ import annotations

from hakari.scoring.corpus.base import register
from hakari.scoring.corpus.llmjp import LlmJpItemMetric


@register
class ExactMatchFigure(LlmJpItemMetric):
    name = "exact_match_figure"
    description = "Nejumi exact_match_figure: float(answer) == float(gold)"

    def item(self, prediction: str, gold: str) -> float:
        try:
            return float(float(prediction) == float(gold))
        except ValueError:
            return 0.0
