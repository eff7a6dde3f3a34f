"""What `hakari run` shows while it runs and when it ends: each model × task's tables as
soon as the model has finished the task, then the summary, the verdict and the warnings
(`verdict`), where the files are and the next command. Modes: "full" (a person at a
terminal), "quiet" (the path of results.json only), "json" (results.json on stdout,
nothing else)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.text import Text

from hakari.reports.terminal import print_leaderboards, print_summary, print_task
from hakari.results import EvalResults, TaskResult

Mode = Literal["full", "quiet", "json"]


class RunView:
    """The callbacks a run calls (`task_done`, `status`) and its ending (`finish`)."""

    def __init__(self, out: Console, err: Console, *, mode: Mode = "full") -> None:
        self.out, self.err, self.mode = out, err, mode
        self.shown: set[tuple[str, str]] = set()
        # the progress bars are live on `out`: everything goes through it, above them
        self.bars_live = False

    @property
    def shows_progress(self) -> bool:
        return self.mode == "full"

    @contextmanager
    def live_bars(self) -> Iterator[None]:
        """While progress bars are drawn on `out` (a terminal): status lines go there too,
        so that the display's redraws never overwrite them."""
        self.bars_live = self.out.is_terminal
        try:
            yield
        finally:
            self.bars_live = False

    def status(self, text: str) -> None:
        """A step without a progress bar, for a person at a terminal (a log or a test
        keeps errors on their one line)."""
        if self.mode != "full":
            return
        line = Text(text + " …", "dim")
        if self.bars_live:
            self.out.print(line)
        elif self.err.is_terminal:
            self.err.print(line)

    def task_done(self, model: str, task_name: str, task: TaskResult) -> None:
        if self.mode == "full":
            print_task(model, task_name, task, self.out)
        self.shown.add((model, task_name))

    def finish(self, results: EvalResults) -> None:
        out_dir = Path(results.output_dir) if results.output_dir else None
        if self.mode == "json":
            self.out.file.write(results.file_text())
            self.out.file.flush()
            return
        if self.mode == "quiet":
            if out_dir is not None:
                self.out.print(str(out_dir / "results.json"), soft_wrap=True)
            return
        for model, mres in results.models.items():  # a budgeted run shows them at its end
            for task_name, task in mres.tasks.items():
                if (model, task_name) not in self.shown:
                    print_task(model, task_name, task, self.out)
        print_leaderboards(results, self.out)  # a family's leaderboard view (`--tasks jaster`)
        print_summary(results, self.out)
        if out_dir is None:
            return
        folder = shlex.quote(str(out_dir))
        self.out.print(
            Text.assemble(
                ("results: ", "bold"),
                f"{out_dir / 'results.json'}  samples: {out_dir / 'samples.jsonl'}",
            ),
            soft_wrap=True,
        )
        self.out.print(
            Text.assemble(
                ("next: ", "bold"),
                f"hakari report {folder} --html report.html",
                ("   (every table, charts, paired tests and samples on one page)", "dim"),
            ),
            soft_wrap=True,
        )
