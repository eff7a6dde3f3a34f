"""Answer extraction: regex match → answer; else the task's fallback rule (Appendix B).

Greedy outputs are searched for the template's regex (the first match counts);
constrained outputs match it by construction. Every sample records the raw output, the
extracted answer and whether the fallback was used.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from hakari.tasks.spec import LabelValue, TaskSpec


@dataclass(frozen=True)
class Extraction:
    answer: Any  # a label, a float or a string, ready for the metric
    matched: str | None  # the regex match, None when the fallback was used
    used_fallback: bool


def normalize_qa_answer(text: str) -> str:
    """SQuAD/JSQuAD post-processing: strip quotes and punctuation at both ends, NFKC."""
    text = _strip_punct(text)
    return _strip_punct(unicodedata.normalize("NFKC", text))


def _is_edge_junk(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch).startswith("P")


def _strip_punct(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _is_edge_junk(text[start]):
        start += 1
    while end > start and _is_edge_junk(text[end - 1]):
        end -= 1
    return text[start:end]


def extract_answer(
    spec: TaskSpec,
    output: str,
    regex: re.Pattern[str],
    answers: dict[str, LabelValue] | None,
) -> Extraction:
    match = regex.search(output)
    matched = match.group(0) if match else None
    if spec.answer_type == "label":
        if matched is not None and answers is not None and matched in answers:
            return Extraction(answers[matched], matched, False)
        return Extraction(spec.fallback_answer(), None, True)
    if spec.answer_type == "number":
        if matched is not None:
            try:
                return Extraction(float(matched), matched, False)
            except ValueError:
                pass
        fallback = spec.fallback_answer()
        return Extraction(float(fallback) if fallback is not None else 0.0, None, True)
    # text: use the match, or the whole first line of the output when nothing matches
    if matched is not None:
        return Extraction(normalize_qa_answer(matched), matched, False)
    first_line = output.split("\n", 1)[0]
    return Extraction(normalize_qa_answer(first_line), None, True)


def gold_answer(spec: TaskSpec, value: Any) -> Any:
    """The gold in the form the metrics compare: a canonical label, a float, or a list
    of acceptable answer strings."""
    if spec.answer_type == "label":
        assert spec.labels is not None
        for label in spec.labels:
            if str(label) == str(value):
                return label
        raise ValueError(f"gold {value!r} not in labels {spec.labels}")
    if spec.answer_type == "number":
        return float(value)
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def fallback_prediction(spec: TaskSpec) -> Any:
    """What an instance gets when nothing parses: used for the chance-rate baseline."""
    if spec.answer_type == "text":
        return ""
    answer = spec.fallback_answer()
    return float(answer) if spec.answer_type == "number" and answer is not None else answer
