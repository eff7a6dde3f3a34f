"""llm-jp-eval's `char_f1`: fuzzywuzzy's `fuzz.token_sort_ratio(answer, gold) / 100`
(fuzzywuzzy 0.18 with python-Levenshtein, llm-jp-eval v1.3.0's dependencies), written
out here so hakari needs neither package:

1. each side: the characters U+0080..U+00FF removed (`force_ascii`), every non-word
   character (`re` `\\W`, Unicode: Japanese punctuation 、。「」 included) made a space,
   lower-cased, stripped; its whitespace tokens sorted and joined by one space;
2. equal strings score 100 (two empty ones included), else an empty side scores 0;
3. else `int(round(100 * ratio))` (Python's round: half to even), where ratio is
   python-Levenshtein's `ratio`, the normalised Indel similarity
   `1 - (len1 + len2 - 2 * LCS) / (len1 + len2)` over characters.

So char_f1 is in steps of 0.01. tests/scoring/test_llmjp_metrics.py checks it against
fuzzywuzzy itself on 3,000 random pairs (the `dev` extra installs it: GPL-2.0, so a test
oracle only, never imported here).
"""

from __future__ import annotations

import re

from hakari.scoring.corpus.base import register
from hakari.scoring.corpus.llmjp import LlmJpItemMetric

_NON_WORD = re.compile(r"(?ui)\W")
_LATIN1 = {code: None for code in range(128, 256)}


def _process_and_sort(text: str) -> str:
    cleaned = _NON_WORD.sub(" ", text.translate(_LATIN1)).lower().strip()
    return " ".join(sorted(cleaned.split())).strip()


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence (Hyyrö's bit-parallel algorithm)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[str, int] = {}
    for i, ch in enumerate(a):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for ch in b:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def token_sort_ratio(first: str, second: str) -> int:
    """fuzzywuzzy's `fuzz.token_sort_ratio` (0..100), as described above."""
    s1, s2 = _process_and_sort(first), _process_and_sort(second)
    if s1 == s2:
        return 100
    if not s1 or not s2:
        return 0
    total = len(s1) + len(s2)
    distance = total - 2 * lcs_length(s1, s2)
    return round(100 * (1.0 - distance / total))


@register
class CharF1(LlmJpItemMetric):
    name = "char_f1"
    description = "llm-jp-eval char_f1: fuzzywuzzy token_sort_ratio / 100"

    def item(self, prediction: str, gold: str) -> float:
        return token_sort_ratio(prediction, gold) / 100.0
