"""The linear-time matcher (issue 17 §1): RE2 with Python's meanings, refusals with the
reason, no hang on catastrophic patterns, untrusted text of any kind."""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache

import pytest

from hakari._util.regex import (
    RegexError,
    compile_re2,
    compile_regex,
    escape,
    regex_problem,
    to_re2,
)
from tests.helpers.deadline import within_deadline

EVIL = "a" * 46 + "!"


def test_catastrophic_pattern_returns_at_once() -> None:
    pattern = compile_regex("(a+)+$")
    assert within_deadline(lambda: pattern.search(EVIL)) is None
    assert within_deadline(lambda: pattern.fullmatch(EVIL)) is False
    nested = compile_regex(r"(\w+\s?)*$")
    assert within_deadline(lambda: nested.fullmatch("x " * 5000 + "!")) is False


@cache
def _assigned() -> str:
    """Every code point that Python's Unicode database assigns (RE2's tables may be newer)."""
    return "".join(
        chr(c)
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) not in ("Cn", "Cs")
    )


@pytest.mark.slow
@pytest.mark.parametrize("escape_code", ["d", "w", "s", "D", "W", "S"])
def test_class_escapes_mean_what_they_mean_in_python(escape_code: str) -> None:
    """RE2's \\d \\w \\s are ASCII; the matcher reads them as Python does (Unicode), so a
    task written for Python's re keeps its meaning: full-width digits, kana, U+3000."""
    text = _assigned()
    python = set(re.findall(rf"\{escape_code}", text))
    mark = "\U0010ffff"  # a noncharacter: not in `text`
    kept = set(compile_regex(rf"\{escape_code}").sub(lambda matched: mark, text))
    assert set(text) - kept == python
    assert {"d": "３", "w": "は", "s": "\u3000", "D": "a", "W": "!", "S": "a"}[
        escape_code
    ] in python


def test_class_escapes_inside_brackets() -> None:
    assert compile_regex(r"[\d.]+").search("値は３．５").text == "３"
    assert compile_regex(r"[\w]+").search("「はい」").text == "はい"
    assert compile_regex(r"[^\s]+").search("\u3000答え\u3000").text == "答え"
    assert compile_regex(r"[\D]").search("12a").text == "a"


def test_python_spellings_are_read_as_python_reads_them() -> None:
    assert compile_regex(r"a\Z").fullmatch("a")
    assert compile_regex(r"\u3042\U00003044").fullmatch("あい")
    assert compile_regex(r"\N{HIRAGANA LETTER A}").fullmatch("あ")
    assert compile_regex("a{,2}b").fullmatch("aab") and not compile_regex("a{,2}b").fullmatch(
        "a{,2}b"
    )
    assert compile_regex("(?#the letter)a").fullmatch("a")
    assert compile_regex(r"\101").fullmatch("A")  # octal, as in Python
    assert compile_regex(r"[\b]").fullmatch("\b")  # backspace inside a class
    assert compile_regex(r"(?i)(yes|no)").search("YES").text == "YES"
    assert compile_regex(r"\p{Han}+").search("答えは漢字").text == "答"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?<=a)b", "look-behind"),
        ("(?<!a)b", "look-behind"),
        ("a(?=b)", "look-ahead"),
        ("a(?!b)", "look-ahead"),
        (r"(a)\1", "back-reference"),
        ("(?P<x>a)(?P=x)", "back-reference"),
        ("(a)?(?(1)b|c)", "conditional"),
        ("(?>a+)b", "atomic"),
        ("a++", "bad repetition operator"),
        (r"\bA\b", "ASCII-only"),
        (r"\BA", "ASCII-only"),
        ("[[:alpha:]]", "POSIX class"),
        (r"[\W]", "has no RE2 form"),
        ("a{1,2000}", "invalid repetition size"),
        ("(?x) a b", "verbose"),
        ("[01", "missing ]"),
        ("\\", "trailing backslash"),
        (r"\N{NO SUCH NAME}", "unknown character name"),
        (r"\u30", "4 hex digits"),
    ],
)
def test_refused_with_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(RegexError, match=re.escape(reason)):
        compile_regex(pattern)
    assert reason in (regex_problem(pattern) or "")


def test_every_python_escape_of_any_text_is_literal() -> None:
    """Instance values enter regexes through `escape` (Python's re.escape): RE2 must read
    every escaped character literally, control characters and Japanese included."""
    text = "".join(chr(c) for c in range(1, 0x250)) + "「は」？（1+1）*[x]{2} \t\n\r\x0b\x0c"
    assert compile_regex(escape(text)).fullmatch(text)


def test_untrusted_text_is_never_an_error() -> None:
    lone = "答え\ud800B"  # a lone surrogate, as a hostile server answer can hold
    found = compile_regex("[A-B]").search(lone)
    assert found is not None and (found.start, found.end, found.text) == (3, 4, "B")
    assert compile_regex("[^x]+").search(lone).text == lone
    assert compile_regex("<x>", ignore_case=True).sub(str.upper, "a<X>\ud800<x>") == (
        "a<X>\ud800<X>"
    )


def test_offsets_are_characters() -> None:
    found = compile_regex("(B|C)").search("日本語でBです")
    assert (found.start, found.end, found.text) == (4, 5, "B")


def test_translation_is_shown_for_messages_and_tests() -> None:
    assert to_re2(r"[\w-]+\d\Z") == r"[\p{L}\p{N}_-]+\p{Nd}\z"
    assert to_re2(r"[]a]\]") == r"[]a]\]"  # a leading ] is a literal in both dialects


def test_groups_can_be_made_non_capturing_to_embed_a_pattern_twice() -> None:
    pattern = r"(?P<x>a)(b)(?:c)(?<y>d)[(]\("
    assert to_re2(pattern, capture=False) == r"(?:a)(?:b)(?:c)(?:d)[(]\("
    assert compile_re2("|".join([to_re2(pattern, capture=False)] * 2)).fullmatch("abcd((")
