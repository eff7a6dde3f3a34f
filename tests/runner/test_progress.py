"""The progress bars (issue 38 §11): the time left comes from the answers generated,
not from those read back from the cache (a resumed run), a bar advances by one answer,
and a caller's hook learns which answers came from the cache (or, written for three
arguments, still works)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from hakari.backends.fake import FakeBackend
from hakari.runner import evaluate
from hakari.runner.progress import progress_bars, time_left

LABEL = "m · demo_sentiment_en · greedy"


def bars_output(calls: list[tuple[float, int, bool]], total: int = 100) -> str:
    """What the bars print for `(time, advanced, cached)` calls, on a console that is
    not a terminal (the display's last frame is printed when it stops)."""
    clock = [0.0]
    console = Console(file=io.StringIO(), width=80, get_time=lambda: clock[0])
    with progress_bars(True, console=console) as hook:
        hook(LABEL, total, 0, False)
        for at, advanced, cached in calls:
            clock[0] = at
            hook(LABEL, total, advanced, cached)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_the_time_left_counts_generated_answers_only() -> None:
    # a resumed run reads 90 answers back at once, then generates 2 in 10 s: 5 s each,
    # 8 left -> 40 s (counting the cached ones: 92 in 10 s, "~0:01")
    out = bars_output([(0.0, 90, True), (10.0, 2, False)])
    assert "92/100 0:10 ~0:40" in out, out
    assert time_left(10.0, 2, 8) == 40.0
    assert time_left(10.0, 0, 10) is None  # nothing generated yet: no pace


def test_a_bar_advances_by_one_answer() -> None:
    out = bars_output([(3.0, 1, False)])
    assert "1/100 0:03 ~4:57" in out, out


def test_a_finished_bar_is_printed_once() -> None:
    out = bars_output([(1.0, 60, False), (2.0, 40, False)])
    assert out.count("100/100 0:02 done") == 1, out


def run_twice(tmp_path: Path, hook: object) -> None:
    backend = FakeBackend(lambda request: "positive", name="m")
    for _ in range(2):  # the second run reads every answer back from the cache
        evaluate(
            models=["m"],
            tasks=["demo_sentiment_en"],
            decodings=["greedy"],
            limit=4,
            n_boot=0,
            cache_dir=tmp_path,
            backend_factory=lambda spec: backend,
            on_progress=hook,
        )


def test_a_callers_hook_learns_which_answers_came_from_the_cache(tmp_path: Path) -> None:
    seen: list[tuple[int, bool]] = []
    run_twice(tmp_path, lambda label, total, n, cached: seen.append((n, cached)))
    assert sum(n for n, cached in seen if not cached) == 24  # the first run: generated
    assert sum(n for n, cached in seen if cached) == 24  # the second: read back


def test_a_hook_of_three_arguments_still_works(tmp_path: Path) -> None:
    seen: list[int] = []
    run_twice(tmp_path, lambda label, total, n: seen.append(n))
    assert sum(seen) == 48
