"""Progress bars for a run (rich), one per model × task × decoding.

Labels contain user text (model specs, task names); they are passed to rich as `Text`
objects so that brackets in them are never read as console markup.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hakari.runner.options import ProgressHook


@contextmanager
def progress_bars(enabled: bool) -> Iterator[ProgressHook]:
    if not enabled:
        yield lambda label, total, n: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bars: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
    ) as progress:

        def hook(label: str, total: int, advanced: int) -> None:
            if label not in bars:
                bars[label] = progress.add_task(label, total=total)
            if advanced:
                progress.advance(bars[label], advanced)

        yield hook
