"""What every backend shares (`hakari.backends.base`, `hakari.backends.serving`): results
gathered in request order with each batch persisted as it completes, the
log-likelihood split of a pair, and the serving backends' re-ask."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hakari.backends.base import (
    REFUSED,
    GenerationRequest,
    InOrder,
    move_trailing_space,
)
from hakari.backends.serving import final_results, to_reask


def test_in_order_returns_request_order_and_hands_each_batch_on() -> None:
    seen: list[list[tuple[int, str]]] = []
    collected = InOrder[str](3, seen.append)
    collected.add([(2, "c")])
    collected.add([(0, "a"), (1, "b")])
    assert collected.results() == ["a", "b", "c"]
    assert seen == [[(2, "c")], [(0, "a"), (1, "b")]]


def test_in_order_refuses_to_return_a_missing_result() -> None:
    collected = InOrder[str](2, None)
    collected.add([(1, "b")])
    with pytest.raises(RuntimeError, match=r"no result for requests \[0\]"):
        collected.results()


@pytest.mark.parametrize(
    ("context", "continuation", "split"),
    [
        ("Answer:", " yes", ("Answer:", " yes")),
        ("Answer: ", "yes", ("Answer:", " yes")),
        ("Q\n\t ", "A", ("Q", "\n\t A")),
        ("   ", "x", ("", "   x")),
        ("", "x", ("", "x")),
    ],
)
def test_trailing_space_moves_to_the_continuation(
    context: str, continuation: str, split: tuple[str, str]
) -> None:
    assert move_trailing_space(context, continuation) == split
    assert "".join(split) == context + continuation


@dataclass(frozen=True)
class Answer:
    text: str | None
    finish: str = "stop"
    n_tokens: int = 1
    eos: bool = False


def test_only_answers_cut_in_their_leading_whitespace_are_asked_again() -> None:
    # "\n" may stop inside leading whitespace; "." never can
    lines = GenerationRequest(prompt="p", max_new_tokens=8, stop=("\n", "."))
    dots = GenerationRequest(prompt="p", max_new_tokens=8, stop=(".",))
    requests = [lines, lines, dots, lines, lines]
    answers = [Answer("\n"), Answer("yes"), Answer(" "), Answer(None), Answer("\n", eos=True)]
    assert to_reask(requests, answers) == [0]
    results = final_results(requests, answers)
    assert results[1].text == "yes" and results[3] is REFUSED
