"""Rule 4 of `GenerationRequest` (`stop_after`): the text is cut a number of characters
past the start of a pattern's leftmost match (RE2, linear in the text), and every
backend gives the same text: the transformers
backend stops generating there, the servers (OpenAI-compatible, vLLM) cut the finished
line in `serving.final_result`, which both share (tests/backends/test_openai.py checks
it through a stub server). Requests that do not set it keep their cache keys."""

from __future__ import annotations

import pytest

from hakari.backends.base import (
    GenerationRequest,
    ModelIdentity,
    StopAfter,
    apply_output_rules,
    stop_after_index,
)
from hakari.backends.cache import request_key
from hakari.backends.hf import HFBackend
from hakari.backends.hf.rows import Row, RowStepper
from hakari.backends.serving import final_result

THREE_CHARS = StopAfter(regex=r"(?s:.)", chars=3)  # three characters from the first


def after(regex: str, chars: int = 0) -> StopAfter:
    return StopAfter(regex=regex, chars=chars)


@pytest.mark.parametrize(
    ("text", "stop", "budget", "rule", "expected", "reason"),
    [
        ("answer 1. then more", ("\n",), None, after(r"1\.", 2), "answer 1.", "stop"),
        ("no digit here", ("\n",), None, after("[0-9]", 1), "no digit here", None),
        ("first line\n1 2", ("\n",), None, after("[0-9]", 1), "first line", "stop"),  # rule 1
        ("abcdef 1", (), 4, after("[0-9]", 1), "abcd", "length"),  # past the budget: unseen
        ("abcdef", (), None, THREE_CHARS, "abc", "stop"),
        ("ab", (), None, THREE_CHARS, "ab", None),  # not that long yet: nothing decided
        ("xyz", (), None, after(""), "", "stop"),  # the empty match at 0, zero characters
        ("aaaa", (), None, after("a+", 1), "a", "stop"),  # from the start, not the end
        # a capturing group marks the start: the answer after its one character of context
        ("x 1 more", (), None, after(r"(?: )([0-9])", 3), "x 1 m", "stop"),
        ("12345", (), None, after("3", 9), "12345", None),  # the text ends first
    ],
)
def test_rule_4_cuts_past_the_start_of_the_leftmost_match(
    text: str,
    stop: tuple[str, ...],
    budget: int | None,
    rule: StopAfter,
    expected: str,
    reason: str | None,
) -> None:
    got = apply_output_rules(text, stop=stop, max_new_chars=budget, stop_after=rule)
    assert got == (expected, reason)


def test_stop_after_index_counts_characters_not_bytes() -> None:
    assert stop_after_index("xx12", after("[0-9]+", 1)) == 3
    assert stop_after_index("xx", after("[0-9]")) is None
    assert stop_after_index("", after("")) == 0
    assert stop_after_index("はい、そうです", after("(はい|いいえ)", 4)) == 4


def test_stop_after_is_linear_on_a_hostile_pattern() -> None:
    """`(a+)+$` backtracks exponentially in Python's `re`; RE2 answers at once."""
    assert stop_after_index("a" * 5000 + "!", after("(a+)+$", 1)) is None


def test_cache_key_changes_only_for_requests_that_set_it() -> None:
    plain = GenerationRequest(prompt="p", max_new_tokens=8, max_new_chars=2)
    assert "stop_after" not in plain.settings()  # keys made before the field stay valid
    with_rule = GenerationRequest(
        prompt="p", max_new_tokens=8, max_new_chars=2, stop_after=after("[01]", 3)
    )
    other_rule = GenerationRequest(
        prompt="p", max_new_tokens=8, max_new_chars=2, stop_after=after("[AB]", 3)
    )
    who = ModelIdentity(backend="hf", name="m", revision="r")
    keys = {request_key("generate", who, "p", r.settings()) for r in (plain, with_rule, other_rule)}
    assert len(keys) == 3


def test_servers_cut_the_finished_line() -> None:
    request = GenerationRequest(prompt="Q", max_new_tokens=20, stop_after=after("[0-9]", 1))
    result = final_result(request, "answer 7 because\nmore", "stop", n_tokens=5)
    assert (result.text, result.finish_reason) == ("answer 7", "stop")
    constrained = GenerationRequest(
        prompt="Q", max_new_tokens=5, regex="[0-9]+", stop=(), stop_after=after("[0-9]", 1)
    )
    assert final_result(constrained, "12", "stop", n_tokens=2).text == "12"  # a regex ends it


def test_transformers_backend_stops_generating_there(tiny_random_backend: HFBackend) -> None:
    """A random model writes its whole token budget; with the rule the row ends as soon
    as three characters are there, and its text is the full text cut by the rule."""
    full, ruled = tiny_random_backend.generate(
        [
            GenerationRequest(prompt="Hello", max_new_tokens=40, stop=()),
            GenerationRequest(prompt="Hello", max_new_tokens=40, stop=(), stop_after=THREE_CHARS),
        ],
        batch_size=1,
    )
    assert len(full.text) > 3, full
    assert ruled.text == full.text[:3] == apply_output_rules(full.text, stop_after=THREE_CHARS)[0]
    assert ruled.finish_reason == "stop" and ruled.n_tokens < full.n_tokens


@pytest.mark.slow
@pytest.mark.parametrize("text", ["A: 盄\nB", "B: 東京です", "答え: いいえ、です", "A:  1"])
def test_a_row_stops_where_the_rules_cut_its_whole_text(
    smollm2_backend: HFBackend, text: str
) -> None:
    """Fed one token at a time, a transformers row ends with the text the rules give on
    its whole text, also where a token holds a space and the first bytes of a Japanese
    character (" 盄" is such a token for SmolLM2: the row ended at "A:" while a server,
    cutting the finished line, returned "A: ")."""
    tokenizer = smollm2_backend.tokenizer
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    rule = StopAfter(regex=r"(?:\A|[^A-E])([A-E])", chars=3)
    row = Row(prompt=[], max_new=64, stop=("\n",), constraint=None, sampler=None,
              max_chars=24, stop_after=rule)  # fmt: skip
    stepper = RowStepper(tokenizer, eos=frozenset())
    for token in ids:
        stepper.advance([row], [token])
        if row.done:
            break
    expected = apply_output_rules(text, stop=("\n",), max_new_chars=24, stop_after=rule)[0]
    assert row.result(stepper.decode).text == expected
