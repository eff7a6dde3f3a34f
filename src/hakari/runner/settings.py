"""`EvalOptions`: everything `evaluate` is asked, as one typed record in three groups —
how models are loaded and asked (`LoadOptions`, the backend registry's own record), what
the run evaluates and how its numbers are made (`PlanOptions`), where its results go
(`OutputOptions`). `hakari run`'s option groups build the same three.

The one decision a reader must know: **this record is what every stage reads**, there
is no flat copy. `evaluate(models, tasks, limit=4, ...)` (the flat keywords) builds it
with `EvalOptions.of`; `preflight.check_options` checks every value through the one
validation layer (`hakari._util.checks`), and the stages read its groups from then on
(a folder as a `Path`: `PlanOptions.data_path`, `LoadOptions.cache_path`; the decodings
parsed: `PlanOptions.decoding_list`). The
defaults are written here (and in `LoadOptions`, `ServingOptions`) only: the CLI's
options read them from these classes. This module stays light (no engine, no numpy), so
that `hakari --help` can read the defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hakari._util import checks
from hakari.backends.options import LoadOptions
from hakari.backends.serving import ServingOptions
from hakari.results.vocab import DEFAULT_QA_MODE, Limit, QAMode
from hakari.runner.options import (
    DEFAULT_DECODINGS,
    Decoding,
    StatusHook,
    parse_decodings,
)

if TYPE_CHECKING:
    from hakari.results import TaskResult

TaskDone = Callable[[str, str, "TaskResult"], Any]
"""(model spec, task name, its `TaskResult`: baselines and every decoding) -> None:
called as each model × task's numbers are ready (a full run: when its decodings ran; a
budgeted run: at the end, when every round is done)."""


@dataclass(frozen=True)
class PlanOptions:
    """What the run evaluates and how its numbers are made. `grid_budget` is the cell
    budget of each task's template × instance grid (`--budget`), not an answer's length."""

    decodings: str | Sequence[str] = DEFAULT_DECODINGS
    templates: str | Sequence[str] = "all"
    limit: Limit = None  # N, "all" or None (each task's default)
    sample: int | None = None  # a seeded random subset of instances (`runner.sampling`)
    seed: int = 0
    alpha: float = 1.0
    n_boot: int = 1000
    qa_mode: QAMode = DEFAULT_QA_MODE
    data_dir: str | Path | None = None  # None: the task's own data (or the hub)
    grid_budget: str | float | int | None = None
    target_ci: float | None = None
    until_decided: bool = False
    # each task's prompt space gets the dimension `prompt_format` (completion, chat)
    vary_prompt_format: bool = False

    @property
    def decoding_list(self) -> tuple[Decoding, ...]:
        """The decodings asked for, parsed (`options.parse_decodings`)."""
        value = self.decodings
        return tuple(parse_decodings(value if isinstance(value, str) else list(value)))

    @property
    def data_path(self) -> Path | None:
        return checks.folder(self.data_dir, "--data-dir")


@dataclass(frozen=True)
class OutputOptions:
    """Where results go and what is shown while the run goes."""

    output_dir: str | Path | None = None
    new_run_under: str | Path | None = None  # a fresh folder <it>/<time>-<random>
    progress: bool = False  # rich progress bars (the CLI: unless --quiet or --json)
    argv: Sequence[str] | None = None  # the command line, secrets scrubbed (CLI)
    # (label, total, advanced[, cached]), else rich bars: `progress.caller_hook`
    on_progress: Callable[..., Any] | None = None
    on_task_done: TaskDone | None = None
    on_status: StatusHook | None = None  # "loading MODEL", "reading TASK": no bar


_RENAMED = {"budget": "grid_budget"}  # evaluate's keyword -> the field


@dataclass(frozen=True)
class EvalOptions:
    load: LoadOptions = field(default_factory=LoadOptions)
    plan: PlanOptions = field(default_factory=PlanOptions)
    output: OutputOptions = field(default_factory=OutputOptions)

    @classmethod
    def of(cls, base: EvalOptions | None = None, **flat: Any) -> EvalOptions:
        """`base` (or the defaults) with the flat keywords of `evaluate` set, each in its
        group; an unknown keyword is a TypeError, as for any function."""
        base = base or cls()
        groups: dict[str, dict[str, Any]] = {"load": {}, "plan": {}, "output": {}}
        for name, value in flat.items():
            key = _RENAMED.get(name, name)
            group = next((g for g, names in _FIELDS.items() if key in names), None)
            if group is None:
                raise TypeError(f"evaluate() got an unexpected keyword argument {name!r}")
            groups[group][key] = value
        if groups["load"].get("serving", ...) is None:
            groups["load"]["serving"] = ServingOptions()
        return cls(
            load=replace(base.load, **groups["load"]),
            plan=replace(base.plan, **groups["plan"]),
            output=replace(base.output, **groups["output"]),
        )


_FIELDS = {
    "load": {f.name for f in fields(LoadOptions)},
    "plan": {f.name for f in fields(PlanOptions)},
    "output": {f.name for f in fields(OutputOptions)},
}
