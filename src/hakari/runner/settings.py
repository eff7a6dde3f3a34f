"""`EvalOptions`: everything `evaluate` is asked, as one typed record in three groups —
how models are loaded and asked (`LoadOptions`), what the run evaluates and how its
numbers are made (`PlanOptions`), where its results go (`OutputOptions`).

`evaluate(models, tasks, options)` takes it; `evaluate(models, tasks, limit=4, ...)`
(the flat keywords of earlier versions) builds it with `EvalOptions.of`. The stages read
the flat `RunOptions` derived from it (`run_options`), and results.json's `config` is
derived from that. Every value is checked by the one validation layer
(`preflight.check_options`, `plan.make_plan` through `hakari._util.checks`), so the
Python API gives the same one-line `HakariInputError` as the CLI.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from hakari.backends.base import PromptFormat
from hakari.backends.cpu import check_threads
from hakari.backends.serving import ServingOptions
from hakari.errors import HakariInputError
from hakari.results import TaskResult
from hakari.runner.options import DEFAULT_DECODINGS, RunOptions, StatusHook
from hakari.tasks.extract import DEFAULT_QA_MODE, QAMode

TaskDone = Callable[[str, str, TaskResult], Any]
"""(model spec, task name, its `TaskResult`: baselines and every decoding) -> None:
called as each model × task's numbers are ready (a full run: when its decodings ran; a
budgeted run: at the end, when every round is done)."""


@dataclass(frozen=True)
class LoadOptions:
    """How models are loaded and asked (`--batch-size` ... `--device`, the serving
    options)."""

    batch_size: int | None = None  # None: the backend's own
    cache_dir: str | Path | None = None
    use_cache: bool = True
    prompt_format: PromptFormat = "auto"
    dtype: str | None = None  # None: each backend's default
    device: str = "auto"
    threads: int | None = None  # torch's CPU threads of in-process models; None: the rule
    serving: ServingOptions = field(default_factory=ServingOptions)


@dataclass(frozen=True)
class PlanOptions:
    """What the run evaluates and how its numbers are made. `grid_budget` is the cell
    budget of each task's template × instance grid (`--budget`), not an answer's length."""

    decodings: str | Sequence[str] = DEFAULT_DECODINGS
    templates: str | Sequence[str] = "all"
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    alpha: float = 1.0
    n_boot: int = 1000
    qa_mode: QAMode = DEFAULT_QA_MODE
    data_dir: str | Path | None = None
    grid_budget: str | float | int | None = None
    target_ci: float | None = None
    until_decided: bool = False


@dataclass(frozen=True)
class OutputOptions:
    """Where results go and what is shown while the run goes."""

    output_dir: str | Path | None = None
    new_run_under: str | Path | None = None  # a fresh folder <it>/<time>-<random>
    progress: bool = False
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
        return cls(
            load=replace(base.load, **groups["load"]),
            plan=replace(base.plan, **groups["plan"]),
            output=replace(base.output, **groups["output"]),
        )

    def run_options(self) -> RunOptions:
        """The flat options every stage reads."""
        load, plan, output = self.load, self.plan, self.output
        if not isinstance(load.serving, ServingOptions):
            raise HakariInputError("must be a ServingOptions", field="serving")
        return RunOptions(
            templates=plan.templates,
            limit=plan.limit,
            sample=plan.sample,
            seed=plan.seed,
            alpha=plan.alpha,
            batch_size=load.batch_size,
            cache_dir=_path(load.cache_dir, "--cache-dir"),
            use_cache=load.use_cache,
            prompt_format=load.prompt_format,
            data_dir=_path(plan.data_dir, "--data-dir"),
            dtype=load.dtype,
            device=load.device,
            threads=check_threads(load.threads),  # None: the rule of `backends.cpu`
            n_boot=plan.n_boot,
            progress=output.progress,
            qa_mode=plan.qa_mode,
            serving=load.serving,
            argv=tuple(output.argv) if output.argv is not None else None,
        )


_FIELDS = {
    "load": {f.name for f in fields(LoadOptions)},
    "plan": {f.name for f in fields(PlanOptions)},
    "output": {f.name for f in fields(OutputOptions)},
}


def _path(value: object, option: str) -> Path | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str | Path):
        raise HakariInputError(f"must be a folder path (got {value!r:.40})", field=option)
    return Path(value)
