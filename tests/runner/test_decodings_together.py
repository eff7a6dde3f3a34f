"""A task's generating decodings run in one pass: each chunk's greedy and constrained
requests reach the backend in one call (so a prompt's two answers can share its
prefill), and every number is what running them one by one gives."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hakari.backends.base import GenerationRequest, GenerationResult, OnResults
from hakari.backends.fake import FakeBackend
from hakari.runner import evaluate
from tests.helpers.oracle import TASK, half_oracle


class Recording(FakeBackend):
    """A fake that records the requests of each `generate` call."""

    def __init__(self) -> None:
        super().__init__(half_oracle(TASK), name="fake")
        self.calls: list[list[GenerationRequest]] = []

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        self.calls.append(list(requests))
        return super().generate(requests, batch_size=batch_size, on_results=on_results)


def _run(tmp_path: Path, decodings: list[str], backend: FakeBackend, name: str) -> Any:
    return evaluate(
        models=["fake"],
        tasks=[TASK],
        decodings=decodings,  # type: ignore[arg-type]
        n_boot=100,
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / name,
        backend_factory=lambda spec: backend,
    )


def test_greedy_and_constrained_requests_reach_the_backend_together(tmp_path: Path) -> None:
    backend = Recording()
    together = _run(tmp_path, ["greedy", "constrained"], backend, "together")
    assert len(backend.calls) == 1  # the demo task is one chunk
    (call,) = backend.calls
    greedy = [r for r in call if r.regex is None]
    constrained = [r for r in call if r.regex is not None]
    assert len(greedy) == len(constrained) == 192
    assert [r.prompt for r in greedy] == [r.prompt for r in constrained]

    decodings = together.models["fake"].tasks[TASK].decodings
    assert list(decodings) == ["greedy", "constrained"]
    for name in ("greedy", "constrained"):
        alone = _run(tmp_path, [name], FakeBackend(half_oracle(TASK)), f"alone-{name}")
        mine, theirs = decodings[name], alone.models["fake"].tasks[TASK].decodings[name]
        assert mine.aggregate == theirs.aggregate and mine.templates == theirs.templates
        assert (mine.generated, mine.cached) == (192, 0)  # counted on the first run
        assert (theirs.generated, theirs.cached) == (0, 192)  # the same cache keys
        assert mine.wall_s > 0


def test_an_unreadable_cached_row_is_counted_on_its_own_decoding(tmp_path: Path) -> None:
    _run(tmp_path, ["greedy", "constrained"], Recording(), "first")
    with sqlite3.connect(tmp_path / "cache" / "responses.sqlite3") as conn:
        keys = [k for (k,) in conn.execute("SELECT key FROM responses")]
        for key in keys:
            (payload,) = conn.execute(
                "SELECT payload FROM responses WHERE key = ?", (key,)
            ).fetchone()
            if "(that is my answer)" in payload or "Hmm?" in payload:
                continue  # a greedy answer (half_oracle adds chatter); a constrained one next
            conn.execute("UPDATE responses SET payload = '{bad' WHERE key = ?", (key,))
            break
    backend = Recording()
    again = _run(tmp_path, ["greedy", "constrained"], backend, "again")
    decodings = again.models["fake"].tasks[TASK].decodings
    assert decodings["constrained"].unreadable_cache_rows == 1
    assert decodings["constrained"].generated == 1
    assert decodings["greedy"].unreadable_cache_rows == 0 and decodings["greedy"].generated == 0
    assert [r.regex is not None for call in backend.calls for r in call] == [True]


def test_a_budgeted_rounds_decodings_of_a_task_run_together(tmp_path: Path) -> None:
    backend = Recording()
    result = evaluate(
        models=["fake"],
        tasks=[TASK],
        decodings=["greedy", "constrained"],
        n_boot=100,
        budget="2x",
        cache_dir=tmp_path / "cache",
        backend_factory=lambda spec: backend,
    )
    assert backend.calls
    for call in backend.calls:  # each round's cells, both decodings in one call
        greedy = [r.prompt for r in call if r.regex is None]
        assert greedy and greedy == [r.prompt for r in call if r.regex is not None]
    decodings = result.models["fake"].tasks[TASK].decodings
    asked = sum(len(call) for call in backend.calls)
    assert decodings["greedy"].generated + decodings["constrained"].generated == asked
