"""Progress bars for a run (rich), one per model × task × decoding(s), laid out for an
80-column terminal (the label gives way, the numbers never do).

- A bar advances as the backend hands answers back, by however many it hands back:
  each answer where the backend reports answers one by one (servers), each batch where
  it reports batches.
- The time left is estimated from the answers generated, never from those read back
  from the response cache (`ProgressHook`'s `cached`): a resumed run reads most of its
  answers back at once, and counting them would promise the rest at that pace.
- A finished bar leaves the live display and is printed once, as a line, so the
  display holds only the bars still running. Whatever a view prints while they run must
  go through the display's console (`progress_bars(console=...)`): a write that bypasses
  it is overwritten by the display's next redraw.

Labels contain user text (model specs, task names): the label column never reads
console markup.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from hakari.runner.options import ProgressHook

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.progress import Task as BarTask
    from rich.text import Text


def time_left(elapsed: float | None, generated: float, remaining: float | None) -> float | None:
    """Seconds left at the pace of the answers generated so far (None before the first
    one): over the whole elapsed time, not a short window, so that slow batches far
    apart (long Japanese answers) still give an estimate."""
    if not elapsed or generated <= 0 or remaining is None:
        return None
    return max(remaining, 0.0) * elapsed / generated


def _clock(seconds: float) -> str:
    """m:ss under an hour, else h:mm:ss."""
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}" if whole < 3600 else str(timedelta(seconds=whole))


def _columns() -> list[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn
    from rich.table import Column
    from rich.text import Text

    class TimesColumn(ProgressColumn):
        """`elapsed ~left` (`~?` before the first answer generated), or `elapsed done`."""

        def render(self, task: BarTask) -> Text:
            elapsed = task.finished_time if task.finished else task.elapsed
            spent = _clock(elapsed or 0.0)
            if task.finished:
                return Text(f"{spent} done", style="progress.elapsed")
            generated = task.completed - task.fields.get("cached", 0)
            left = time_left(task.elapsed, generated, task.remaining)
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


class Bars:
    """The hook of a live display: the first call for a label adds its bar; a bar that
    is complete is printed once and leaves the display (a later pass with the same
    label, e.g. a budgeted run's next round, gets a new bar)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.bars: dict[str, TaskID] = {}

    def __call__(self, label: str, total: int, advanced: int, cached: bool = False) -> None:
        bar = self.bars.get(label)
        if bar is None:
            if total <= 0:
                return
            bar = self.bars[label] = self.progress.add_task(label, total=total, cached=0)
        if not advanced:
            return
        task = self._task(bar)
        counted = task.fields.get("cached", 0) + (advanced if cached else 0)
        self.progress.update(bar, advance=advanced, cached=counted)
        if task.finished:
            self._retire(label, task)

    def _task(self, bar: TaskID) -> BarTask:
        return next(t for t in self.progress.tasks if t.id == bar)

    def _retire(self, label: str, task: BarTask) -> None:
        self.progress.remove_task(self.bars.pop(label))
        self.progress.console.print(self.progress.make_tasks_table([task]))


def caller_hook(hook: Callable[..., Any]) -> ProgressHook:
    """A caller's `on_progress` as the runner calls it, `(label, total, advanced,
    cached)`; a hook written for `(label, total, advanced)` gets the cached answers as
    ordinary progress."""
    try:
        inspect.signature(hook).bind("", 0, 0, False)
    except (TypeError, ValueError):
        return lambda label, total, advanced, cached: hook(label, total, advanced)
    return hook


def no_bars(label: str, total: int, advanced: int, cached: bool = False) -> None:
    return None


@contextmanager
def progress_bars(enabled: bool, console: Console | None = None) -> Iterator[ProgressHook]:
    """The bars' hook while the block runs, on `console` (default: rich's own); a hook
    that shows nothing when not `enabled`."""
    if not enabled:
        yield no_bars
        return
    from rich.progress import Progress

    with Progress(*_columns(), console=console, transient=False, expand=True) as progress:
        yield Bars(progress)
