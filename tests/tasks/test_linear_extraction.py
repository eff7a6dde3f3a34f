"""Whole-token extraction on the linear-time matcher (issue 17 §1).

The token rule used to be look-arounds around the template regex in Python's `re`; RE2
has none, so the rule is now checked in Python around RE2's matches. `FORMER` below is
the former pattern, kept as the oracle: on random outputs built from the characters the
rule looks at, both read the same answer for every built-in template regex and for the
regex shapes task files use. The one documented difference (a lazy repeat whose
preferred match splits a word) is pinned too.
"""

from __future__ import annotations

import random
import re

import pytest

from hakari.tasks.extract import extract_answer, find_answer, first_number
from hakari.tasks.loader import builtin_task_paths, check_answer_keys, load_task
from tests.helpers.deadline import within_deadline

_WORD = "A-Za-z0-9"
_START = rf"(?:(?=[0-9])(?<![{_WORD}])(?<![0-9]\.)(?<!-)|(?=[A-Za-z])(?<![{_WORD}])|(?![{_WORD}]))"
_END = rf"(?:(?<=[0-9])(?![{_WORD}])(?!\.[0-9])|(?<=[A-Za-z])(?![{_WORD}])|(?<![{_WORD}]))"


def former(output: str, regex: str) -> str | None:
    """The look-around extraction hakari used before the linear-time matcher."""
    match = re.compile(f"{_START}(?:{regex}){_END}").search(output)
    return match.group(0) if match else None


def _builtin_regexes() -> list[str]:
    return sorted(
        {t.regex for name in builtin_task_paths() for t in load_task(name).spec.templates}
    )


SHAPES = [
    r"(no|none|not sure)",  # alternatives that are prefixes of one another
    r"(ABC|AB|A)",
    r"(A|AB|ABC)",
    r"-?[0-9]+(?:\.[0-9]+)?",
    r"[A-D]\)?",
    r"\(?[A-D]\)",
    r"[a-z]+",
    r"[a-z ]+",
    r"(?i:yes|no)",
    r"[0-9]+",
    r".{1,5}",
    r"[^\n]{1,12}\n?",
    r"[A-Z][a-z]*",
    r"(はい|いいえ|はいはい)",
]
PIECES = [*"aAbBCxyz0125 .-\n()はい!,", "yes", "no", "none", "positive", "5.0", "4.5", "いいえ"]


@pytest.mark.parametrize("regex", _builtin_regexes() + SHAPES)
def test_reads_what_the_former_lookarounds_read(regex: str) -> None:
    rng = random.Random(regex)
    for _ in range(1500):
        output = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        assert find_answer(output, regex) == former(output, regex), (regex, output)


def test_builtin_regexes_are_all_checked() -> None:
    regexes = _builtin_regexes()
    assert r"[^\n]{1,200}\n?" in regexes and "(はい|いいえ)" in regexes and len(regexes) >= 10


def test_long_lines_back_off_to_a_word_boundary() -> None:
    """The QA regex stops at 200 characters; inside a word it backs off to the boundary
    before it, as backtracking did."""
    regex = r"[^\n]{1,200}\n?"
    for word in ("abcdefg", "a1b2c3d4", "x"):
        output = " ".join([word] * 80)
        assert find_answer(output, regex) == former(output, regex)
    assert find_answer("x" * 300, regex) is None  # one word longer than 200: no boundary


def test_a_lazy_repeat_that_splits_a_word_takes_the_longest_whole_token() -> None:
    """The documented difference: backtracking took the shortest extension of a lazy
    repeat, the linear rule takes the longest match from the same start."""
    assert former("axb x!x", r".*?x") == "axb x"
    assert find_answer("axb x!x", r".*?x") == "axb x!x"


def test_first_number_is_the_former_rule() -> None:
    for output in ["5.5.5", "x-3", "3.", "v1.5", "1.2.3 then 4", "abc12 7", "-.5", "10.0x 2"]:
        expected = former(output, r"-?[0-9]+(?:\.[0-9]+)?")
        assert first_number(output) == expected, output


EVIL = "a" * 46 + "!"


def test_catastrophic_regex_on_model_output_returns_at_once(tmp_path) -> None:
    """`(a+)+$` against 46 `a`s and `!`: Python's re never returned."""
    assert within_deadline(lambda: find_answer(EVIL, "(a+)+$")) is None
    spec = load_task("demo_sentiment_en").spec
    got = within_deadline(lambda: extract_answer(spec, EVIL, "(a+)+$", {"a": 0, "aa": 1}))
    assert got.used_fallback


def test_catastrophic_number_regex_returns_at_once() -> None:
    """The STS rule: the first number must fullmatch the template regex."""
    spec = load_task("jsts").spec
    number = "1" * 46 + "2"
    got = within_deadline(lambda: extract_answer(spec, number, "(1+)+$", None))
    assert got.used_fallback


def test_reachability_check_of_a_catastrophic_regex_returns_at_once(tmp_path) -> None:
    task = load_task("demo_sentiment_en")
    template = task.spec.templates[0].model_copy(
        update={"regex": "(a+)+$", "answers": {"a": "positive", EVIL: "negative"}}
    )
    with pytest.raises(Exception, match="can never be produced") as caught:
        within_deadline(lambda: check_answer_keys(task, [template], constrained=True))
    assert "answer 'aaaa" in str(caught.value)


def test_global_flags_work_inside_the_token_rule() -> None:
    """`(?i)` at the start of a template regex: the former wrapper put it mid-pattern,
    which Python's re refuses (a traceback at extraction); RE2 takes it."""
    assert find_answer("I'd say YES.", "(?i)(yes|no)") == "YES"
    with pytest.raises(re.error):
        former("YES", "(?i)(yes|no)")
