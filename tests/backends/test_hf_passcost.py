"""A pass's cost measured at load (`hf.passcost`) and the cuts it makes: the rows of a
log-likelihood flush, the tree or no shared part, the positions a flush may hold. No
model: a step double on a clock of its own, so that the measurement is exact."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
import torch

from hakari.backends.hf import passcost
from hakari.backends.hf.loglik import rows_plan
from hakari.backends.hf.passcost import (
    MAX_PASS_TOKENS,
    MIN_PASS_TOKENS,
    PassCost,
    attention_pair_tokens,
    measure_pass_cost,
)
from hakari.backends.hf.scheduling import (
    FLUSH_MAX_ROWS,
    LoglikScheduler,
    Pair,
    loglik_rows,
)
from hakari.backends.hf.step import PASS_TOKENS


class _Clock:
    def __init__(self) -> None:
        self.ms = 0.0

    def seconds(self) -> float:
        return self.ms / 1000


class _Step:
    """A forward pass that costs `fixed` + `per_token` × tokens ms on `clock`, the first
    pass `first` more (an allocation), one in `noisy` passes 10× (a loaded machine)."""

    def __init__(self, clock: _Clock, fixed: float, per_token: float, noisy: int = 0) -> None:
        self.clock, self.fixed, self.per_token, self.noisy = clock, fixed, per_token, noisy
        self.shapes: list[tuple[int, int]] = []

    def extend(self, ids: torch.Tensor, *_: Any, **__: Any) -> tuple[torch.Tensor, None]:
        self.shapes.append((ids.shape[0], ids.shape[1]))
        cost = self.fixed + self.per_token * ids.numel()
        if len(self.shapes) == 1:
            cost += 500
        if self.noisy and len(self.shapes) % self.noisy == 0:
            cost *= 10
        self.clock.ms += cost
        return torch.zeros(ids.shape[0], 1, 8), None


def _measure(monkeypatch: pytest.MonkeyPatch, step: _Step, clock: _Clock) -> PassCost:
    monkeypatch.setattr(passcost.time, "perf_counter", clock.seconds)
    return measure_pass_cost(step, torch.device("cpu"), vocab_size=100)  # type: ignore[arg-type]


def test_the_fixed_and_per_token_parts_are_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    step = _Step(clock, fixed=30.0, per_token=0.1)  # a GPU-like pass: the fixed part is all
    cost = _measure(monkeypatch, step, clock)
    assert cost.fixed_ms == pytest.approx(30.0) and cost.token_ms == pytest.approx(0.1)
    assert cost.pass_tokens == 512  # 2 × 300, a power of two
    assert max(r * w for r, w in step.shapes) == 512  # grown until 2 × the 1-token pass
    assert all(w <= passcost.WIDTH for _, w in step.shapes)


def test_a_slow_pass_now_and_then_does_not_move_the_measurement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock()
    cost = _measure(monkeypatch, _Step(clock, fixed=30.0, per_token=0.1, noisy=3), clock)
    assert cost.pass_tokens == 512  # medians of three


def test_pass_tokens_are_a_bounded_power_of_two() -> None:
    assert PassCost(fixed_ms=54.0, token_ms=1.7).pass_tokens == MIN_PASS_TOKENS  # a CPU
    assert PassCost(fixed_ms=54.0, token_ms=0.2).pass_tokens == 512
    assert PassCost(fixed_ms=30.0, token_ms=0.0).pass_tokens == MAX_PASS_TOKENS
    assert PassCost(fixed_ms=30.0, token_ms=1e-6).pass_tokens == MAX_PASS_TOKENS
    assert set(PassCost(1.0, 0.5).record()) == {"pass_fixed_ms", "pass_token_ms", "pass_tokens"}


def test_a_flush_holds_enough_rows_for_the_pass_cost_and_no_more_than_the_bounds() -> None:
    assert loglik_rows([200] * 10, 64, 32) == 32  # a CPU: the backend's batch size
    assert loglik_rows([200] * 10, 4096, 32) == 163  # a GPU: 8 passes' worth, within 32k tokens
    assert loglik_rows([10] * 10, 4096, 32) == FLUSH_MAX_ROWS
    assert loglik_rows([], 4096, 32) == 32
    assert loglik_rows([4] * 10, 64, 32) == 32  # the CPU-tuned cost: the runs measured there


def test_shared_parts_run_alone_only_where_they_save_a_pass() -> None:
    shared = tuple(range(100, 140))
    rows = [(*shared, 1, 2), (*shared, 3, 4), (*shared, 5)]
    tree = rows_plan(rows, 1, 0)  # passes cost nothing: the shared part once
    assert tree.children and tree.children[0].end == len(shared)
    flat = rows_plan(rows, 1, 4096)  # a pass costs more than the tokens it saves
    assert not flat.children and sorted(flat.rows) == [0, 1, 2]
    short = [(*shared[:20], 1), (*shared[:20], 2)]  # 20 tokens saved, a pass counted 64
    assert not rows_plan(short, 1, 128).children
    assert rows_plan(short, 1, PASS_TOKENS).children  # the CPU-tuned cost: the tree, as before


def test_attention_over_a_long_shared_part_keeps_the_tree_where_it_costs_more() -> None:
    shared = tuple(range(1000, 2000))
    rows = [(*shared, 1, 2), (*shared, 3, 4), (*shared, 5, 6)]
    assert not rows_plan(rows, 1, 4096).children  # passes alone: read the part three times
    tiny = attention_pair_tokens(8)  # hidden 8: attention is most of a token's work
    assert rows_plan(rows, 1, 4096, tiny).children[0].end == len(shared)
    assert not rows_plan(rows, 1, 4096, attention_pair_tokens(4096)).children  # a big model
    for odd in (None, 0, -8, "8", 8.0, True):  # a config's hidden size, as written
        assert attention_pair_tokens(odd) == 0.0


def test_a_flush_holds_at_most_the_positions_given() -> None:
    flushed: list[int] = []

    def score(keys: Sequence[tuple[int, ...]], keep: int) -> torch.Tensor:
        flushed.append(len(keys))
        return torch.zeros(len(keys), keep, 50)

    pairs = [[Pair(inputs=(i, 7, 8), targets=(1, 2, 3))] for i in range(10)]
    results = LoglikScheduler(pairs, 8, score, None, max_positions=12).run()
    assert flushed == [4, 4, 2] and len(results) == 10  # 4 rows × 3 positions each
    flushed.clear()
    LoglikScheduler(pairs, 8, score, None, max_positions=1).run()
    assert flushed == [1] * 10  # a row alone is never refused


def test_the_backend_measures_its_pass_cost_at_load_and_cuts_by_it(
    tiny_random_backend: Any,
) -> None:
    from hakari.backends.hf import HFBackend

    model, tok = tiny_random_backend.model, tiny_random_backend.tokenizer
    loaded = HFBackend(model, tok, name="t", revision="")  # the fixture's is pinned
    record = loaded.serving_record()
    assert record["device"] == str(tiny_random_backend.device)
    assert record["pass_tokens"] == loaded.step.pass_tokens >= MIN_PASS_TOKENS
    assert record["pass_fixed_ms"] >= 0 and record["pass_token_ms"] >= 0  # timings: noisy here


def test_a_run_records_the_pass_cost_in_the_models_serving(
    tiny_random_folder: Any, tmp_path: Any
) -> None:
    from hakari.runner.pipeline import evaluate

    evaluate(
        models=[f"hf:{tiny_random_folder}"],
        tasks=["demo_sentiment_en"],
        templates=["0-0"],
        decodings=["loglik"],
        limit=2,
        n_boot=0,
        device="cpu",
        output_dir=tmp_path / "run",
        cache_dir=tmp_path / "cache",
    )
    written = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    (model,) = written["models"].values()
    assert model["serving"]["device"] == "cpu"
    assert model["serving"]["pass_tokens"] >= MIN_PASS_TOKENS
    assert set(model["serving"]) >= {"pass_fixed_ms", "pass_token_ms"}


def test_a_big_model_on_a_cpu_counts_the_tuned_cost_unmeasured(
    tiny_random_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hakari.backends.hf import HFBackend, backend

    if tiny_random_backend.device.type != "cpu":
        pytest.skip("the rule is a CPU's")
    monkeypatch.setattr(backend, "CPU_BIG_MODEL_PARAMS", 0)  # the tiny model counts as big
    monkeypatch.setattr(backend, "measure_pass_cost", lambda *_: pytest.fail("measured"))
    big = HFBackend(tiny_random_backend.model, tiny_random_backend.tokenizer, name="t", revision="")
    assert big.serving_record() == {"device": "cpu", "pass_tokens": PASS_TOKENS}
    assert big.step.pass_tokens == PASS_TOKENS
