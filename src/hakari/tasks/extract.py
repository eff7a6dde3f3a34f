"""Answer extraction: regex match → answer; else the task's fallback rule (Appendix B).

Greedy outputs are searched for the template's regex; constrained outputs match it by
construction. Every sample records the raw output, the extracted answer and whether the
fallback was used.

Anchoring. A match counts only as a whole token. Word characters are ASCII letters,
digits and `_` (RE2's `\\w`). A match that starts with a word character may not follow a
word character, a minus sign or "<digit>."; one that ends with a word character may not
be followed by a word character or by ".<digit>". So `B` is not found in "Based on",
`A` not in "All of them" or "x-A", `1` not in "10" or "0.15", `5` not in "5.5" or "-5".
Where the match's edge is not a word character (Japanese answers such as はい,
punctuation), no boundary is required: Japanese writes no spaces between words.

Which match (the one decision of this module). Template regexes run on RE2
(`hakari._util.regex`: linear time, no look-arounds), so the rule is folded into one RE2
pattern around the template's regex (`whole_token`): RE2's `\\b`/`\\B` assertions and a
consumed character before and after the match. One pass over the output, never more:
the answer is the match at the leftmost valid start, and there the first match in the
regex's own priority order (Python's) whose end is valid, exactly as backtracking the
former look-around pattern chose. What RE2's assertions cannot tell apart made the rule
slightly stricter than the former one, which looked at letters and digits only and
applied the "-", "<digit>." and ".<digit>" conditions to digits only: `_` now joins a
word ("A_1" holds no `A`), and a letter is not read after "-" or "<digit>." or before
".<digit>" ("x-A", "1.B", "B.2" hold no answer).

Numbers (STS). The output's first number (an optional minus sign, digits, an optional
decimal part; a sentence's closing period is not a decimal point) is read as a float;
it is the answer when its text is one the template's regex accepts in full, else the
task's fallback applies ("10", "5.5" or "-3" on the 0–5 scale fall back to 2.0, as
Appendix B's "parts that can be parsed as floats according to the regular expression").

Early end. A greedy label answer can end as soon as its extracted answer is decided
(`decided_answer_stop`, sent as the request's `stop_after`): whether and what the
whole-token pattern matches at a position depends only on the characters before it and
the next `max width + 2` (`_END` reads up to 2 past a match), so once the text holds that
many characters from the first match's start, no continuation can change which match is
first. The stop is checked with the same RE2 pattern, so it is linear in the text too.

QA modes. `first-line` (the default): the template's regex picks the answer (the first
non-empty line, at most 200 characters) and golds are NFKC-normalised like answers.
`paper`: Appendix B exactly: the whole output with quotes/punctuation stripped at both
ends and NFKC; golds are compared as they are. See docs/tasks.md for why. A task with
`answer_cut: blank-line` (the jaster sets) takes llm-jp-eval's answer instead, in every
mode: the text before the first blank line, stripped, NFKC; no regex, no punctuation
stripped.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hakari._util.regex import (
    LinearRegex,
    RegexError,
    Subject,
    compile_re2,
    compile_regex,
    to_re2,
)
from hakari.backends.base import StopAfter
from hakari.results.vocab import DEFAULT_QA_MODE, QAMode
from hakari.tasks.spec import LabelValue, TaskSpec

_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
# a template regex as callers hold it: its text, a compiled `re` pattern (its flags kept,
# but matched by RE2) or a compiled LinearRegex
Regex = str | re.Pattern[str] | LinearRegex
_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
# Characters the whole-token rule reads past a match: `_END` consumes up to two (".x").
_END_LOOKAHEAD = 2
# Regexes whose matches can be longer than this never end an answer early (no character
# budget is this large): a match of unbounded length is never decided before the text ends.
_MAX_DECIDED_WIDTH = 4096


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


@lru_cache(maxsize=4096)
def decided_answer_stop(regex: str) -> StopAfter | None:
    """Where an output's answer is decided (the request's `stop_after`), or None when no
    prefix of an output decides it.

    The stop is `max width + 2` characters past the start of the first whole-token match
    of `regex` (module docstring): every match that could start there or earlier, and the
    characters the token rule reads after it, lie in that prefix, so `find_answer` gives
    the same match on it as on the whole output, however the output goes on. None for a
    regex whose matches have no bounded length, which then runs to the end of its line.
    """
    width = _max_width(regex)
    if width is None:
        return None
    try:
        token = whole_token(compile_regex(regex))
    except RegexError:
        return None
    return StopAfter(regex=token.re2_pattern, chars=width + _END_LOOKAHEAD)


def _max_width(regex: str) -> int | None:
    """The most characters a match of `regex` can hold; None when unbounded or when
    Python cannot parse it (look-arounds are refused at load by the linear matcher)."""
    # the stdlib's own parser (untyped in typeshed): the exact width of a Python regex
    from re import _parser  # type: ignore[attr-defined]

    try:
        parsed = _parser.parse(regex)
    except re.error:
        return None
    width = int(parsed.getwidth()[1])
    return width if width <= _MAX_DECIDED_WIDTH else None


def find_answer(output: str, regex: Regex) -> str | None:
    """The first whole-token match of the template's regex in `output`, or None."""
    subject = Subject(output)
    span = whole_token(linear(regex)).group_span(subject)
    return subject.slice(*span) if span is not None else None


def first_number(output: str) -> str | None:
    """The text of the first whole number in `output` ("-3", "10", "5.5"; "3" in "3.")."""
    return find_answer(output, _NUMBER)


# The token rule around a template regex R (its own groups made non-capturing), as one
# RE2 pattern:  \A(R)END | \A START1 (R)END | START2 (R)END.  START1 and START2 consume
# the one or two characters before the match and assert, with RE2's \b and \B, what
# the match's first character may be; END asserts and consumes what follows the match.
# The prefixes have a fixed length (0 or 1 at the start of the text, else 2), so RE2's
# leftmost match starts at the leftmost valid start, and within it takes the first path
# in R's own priority order (Python's) whose end is valid.
_AFTER = r"(?:[0-9A-Za-z_]\b|-\B|[^0-9A-Za-z_.\-])"  # the character before, then the start
_START1 = rf"(?:{_AFTER}|\.)"  # one character in: no digit before its "."
_START2 = rf"(?:(?s:.){_AFTER}|[0-9]\.\B|[^0-9]\.)"
_END = r"(?:\b(?:[^.]|\.[^0-9]|\.\z|\z)|\B(?:[^0-9A-Za-z_]|\z))"


@lru_cache(maxsize=4096)
def _token_pattern(body: str) -> LinearRegex:
    return compile_re2(rf"\A({body}){_END}|\A{_START1}({body}){_END}|{_START2}({body}){_END}")


def whole_token(pattern: LinearRegex) -> LinearRegex:
    """`pattern` matched only as a whole token (module docstring), for `group_span`."""
    return _token_pattern(to_re2(pattern.source, capture=False))


def normalize_qa_answer(text: str) -> str:
    """SQuAD/JSQuAD post-processing: strip quotes and punctuation at both ends, NFKC."""
    text = _strip_punct(text)
    return _strip_punct(unicodedata.normalize("NFKC", text))


def blank_line_answer(output: str) -> str:
    """llm-jp-eval's answer: the text before the first blank line, stripped, NFKC."""
    return unicodedata.normalize("NFKC", output.split("\n\n")[0].strip())


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
    if spec.answer_cut == "blank-line":
        answer = blank_line_answer(output)
        return Extraction(answer, output if answer else None, not answer)
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
