"""A deliberately naive, character-by-character statement of the reference scorer's rules
(../shared/docs/pfgen-bench.md §2), used to check the vectorised implementation."""

from __future__ import annotations

SKIPPED = "^$、。・「」『』（）【】［］〈〉《》"


def new_ngrams_per_prefix(answer: str, max_n: int = 10) -> list[list[str]]:
    """For prefix length L = 0..len(window)-2: the substrings of the answer ending at
    character L-1 not seen earlier (markers excluded, window of 202)."""
    text = ("^" + answer + "$")[:202]
    seen: set[str] = set()
    out = []
    for end in range(1, len(text)):
        new = []
        for n in range(1, min(max_n + 1, end)):
            gram = text[end - n : end]
            if gram not in seen:
                seen.add(gram)
                new.append(gram)
        out.append(new)
    return out


class NaiveSource:
    def __init__(self, references: list[str]) -> None:
        self.size = len(references)
        self.df: dict[str, int] = {}
        for ref in references:
            grams = {ref[i : i + n] for n in range(1, 11) for i in range(len(ref) - n + 1)}
            for gram in grams:
                self.df[gram] = self.df.get(gram, 0) + 1
        self.baseline = 1.0
        total = 0.0
        for ref in references:
            total += self.fluency(ref)
        self.baseline = total / len(references)

    def fluency(self, answer: str) -> float:
        running, best = 0, 0.0
        for length, grams in enumerate(new_ngrams_per_prefix(answer)):
            running += sum(self.df.get(g, 0) for g in grams)
            if length == 0:
                continue
            value = running * (1 - max(length - 100, 0) / 50) / self.baseline
            best = max(best, value)
        return best

    def truthfulness(self, answer: str) -> float:
        text = ("^" + answer + "$")[:202]
        cover = [0] * len(text)
        for i in range(len(text) - 2):
            count = self.df.get(text[i : i + 3], 0)
            for j in range(i, i + 3):
                cover[j] = max(cover[j], count)
        total, counted, score, best = 0.0, 0, 0.0, 0.0
        for index, char in enumerate(text):
            if char in SKIPPED:
                continue
            total += min(1.0, cover[index] / self.size * 200.0)
            counted += 1
            score = total / counted * (1 - max(index - 100, 0) / 50)
            if index >= 100:
                best = max(best, score)
        return max(best, score)
