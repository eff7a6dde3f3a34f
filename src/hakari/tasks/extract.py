"""Answer extraction: regex match → answer; else the task's fallback rule (Appendix B).

Greedy outputs are searched for the template's regex; constrained outputs match it by
construction. Every sample records the raw output, the extracted answer and whether the
fallback was used.

Anchoring. A match counts only as a whole token: a match that starts with an ASCII
letter or digit must not continue a word or number to its left, and one that ends with
one must not run on into a word or number to its right (`B` is not found in "Based on",
`A` not in "All of them", `1` not in "10" or "0.15", `5` not in "5.5" or "-5"). Where the
match's edge is not ASCII (Japanese answers such as はい), no boundary is required:
Japanese writes no spaces between words. The first match that satisfies this is used.

Numbers (STS). The output's first number (an optional minus sign, digits, an optional
decimal part; a sentence's closing period is not a decimal point) is read as a float;
it is the answer when its text is one the template's regex accepts in full, else the
task's fallback applies ("10", "5.5" or "-3" on the 0–5 scale fall back to 2.0, as
Appendix B's "parts that can be parsed as floats according to the regular expression").

Early end. A greedy label answer can end as soon as its extracted answer is decided
(`decided_answer_regex`, used as the request's `stop_after_regex`): whether and what the
anchored regex matches at a position depends only on the characters before it and the
next `max width + 2` (`_END` reads up to 2 past a match), so once the text holds that
many characters from the first match, no continuation can change which match is first.

QA modes. `first-line` (the default): the template's regex picks the answer (the first
non-empty line, at most 200 characters) and golds are NFKC-normalised like answers.
`paper`: Appendix B exactly: the whole output with quotes/punctuation stripped at both
ends and NFKC; golds are compared as they are. See docs/tasks.md for why.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from hakari.tasks.spec import LabelValue, TaskSpec

QAMode = Literal["first-line", "paper"]
QA_MODES: tuple[QAMode, ...] = ("first-line", "paper")
DEFAULT_QA_MODE: QAMode = "first-line"

_WORD = "A-Za-z0-9"
# Left edge: a match starting with a digit may not follow a letter/digit, a minus sign or
# "<digit>."; one starting with a letter may not follow a letter/digit; else no condition.
_START = rf"(?:(?=[0-9])(?<![{_WORD}])(?<![0-9]\.)(?<!-)|(?=[A-Za-z])(?<![{_WORD}])|(?![{_WORD}]))"
# Right edge: a match ending in a digit may not be followed by a letter/digit or by
# ".<digit>"; one ending in a letter may not be followed by a letter/digit.
_END = rf"(?:(?<=[0-9])(?![{_WORD}])(?!\.[0-9])|(?<=[A-Za-z])(?![{_WORD}])|(?<![{_WORD}]))"
_FIRST_NUMBER = re.compile(_START + r"-?[0-9]+(?:\.[0-9]+)?" + _END)
# Characters `_END` reads past a match: "(?!\.[0-9])" looks at two.
_END_LOOKAHEAD = 2
# Regexes whose matches can be longer than this never end an answer early (no character
# budget is this large): a match of unbounded length is never decided before the text ends.
_MAX_DECIDED_WIDTH = 4096


@dataclass(frozen=True)
class Extraction:
    answer: Any  # a label, a float or a string, ready for the metric
    matched: str | None  # the regex match, None when the fallback was used
    used_fallback: bool


@lru_cache(maxsize=4096)
def anchored(regex: str, flags: int = 0) -> re.Pattern[str]:
    """The template regex, matched only as a whole token (see the module docstring)."""
    return re.compile(f"{_START}(?:{regex}){_END}", flags)


@lru_cache(maxsize=4096)
def decided_answer_regex(regex: str) -> str | None:
    """A regex whose first match in an output ends where the output's answer is decided,
    or None when no prefix of an output decides it.

    The output's shortest prefix that holds a match of it reaches `max width + 2`
    characters past the first whole-token match of `regex` (see the module docstring):
    `find_answer` gives the same match on that prefix as on the whole output, however
    the output goes on. None for a regex whose matches have no bounded length or that
    looks ahead (a lookahead reads past the match), which then runs to the end of its line.
    """
    width = _max_width(regex)
    if width is None:
        return None
    try:
        whole_token = anchored(regex).pattern
    except re.error:
        return None
    return f"(?=(?:{whole_token}))[\\s\\S]{{{width + _END_LOOKAHEAD}}}"


def _max_width(regex: str) -> int | None:
    """The most characters a match of `regex` can hold; None when unbounded, when the
    regex looks ahead, or when Python cannot parse it."""
    # the stdlib's own parser (untyped in typeshed): the exact width of a Python regex
    from re import _parser  # type: ignore[attr-defined]

    try:
        parsed = _parser.parse(regex)
    except re.error:
        return None
    if _looks_ahead(parsed.data):
        return None
    width = int(parsed.getwidth()[1])
    return width if width <= _MAX_DECIDED_WIDTH else None


def _looks_ahead(node: object) -> bool:
    """Whether a parsed regex holds a lookahead, `(?=...)` or `(?!...)`, at any depth."""
    if isinstance(node, tuple) and len(node) == 2 and str(node[0]) in ("ASSERT", "ASSERT_NOT"):
        direction = node[1][0]
        if direction == 1:
            return True
    if isinstance(node, list | tuple):
        return any(_looks_ahead(child) for child in node)
    data = getattr(node, "data", None)
    return data is not None and _looks_ahead(data)


def find_answer(output: str, regex: str | re.Pattern[str]) -> str | None:
    """The first whole-token match of the template's regex in `output`, or None."""
    pattern = regex if isinstance(regex, str) else regex.pattern
    flags = 0 if isinstance(regex, str) else regex.flags & ~re.UNICODE
    match = anchored(pattern, flags).search(output)
    return match.group(0) if match else None


def first_number(output: str) -> str | None:
    """The text of the first whole number in `output` ("-3", "10", "5.5"; "3" in "3.")."""
    match = _FIRST_NUMBER.search(output)
    return match.group(0) if match else None


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
    regex: str | re.Pattern[str],
    answers: dict[str, LabelValue] | None,
    *,
    qa_mode: QAMode = DEFAULT_QA_MODE,
) -> Extraction:
    if spec.answer_type == "label":
        matched = find_answer(output, regex)
        if matched is not None and answers is not None and matched in answers:
            return Extraction(answers[matched], matched, False)
        return Extraction(spec.fallback_answer(), None, True)
    if spec.answer_type == "number":
        number = first_number(output)
        pattern = regex if isinstance(regex, str) else regex.pattern
        if number is not None and re.fullmatch(pattern, number) is not None:
            return Extraction(float(number), number, False)
        fallback = spec.fallback_answer()
        return Extraction(float(fallback) if fallback is not None else 0.0, None, True)
    if qa_mode == "paper":
        answer = normalize_qa_answer(output)
        return Extraction(answer, output if answer else None, not answer)
    # first-line: use the match, or the whole first line of the output when nothing matches
    matched = find_answer(output, regex)
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
