"""llm-jp-eval's `exact_match`: the share of items whose NFKC'd answer equals the NFKC'd
gold character for character (sklearn's `accuracy_score` over the strings): no case
folding, no punctuation stripped ("entailment。" is wrong), unlike SQuAD's `exact_match`.
"""

from __future__ import annotations

from hakari.scoring.corpus.base import register
from hakari.scoring.corpus.llmjp import LlmJpItemMetric


@register
class LlmJpExactMatch(LlmJpItemMetric):
    name = "llmjp_exact_match"
    description = "llm-jp-eval exact match: NFKC'd answer == NFKC'd gold"

    def item(self, prediction: str, gold: str) -> float:
        return float(prediction == gold)
