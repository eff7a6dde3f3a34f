"""Each model is loaded once per run, whatever the plan (issue 37 §3): a plan of one
round closes each model's backend when its round is done (one model in memory at a
time); a plan of several rounds (`--target-ci`, `--until-decided`) keeps every model's
open until the run ends, so that no round loads a model again. Counted with the backend
factory, the one place a run loads a model."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hakari.backends.fake import FakeBackend, hash_choice
from hakari.runner import evaluate
from tests.helpers.oracle import TASK

ROUND_REQUESTS = 64 * 2  # each round of the oracle task: 64 new cells x 2 decodings


class CountingFactory:
    """A `backend_factory` that counts each model's loads and closes, and the most
    backends open at once."""

    def __init__(self, answers: dict[str, list[str]], fail: str | None = None) -> None:
        self.answers = answers
        self.fail = fail  # a model whose second round raises
        self.loads: Counter[str] = Counter()
        self.asked: Counter[str] = Counter()  # requests answered (or refused), per model
        self.closes: Counter[str] = Counter()
        self.open = 0
        self.most_open = 0

    def __call__(self, spec: str) -> FakeBackend:
        self.loads[spec] += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)

        def respond(request: Any) -> str:
            self.asked[spec] += 1
            # a round asks 64 new cells in each of the two decodings: 128 requests
            if spec == self.fail and self.asked[spec] > ROUND_REQUESTS:
                raise RuntimeError("backend died")
            return hash_choice(request.prompt, self.answers[spec])

        backend = FakeBackend(respond, name=spec)
        close = backend.close

        def counted_close() -> None:
            self.closes[spec] += 1
            self.open -= 1
            close()

        backend.close = counted_close  # type: ignore[method-assign]
        return backend


def _run(factory: CountingFactory, tmp_path: Path, **plan: Any) -> Any:
    return evaluate(
        models=list(factory.answers),
        tasks=[TASK],
        decodings=["greedy", "constrained"],
        n_boot=100,
        cache_dir=tmp_path / "cache",
        backend_factory=factory,
        **plan,
    )


def _rounds(results: Any, model: str) -> int:
    budget = results.models[model].tasks[TASK].decodings["greedy"].budget
    return len(budget.rounds)


# two models that agree on most prompts: --until-decided cannot decide them early
ALIKE = {"a": ["positive", "negative"], "b": ["positive", "negative", "negative"]}


@pytest.mark.slow
def test_until_decided_loads_each_model_once(tmp_path: Path) -> None:
    factory = CountingFactory(ALIKE)
    results = _run(factory, tmp_path, until_decided=True)
    assert _rounds(results, "a") >= 2  # several rounds ran, each needing both models
    assert factory.loads == {"a": 1, "b": 1}
    assert factory.closes == {"a": 1, "b": 1} and factory.open == 0
    assert factory.most_open == 2  # the rounds keep every model open


@pytest.mark.slow
def test_target_ci_over_several_rounds_loads_each_model_once(tmp_path: Path) -> None:
    factory = CountingFactory(ALIKE | {"c": ["negative", "positive", "?"]})
    results = _run(factory, tmp_path, target_ci=1e-9)  # never met: every round runs
    assert _rounds(results, "a") == 3  # 64, 128, then the 192 cells of the grid
    assert factory.loads == {"a": 1, "b": 1, "c": 1}
    assert factory.closes == factory.loads and factory.open == 0


@pytest.mark.slow
@pytest.mark.parametrize("plan", [{}, {"budget": "2x"}], ids=["full", "budget"])
def test_one_round_holds_one_model_at_a_time(tmp_path: Path, plan: dict[str, Any]) -> None:
    factory = CountingFactory(ALIKE)
    _run(factory, tmp_path, **plan)
    assert factory.loads == {"a": 1, "b": 1} and factory.closes == {"a": 1, "b": 1}
    assert factory.most_open == 1


@pytest.mark.slow
def test_a_model_failing_in_a_later_round_closes_every_backend(tmp_path: Path) -> None:
    factory = CountingFactory(ALIKE, fail="b")
    with pytest.raises(RuntimeError, match="backend died"):
        _run(factory, tmp_path, target_ci=1e-9)
    assert factory.asked["a"] == 2 * ROUND_REQUESTS  # b died in the second round
    assert factory.loads == {"a": 1, "b": 1}
    assert factory.closes == {"a": 1, "b": 1} and factory.open == 0
