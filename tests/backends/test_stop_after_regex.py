"""Rule 4 of `GenerationRequest` (`stop_after_regex`): the text is cut to its shortest
prefix that holds a match, and every backend gives the same text: the transformers
backend stops generating there, the servers (OpenAI-compatible, vLLM) cut the finished
line (tests/backends/test_openai.py and test_vllm.py check those two). Requests that
do not set it keep their cache keys."""

from __future__ import annotations

import pytest

from hakari.backends.base import (
    GenerationRequest,
    ModelIdentity,
    apply_output_rules,
    stop_after_index,
)
from hakari.backends.cache import request_key
from hakari.backends.hf import HFBackend
from hakari.backends.serving import final_result

THREE_CHARS = r"[\s\S]{3}"  # any three characters: a prefix of three holds a match


@pytest.mark.parametrize(
    ("text", "stop", "chars", "after", "expected", "reason"),
    [
        ("answer 1. then more", ("\n",), None, r"1\.", "answer 1.", "stop"),
        ("no digit here", ("\n",), None, r"[0-9]", "no digit here", None),
        ("first line\n1 2", ("\n",), None, "[0-9]", "first line", "stop"),  # rule 1 first
        ("abcdef 1", (), 4, "[0-9]", "abcd", "length"),  # past the budget: never seen
        ("abcdef", (), None, THREE_CHARS, "abc", "stop"),
        ("ab", (), None, THREE_CHARS, "ab", None),
        ("xyz", (), None, "", "", "stop"),  # the empty prefix already matches
        # the shortest prefix, not the end of the match in the whole text
        ("aaaa", (), None, "a+", "a", "stop"),
        # a match that only a prefix has (`$`) still cuts there
        ("ab!", (), None, "b$", "ab", "stop"),
    ],
)
def test_rule_4_cuts_at_the_shortest_prefix_with_a_match(
    text: str,
    stop: tuple[str, ...],
    chars: int | None,
    after: str,
    expected: str,
    reason: str | None,
) -> None:
    got = apply_output_rules(text, stop=stop, max_new_chars=chars, stop_after_regex=after)
    assert got == (expected, reason)


def test_stop_after_index() -> None:
    assert stop_after_index("xx12", "[0-9]+") == 3
    assert stop_after_index("xx", "[0-9]") is None
    assert stop_after_index("", "") == 0


def test_cache_key_changes_only_for_requests_that_set_it() -> None:
    plain = GenerationRequest(prompt="p", max_new_tokens=8, max_new_chars=2)
    assert "stop_after_regex" not in plain.settings()  # keys made before the field stay valid
    with_rule = GenerationRequest(
        prompt="p", max_new_tokens=8, max_new_chars=2, stop_after_regex="[01]"
    )
    other_rule = GenerationRequest(
        prompt="p", max_new_tokens=8, max_new_chars=2, stop_after_regex="[AB]"
    )
    who = ModelIdentity(backend="hf", name="m", revision="r")
    keys = {request_key("generate", who, "p", r.settings()) for r in (plain, with_rule, other_rule)}
    assert len(keys) == 3


def test_servers_cut_the_finished_line() -> None:
    request = GenerationRequest(prompt="Q", max_new_tokens=20, stop_after_regex=r"[0-9]")
    result = final_result(request, "answer 7 because\nmore", "stop", n_tokens=5)
    assert (result.text, result.finish_reason) == ("answer 7", "stop")
    constrained = GenerationRequest(
        prompt="Q", max_new_tokens=5, regex="[0-9]+", stop=(), stop_after_regex=r"[0-9]"
    )
    assert final_result(constrained, "12", "stop", n_tokens=2).text == "12"  # a regex ends it


def test_transformers_backend_stops_generating_there(tiny_random_backend: HFBackend) -> None:
    """A random model writes its whole token budget; with the rule the row ends as soon
    as three characters are there, and its text is the full text cut by the rule."""
    full, ruled = tiny_random_backend.generate(
        [
            GenerationRequest(prompt="Hello", max_new_tokens=40, stop=()),
            GenerationRequest(
                prompt="Hello", max_new_tokens=40, stop=(), stop_after_regex=THREE_CHARS
            ),
        ],
        batch_size=1,
    )
    assert len(full.text) > 3, full
    assert (
        ruled.text
        == full.text[:3]
        == apply_output_rules(full.text, stop_after_regex=THREE_CHARS)[0]
    )
    assert ruled.finish_reason == "stop" and ruled.n_tokens < full.n_tokens
