"""Whole-token extraction on the linear-time matcher (issue 17 §1).

The token rule used to be look-arounds around the template regex in Python's `re`; RE2
has none, so the rule is folded into one RE2 pattern (`extract.whole_token`). `ORACLE`
is the same rule written as look-arounds for Python's backtracking `re`: on random
outputs built from the characters the rule looks at, both read the same answer for every
built-in template regex and for the regex shapes task files use, lazy repeats and
alternatives that are prefixes of one another included (RE2 keeps Python's priority).
`FORMER` is the rule before issue 17 (letters and digits only, the "-" and "." conditions
for digits only); where the two differ is pinned below.
"""

from __future__ import annotations

import random
import re

import pytest

from hakari.errors import HakariInputError
from hakari.tasks.extract import extract_answer, find_answer, first_number
from hakari.tasks.loader import builtin_task_paths, check_answer_keys, load_task
from tests.helpers.deadline import within_deadline

_W = "A-Za-z0-9_"
_START = rf"(?:(?=[{_W}])(?<![{_W}])(?<![0-9]\.)(?<!-)|(?![{_W}]))"
_END = rf"(?:(?<=[{_W}])(?![{_W}])(?!\.[0-9])|(?<![{_W}]))"
_F = "A-Za-z0-9"
_FORMER_START = rf"(?:(?=[0-9])(?<![{_F}])(?<![0-9]\.)(?<!-)|(?=[A-Za-z])(?<![{_F}])|(?![{_F}]))"
_FORMER_END = rf"(?:(?<=[0-9])(?![{_F}])(?!\.[0-9])|(?<=[A-Za-z])(?![{_F}])|(?<![{_F}]))"


def _lookarounds(start: str, end: str, output: str, regex: str) -> str | None:
    match = re.compile(f"{start}(?:{regex}){end}").search(output)
    return match.group(0) if match else None


def oracle(output: str, regex: str) -> str | None:
    """The token rule as look-arounds, matched by Python's backtracking re."""
    return _lookarounds(_START, _END, output, regex)


def former(output: str, regex: str) -> str | None:
    """The look-around extraction hakari used before issue 17."""
    return _lookarounds(_FORMER_START, _FORMER_END, output, regex)


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
PIECES = [*"aAbBCxyz0125 .-_\n()はい!,", "yes", "no", "none", "positive", "5.0", "4.5", "いいえ"]


@pytest.mark.parametrize("regex", [*_builtin_regexes(), *SHAPES, r".*?x", r"(a|ab c|ab)"])
def test_reads_what_backtracking_reads(regex: str) -> None:
    rng = random.Random(regex)
    for _ in range(1500):
        output = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        assert find_answer(output, regex) == oracle(output, regex), (regex, output)


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


@pytest.mark.parametrize(
    ("output", "regex", "now", "before"),
    [
        ("A_1", "[A-B]", None, "A"),  # "_" joins a word now
        ("x-A", "[A-B]", None, "A"),  # the "-" rule holds for letters too
        ("1.B", "[A-B]", None, "B"),  # and the "<digit>." rule
        ("B.2", "[A-B]", None, "B"),  # and the ".<digit>" rule
        ("x-A or B", "[A-B]", "B", "A"),
        ("x-1", "[0-1]", None, None),  # unchanged for digits
        ("axb x!x", r".*?x", "axb x", "axb x"),  # a lazy repeat: the shortest valid end
        ("ab c", r"(a|ab c|ab)", "ab c", "ab c"),  # priority, not length
    ],
)
def test_where_the_rule_is_stricter_than_before(
    output: str, regex: str, now: str | None, before: str | None
) -> None:
    assert former(output, regex) == before
    assert find_answer(output, regex) == now == oracle(output, regex)


def test_the_answer_is_the_whole_match_whatever_groups_the_regex_has() -> None:
    assert find_answer("so (B) it is", r"\((?P<x>A|(B))\)") == "(B)"
    assert find_answer("答えは(B)", r"\((A|B)\)") == "(B)"


def test_adversarial_output_for_an_unbounded_regex_returns_at_once() -> None:
    """A candidate at every word, each failing at its end: backtracking (and a retry per
    candidate) is quadratic in the output; the one RE2 pass is not."""
    assert within_deadline(lambda: find_answer("a " * 100_000 + "bz", r"[a-z ]*b")) is None
    assert within_deadline(lambda: find_answer("ab " * 70_000 + "ab!", r"b[a-z ]*!")) is None


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
    with pytest.raises(HakariInputError, match="can never be produced") as caught:
        within_deadline(lambda: check_answer_keys(task, [template], constrained=True))
    assert "answer 'aaaa" in str(caught.value)


def test_global_flags_work_inside_the_token_rule() -> None:
    """`(?i)` at the start of a template regex: the former wrapper put it mid-pattern,
    which Python's re refuses (a traceback at extraction); RE2 takes it."""
    assert find_answer("I'd say YES.", "(?i)(yes|no)") == "YES"
    with pytest.raises(re.error):
        former("YES", "(?i)(yes|no)")
    assert oracle("YES", "(?i:yes|no)") == "YES"
