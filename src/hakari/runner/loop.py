"""The one run loop: rounds → models → tasks → passes of decodings.

Every plan runs through it (the full grid is one round of every cell; a budget one round
of a prefix of each task's design; a sequential run rounds of growing prefixes). A model's
backend comes from the factory here and only here, and is closed when the model's round
is done (a run of one model keeps it for all its rounds); every pass goes through
`collect.run_decodings` here and only here; the answers go to their cells in
`grids.RunGrids`, which, after each round, closes the task × decodings that are done.

When a model fails (or the run is interrupted), `LoopState` says which model it was and
which finished before it, and where each model's samples lie in the samples file, so that
`pipeline` saves the finished models and drops the failed one's samples, whatever the plan.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hakari.backends.base import Backend
from hakari.runner.collect import run_decodings
from hakari.runner.context import RunContext
from hakari.runner.grids import RunGrids
from hakari.runner.plan import Schedule
from hakari.runner.requests import resolve_chat
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
    """The one place a model's backend is made (`ctx.factory`) and closed."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self._kept: Backend | None = None

    @contextmanager
    def use(self, model: str) -> Iterator[Backend]:
        keep = len(self.ctx.models) == 1  # one model: loaded once for all rounds
        if self._kept is None:
            self.ctx.status(f"loading {model}")
        backend = self._kept if self._kept is not None else self.ctx.factory(model)
        try:
            yield backend
        except BaseException:
            self._kept = None
            backend.close()
            raise
        if keep:
            self._kept = backend
        else:
            backend.close()

    def close(self) -> None:
        if self._kept is not None:
            kept, self._kept = self._kept, None
            kept.close()


def run_loop(
    ctx: RunContext,
    schedule: Schedule,
    grids: RunGrids,
    writer: RunWriter | None,
    state: LoopState,
) -> None:
    """Run the plan's rounds; `state` tells, if this raises, what had finished."""
    backends = Backends(ctx)
    try:
        for round_index in range(schedule.n_rounds):
            if not schedule.open():
                break
            state.round_index = round_index
            for model in ctx.models:
                state.running = model
                state.started = writer.mark() if writer is not None else None
                with backends.use(model) as backend:
                    ctx.identities[model] = {k: str(v) for k, v in vars(backend.identity).items()}
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
    use_chat = resolve_chat(backend, ctx.opts.prompt_format)
    for task in ctx.tasks:
        for decodings, cells in schedule.passes(task, round_index):
            run_decodings(
                task,
                decodings,
                backend,
                ctx.opts,
                ctx.cache,
                use_chat,
                schedule.label(model, task.name, decodings, round_index),
                ctx.hook,
                ctx.write_sample,
                cells=cells,
                answers=grids.answers(model, task.name, decodings),
            )
        grids.task_ran(model, task, round_index)
