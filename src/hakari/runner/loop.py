"""The one run loop: rounds → models → tasks → passes of decodings.

Every plan runs through it (the full grid is one round of every cell; a budget one round
of a prefix of each task's design; a sequential run rounds of growing prefixes). A model's
backend comes from the factory here and only here (`Backends`), **once per model and
run**, whatever the plan: a plan of one round closes each model's backend when its round
is done, so one model is in memory at a time; a sequential plan keeps every model's open
until the run ends, so its rounds never load a model twice (the memory bound: every
model of the run at once; vLLM engines split the device's memory between them,
`context.default_factory`). Every pass goes through `collect.run_decodings` here and
only here; the answers go to their cells in `grids.RunGrids`, which, after each round,
closes the task × decodings that are done.

When a model fails (or the run is interrupted), `LoopState` says which model it was and
which finished before it, and where each model's samples lie in the samples file, so that
`pipeline` saves the finished models and drops the failed one's samples, whatever the plan.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hakari.backends.base import Backend
from hakari.results.vocab import PromptFormat
from hakari.runner.collect import Pass, run_decodings
from hakari.runner.context import ModelContext, RunContext
from hakari.runner.grids import RunGrids
from hakari.runner.plan import Schedule
from hakari.runner.requests import check_template_formats, resolve_chat, task_prompt_format
from hakari.runner.rundir import Mark, RunWriter

Span = tuple[Mark, Mark]


@dataclass
class LoopState:
    """Where the loop is: the model running now, the round, and the spans of the samples
    file each model wrote (what to drop when it fails)."""

    round_index: int = 0
    running: str | None = None
    started: Mark | None = None
    spans: dict[str, list[Span]] = field(default_factory=dict)

    def finished(self, models: list[str]) -> list[str]:
        """The models that ran every round so far: all of them, or, when one failed, the
        ones before it in this round."""
        if self.running is None:
            return list(models)
        return models[: models.index(self.running)]


class Backends:
    """The one place a model's backend is made (`ctx.factory`) and closed: each model
    once per run. `keep_open`: every model's backend stays open across the rounds (a
    sequential plan), else each is closed when its round is done."""

    def __init__(self, ctx: RunContext, keep_open: bool) -> None:
        self.ctx = ctx
        self.keep_open = keep_open
        self._open: dict[str, Backend] = {}

    @contextmanager
    def use(self, model: str) -> Iterator[Backend]:
        backend = self._open.pop(model, None)
        if backend is None:
            self.ctx.status(f"loading {model}")
            backend = self.ctx.factory(model)
        try:
            yield backend
        except BaseException:
            backend.close()
            raise
        if self.keep_open:
            self._open[model] = backend
        else:
            backend.close()

    def close(self) -> None:
        """Close every backend still open (the run ended, or failed)."""
        while self._open:
            self._open.popitem()[1].close()


def run_loop(
    ctx: RunContext,
    schedule: Schedule,
    grids: RunGrids,
    writer: RunWriter | None,
    state: LoopState,
) -> None:
    """Run the plan's rounds; `state` tells, if this raises, what had finished."""
    backends = Backends(ctx, keep_open=schedule.keeps_models_open)
    try:
        for round_index in range(schedule.n_rounds):
            if not schedule.open():
                break
            state.round_index = round_index
            for model in ctx.models:
                state.running = model
                state.started = writer.mark() if writer is not None else None
                with backends.use(model) as backend:
                    ctx.identities[model] = _identity(backend, ctx.load.prompt_format)
                    _model_round(ctx, schedule, grids, model, backend, round_index)
                    record = getattr(backend, "serving_record", None)
                    if callable(record):
                        ctx.serving[model] = record()
                if writer is not None and state.started is not None:
                    state.spans.setdefault(model, []).append((state.started, writer.mark()))
            state.running = None
            grids.round_ran(round_index)
    finally:
        backends.close()


def _identity(backend: Backend, run_format: PromptFormat) -> dict[str, str]:
    """The model's identity as results.json records it; its `prompt_format` is how the
    run's prompts went in to it, whatever the backend says (a task with a format of its
    own, a jaster set's plain text: `config.task_prompt_formats`)."""
    identity = {k: str(v) for k, v in vars(backend.identity).items()}
    identity["prompt_format"] = "chat" if resolve_chat(backend, run_format) else "completion"
    return identity


def _model_round(
    ctx: RunContext,
    schedule: Schedule,
    grids: RunGrids,
    model: str,
    backend: Backend,
    round_index: int,
) -> None:
    """One model's passes of every task in this round, their answers in the model's
    cells, each task's handed on as it finishes (a full run scores it at once)."""
    for task in ctx.tasks:
        prompt_format = task_prompt_format(task.spec, ctx.load.prompt_format)
        check_template_formats(task, backend)
        on_model = ModelContext(ctx, backend, resolve_chat(backend, prompt_format))
        for decodings, cells in schedule.passes(task, round_index):
            label = schedule.label(model, task.name, decodings, round_index)
            answers = grids.answers(model, task.name, decodings)
            run_decodings(Pass(task, decodings, cells, answers, label), on_model)
        grids.task_ran(model, task, round_index)
