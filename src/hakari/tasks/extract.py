"""Answer extraction: regex match → answer; else the task's fallback rule (Appendix B).

Greedy outputs are searched for the template's regex; constrained outputs match it by
construction. Every sample records the raw output, the extracted answer and whether the
fallback was used.

Anchoring. A match counts only as a whole token: a match that starts with an ASCII
letter or digit must not continue a word or number to its left, and one that ends with
one must not run on into a word or number to its right (`B` is not found in "Based on",
`A` not in "All of them", `1` not in "10" or "0.15", `5` not in "5.5" or "-5"). Where the
match's edge is not ASCII (Japanese answers such as はい), no boundary is required:
Japanese writes no spaces between words.

Which match (the one decision of this module). Template regexes run on RE2
(`hakari._util.regex`: linear time, no look-arounds), so the token rule is checked in
Python around RE2's matches: the answer starts at the leftmost position where a whole-
token match starts; from there it is the regex's preferred match (leftmost-first, as
Python's `re` prefers) when that ends on a token boundary, else the longest match from
that start that does. This is what the former look-around pattern gave for every regex
whose preferred match ends on a boundary, for greedy repeats (the QA regex cut to 200
characters backs off to the last boundary) and for alternatives that are prefixes of
one another (`(no|none)` reads "none"); only where a lower-priority, shorter match was
preferred by backtracking order over a longer one can the two differ. Work is linear in
the output per candidate start (RE2), never exponential.

Numbers (STS). The output's first number (an optional minus sign, digits, an optional
decimal part; a sentence's closing period is not a decimal point) is read as a float;
it is the answer when its text is one the template's regex accepts in full, else the
task's fallback applies ("10", "5.5" or "-3" on the 0–5 scale fall back to 2.0, as
Appendix B's "parts that can be parsed as floats according to the regular expression").

QA modes. `first-line` (the default): the template's regex picks the answer (the first
non-empty line, at most 200 characters) and golds are NFKC-normalised like answers.
`paper`: Appendix B exactly: the whole output with quotes/punctuation stripped at both
ends and NFKC; golds are compared as they are. See docs/tasks.md for why.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Literal

from hakari._util.regex import LinearRegex, Subject, compile_regex
from hakari.tasks.spec import LabelValue, TaskSpec

QAMode = Literal["first-line", "paper"]
QA_MODES: tuple[QAMode, ...] = ("first-line", "paper")
DEFAULT_QA_MODE: QAMode = "first-line"

_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
# a template regex as callers hold it: its text, a compiled `re` pattern (its flags kept,
# but matched by RE2) or a compiled LinearRegex
Regex = str | re.Pattern[str] | LinearRegex
_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


@dataclass(frozen=True)
class Extraction:
    answer: Any  # a label, a float or a string, ready for the metric
    matched: str | None  # the regex match, None when the fallback was used
    used_fallback: bool


def linear(regex: Regex) -> LinearRegex:
    """The template regex compiled for the linear-time matcher."""
    if isinstance(regex, LinearRegex):
        return regex
    if isinstance(regex, str):
        return compile_regex(regex)
    flags = "".join(letter for flag, letter in _FLAGS if regex.flags & flag)
    return compile_regex(f"(?{flags}){regex.pattern}" if flags else regex.pattern)


def find_answer(output: str, regex: Regex) -> str | None:
    """The first whole-token match of the template's regex in `output`, or None."""
    subject = Subject(output)
    span = whole_token_match(linear(regex), subject)
    return subject.slice(*span) if span is not None else None


def first_number(output: str) -> str | None:
    """The text of the first whole number in `output` ("-3", "10", "5.5"; "3" in "3.")."""
    return find_answer(output, _NUMBER)


def whole_token_match(pattern: LinearRegex, subject: Subject) -> tuple[int, int] | None:
    """(start, end) in bytes of the first whole-token match (module docstring)."""
    data = subject.data
    pos = 0
    while (found := pattern.find(subject, pos)) is not None:
        start, end = found
        if start == end:  # an empty match (task files refuse such regexes) is no answer
            if start >= len(data):
                return None
            pos = _next_char(data, start)
        elif not _starts_token(data, start):
            pos = _next_candidate(data, start)
        elif _ends_token(data, end):
            return start, end
        elif (longest := _longest_token_end(pattern, subject, start)) is not None:
            return start, longest
        else:
            pos = _next_char(data, start)
    return None


def _longest_token_end(pattern: LinearRegex, subject: Subject, start: int) -> int | None:
    """The end of the longest match from `start` that ends on a token boundary: the
    longest match overall, then the longest ending before the last boundary below it."""
    data = subject.data
    bound = len(data)
    while (end := pattern.longest_at(subject, start, bound)) is not None:
        if _ends_token(data, end):
            return end
        bound = end - 1
        while bound > start and not (_is_char_start(data, bound) and _ends_token(data, bound)):
            bound -= 1
        if bound <= start:
            return None
    return None


# The token rule on UTF-8 bytes: every character it looks at is ASCII, and an ASCII byte
# in UTF-8 is always that character (bytes of longer characters are >= 0x80).
def _is_digit(b: int) -> bool:
    return 48 <= b <= 57


def _is_alnum(b: int) -> bool:
    return 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122


def _starts_token(data: bytes, start: int) -> bool:
    """A match starting with a digit may not follow a letter/digit, a minus sign or
    "<digit>."; one starting with a letter may not follow a letter/digit."""
    first, before = data[start], data[start - 1] if start > 0 else None
    if _is_digit(first):
        if before is not None and (_is_alnum(before) or before == ord("-")):
            return False
        return not (before == ord(".") and start >= 2 and _is_digit(data[start - 2]))
    if _is_alnum(first):
        return before is None or not _is_alnum(before)
    return True


def _ends_token(data: bytes, end: int) -> bool:
    """A match ending in a digit may not be followed by a letter/digit or by ".<digit>";
    one ending in a letter may not be followed by a letter/digit."""
    last, after = data[end - 1], data[end] if end < len(data) else None
    if not _is_alnum(last) or after is None:
        return True
    if _is_alnum(after):
        return False
    return not (
        _is_digit(last) and after == ord(".") and end + 1 < len(data) and _is_digit(data[end + 1])
    )


def _is_char_start(data: bytes, offset: int) -> bool:
    return offset >= len(data) or not 0x80 <= data[offset] <= 0xBF


def _next_char(data: bytes, offset: int) -> int:
    offset += 1
    while offset < len(data) and not _is_char_start(data, offset):
        offset += 1
    return offset


def _next_candidate(data: bytes, offset: int) -> int:
    """The next position where a match could start a token, after a start inside a word
    or number: past the rest of that run of letters and digits."""
    offset = _next_char(data, offset)
    while offset < len(data) and _is_alnum(data[offset]) and _is_alnum(data[offset - 1]):
        offset += 1
    return offset


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
    regex: Regex,
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
        if number is not None and linear(regex).fullmatch(number):
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
