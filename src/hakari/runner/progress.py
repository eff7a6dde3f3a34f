"""Progress bars for a run (rich), one per model × task × decoding(s), advanced per
batch, with the time left from the first batch on; laid out for an 80-column terminal
(the label gives way, the numbers never do).

Labels contain user text (model specs, task names); they are passed to rich as `Text`
objects so that brackets in them are never read as console markup.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from hakari.runner.options import ProgressHook

if TYPE_CHECKING:
    from rich.progress import Task as BarTask
    from rich.text import Text


def time_left(elapsed: float | None, completed: float, total: float | None) -> float | None:
    """Seconds left at the run's average pace so far (None before the first batch):
    the whole elapsed time, not a short window, so that slow batches far apart (long
    Japanese answers) still give an estimate."""
    if not elapsed or not completed or total is None:
        return None
    return max(total - completed, 0.0) * elapsed / completed


def _clock(seconds: float) -> str:
    """m:ss under an hour, else h:mm:ss."""
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}" if whole < 3600 else str(timedelta(seconds=whole))


def _columns() -> list[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn
    from rich.table import Column
    from rich.text import Text

    class TimesColumn(ProgressColumn):
        """`elapsed ~left` (`~?` before the first batch), or `elapsed done`."""

        def render(self, task: BarTask) -> Text:
            elapsed = task.finished_time if task.finished else task.elapsed
            spent = _clock(elapsed or 0.0)
            if task.finished:
                return Text(f"{spent} done", style="progress.elapsed")
            left = time_left(task.elapsed, task.completed, task.total)
            rest = "~" + _clock(left) if left is not None else "~?"
            return Text(f"{spent} {rest}", style="progress.remaining")

    return [
        TextColumn(
            "{task.description}",
            markup=False,
            table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis", min_width=12),
        ),
        BarColumn(bar_width=6),
        MofNCompleteColumn(table_column=Column(no_wrap=True)),
        TimesColumn(table_column=Column(no_wrap=True)),
    ]


@contextmanager
def progress_bars(enabled: bool) -> Iterator[ProgressHook]:
    """A hook `(label, total, advanced)`: the first call for a label adds its bar."""
    if not enabled:
        yield lambda label, total, n: None
        return
    from rich.progress import Progress

    bars: dict[str, Any] = {}
    with Progress(*_columns(), transient=False, expand=True) as progress:

        def hook(label: str, total: int, advanced: int) -> None:
            if label not in bars:
                bars[label] = progress.add_task(label, total=total)
            if advanced:
                progress.advance(bars[label], advanced)

        yield hook
