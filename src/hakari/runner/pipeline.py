"""The evaluation pipeline, stage by stage:

task spec → prompts (template × instance, streamed) → requests → backend (through the
response cache) → answer extraction → metrics per template → aggregation across
templates → results (results.json, samples.jsonl) → report.

`evaluate()` is the public entry point; the CLI is a thin layer over it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hakari.backends.base import Backend, check_backend
from hakari.backends.cache import ResponseCache
from hakari.errors import HakariInputError
from hakari.results import EvalResults, library_versions
from hakari.runner import preflight
from hakari.runner.config import run_config
from hakari.runner.context import RunContext, default_factory
from hakari.runner.estimators import alpha_sweeps, cannot_estimate, check_compared_models
from hakari.runner.families import family_summaries
from hakari.runner.grids import RunGrids
from hakari.runner.leaderboard import leaderboard_views
from hakari.runner.loop import LoopState, run_loop
from hakari.runner.options import DEFAULT_MODEL, DEFAULT_TASKS, BackendFactory
from hakari.runner.plan import Plan, Schedule, check_budget_floor, make_plan, task_plan
from hakari.runner.progress import caller_hook, progress_bars
from hakari.runner.requests import check_formats_before_loading
from hakari.runner.rundir import RunWriter, open_writer
from hakari.runner.settings import EvalOptions
from hakari.tasks.families import load_tasks
from hakari.tasks.loader import Task
from hakari.tasks.space import expand_task


def evaluate(
    models: str | Sequence[str] = (DEFAULT_MODEL,),
    tasks: str | Path | Sequence[str | Path] = DEFAULT_TASKS,
    options: EvalOptions | None = None,
    *,
    backend_factory: BackendFactory | None = None,
    **flat: Any,
) -> EvalResults:
    """Evaluate every model on every task with every decoding and template.

    `options` (`EvalOptions`: load, plan and output options) says how; the flat keywords
    of `EvalOptions`' groups (`limit=4`, `n_boot=200`, `output_dir=...`, `budget="2x"`)
    may be given instead or on top of it. Everything is validated before the first model
    is loaded (options, model specs, task files, every row that will be used, the cache,
    the output folder; see `preflight`), a bad value as one `HakariInputError` naming the
    option as the CLI does. Returns the same data that `results.json` holds. With
    `output_dir` (or `new_run_under`: a fresh folder `<it>/<time>-<random>` for this run)
    the folder gets `results.json` and `samples.jsonl`, published together at the end.
    When a model fails, the models that finished are published (`results.failed` names the
    rest) and the error is raised again with a note that says what was saved.

    `serving` holds the options of the serving backends (`openai:`, `vllm:` specs):
    concurrency, timeouts and retries, parallelism. `argv` is the command line that asked
    for the run (the CLI passes it, secrets scrubbed), recorded as `config.argv`.

    `backend_factory(spec) -> Backend` replaces the built-in model loader: it is called
    once per model spec, after validation, and the backend is closed when its model is
    done. This is the public way to evaluate a custom backend.

    `on_progress(label, total, advanced[, cached])` replaces the progress bars; `on_task_done(model,
    task, {decoding: DecodingResult})` is called as each model × task's numbers are ready
    (`settings.OutputOptions`): the seams for a caller's own display.

    `qa_mode` picks the SQuAD/JSQuAD post-processing (`hakari.tasks.extract`): "first-line"
    (default) or "paper" (Appendix B exactly); it is recorded in results.json.

    `limit` evaluates the first N rows of each task; `sample` a random N rows drawn
    without replacement with `seed` (the same rows for every model, decoding and
    template; see `hakari.runner.sampling`); not both. `seed` also seeds the bootstrap.

    `budget` (the grid's cell budget, `PlanOptions.grid_budget`: "2x", a multiple of one
    template's run; "0.1", a fraction of the grid; "5000", cells), `target_ci` (stop when
    every Sharpe interval's half-width is at most this) and `until_decided` (stop when
    every pair of models differs) run part of each task's template × instance grid and
    estimate every number from it, marked as estimated (`hakari.runner.plan`). Without
    them the run is the full grid, as always.
    """
    if options is not None and not isinstance(options, EvalOptions):
        raise TypeError("options must be an EvalOptions (or give its fields as keywords)")
    options = EvalOptions.of(options, **flat)
    ctx, schedule = _prepare(models, tasks, options, backend_factory)
    out = options.output
    try:
        output_dir = Path(out.output_dir) if out.output_dir else None
        writer = open_writer(output_dir, out.new_run_under, use_cache=options.load.use_cache)
        try:
            return _run(ctx, schedule, writer)
        finally:
            if writer is not None:
                writer.release()
    finally:
        if ctx.cache is not None:
            ctx.cache.close()


def _prepare(
    models: str | Sequence[str],
    tasks: str | Path | Sequence[str | Path],
    options: EvalOptions,
    backend_factory: BackendFactory | None,
) -> tuple[RunContext, Schedule]:
    """Options → plan → every check before a model loads (`preflight`) → the run's
    context and the schedule of its rounds."""
    models = [models] if isinstance(models, str) else list(models)
    tasks = [tasks] if isinstance(tasks, str | Path) else list(tasks)
    preflight.check_options(options)
    load, asked = options.load, options.plan
    plan = make_plan(
        asked.grid_budget, asked.target_ci, asked.until_decided, n_models=len(models),
        n_boot=asked.n_boot,
    )  # fmt: skip
    decodings = asked.decoding_list
    loaded = [
        expand_task(
            task, asked.templates, data_dir=asked.data_path, vary_format=asked.vary_prompt_format
        )
        for task in load_tasks(tasks)
    ]
    preflight.check_tasks(loaded, asked, decodings)
    if plan.budgeted:
        _check_estimable(loaded)
    running = preflight.running_decodings(loaded, decodings)
    preflight.check_models(models, load, running, builtin_loader=backend_factory is None)
    check_formats_before_loading(models, loaded, load, builtin_loader=backend_factory is None)
    check_compared_models(len(models), asked.n_boot, "--model")
    if backend_factory is None:
        preflight.check_context(models, loaded, options)
    baselines = _scan_rows(loaded, options)
    preflight.check_bootstrap_memory(loaded, baselines, len(models), asked)
    plan = check_budget_floor(loaded, baselines, plan, asked)
    schedule = _schedule(plan, loaded, baselines, options)
    if backend_factory is None:
        engines = preflight.engines_together(models, load, schedule.keeps_models_open)
        backend_factory = default_factory(load, engines)
    else:
        backend_factory = _checked(backend_factory)
    cache = ResponseCache.in_dir(load.cache_path) if load.use_cache else None
    return RunContext(models, loaded, options, baselines, backend_factory, cache), schedule


def _checked(unchecked: BackendFactory) -> BackendFactory:
    """A custom factory whose backends are checked against the protocol as they load,
    before they are asked anything (`check_backend`); still called from the run loop
    alone (`runner/loop.py`)."""

    def checked(spec: str) -> Backend:
        backend = unchecked(spec)
        try:
            check_backend(backend, spec)
        except BaseException:
            backend.close()
            raise
        return backend

    return checked


def _schedule(
    plan: Plan, tasks: Sequence[Task], baselines: dict[str, preflight.Baseline],
    options: EvalOptions,
) -> Schedule:  # fmt: skip
    """Each task's plan over the instances the run evaluates, and the rounds."""
    asked = options.plan
    task_plans = {
        t.name: task_plan(t, plan, asked, baselines[t.name].positions, baselines[t.name].golds)
        for t in tasks
    }
    return Schedule.of(plan, task_plans, tasks, asked.decoding_list)


def _run(ctx: RunContext, schedule: Schedule, writer: RunWriter | None) -> EvalResults:
    """The schedule → the loop → the estimators' numbers, published; the failure policy
    (the finished models are saved) is the same for every plan."""
    plan, output = schedule.plan, ctx.options.output
    results = EvalResults(
        config=run_config(ctx.models, ctx.tasks, ctx.options, plan),
        versions=library_versions(),
        output_dir=str(writer.folder) if writer is not None else None,
    )
    grids = RunGrids(ctx, schedule)
    if writer is not None:
        ctx.write_sample = writer.write_sample
    state = LoopState()
    try:
        with progress_bars(output.progress and output.on_progress is None) as hook:
            on_progress = output.on_progress
            ctx.hook = caller_hook(on_progress) if on_progress is not None else hook
            run_loop(ctx, schedule, grids, writer, state)
    except BaseException as exc:
        save_finished(results, ctx, state, grids, writer, exc)
        raise
    finish(results, grids, ctx, ctx.models, writer)
    return results


def _check_estimable(tasks: Sequence[Task]) -> None:
    """A budgeted run can estimate every task's metrics (`estimators.cannot_estimate`)."""
    for task in tasks:
        problem = cannot_estimate(task.spec.answer_type, [str(m) for m in task.spec.metrics])
        if problem is not None:
            raise HakariInputError(
                f"{problem}; a budgeted run cannot estimate it (run the full grid)",
                file=str(task.path),
                field="--budget",
            )


def finish(
    results: EvalResults,
    grids: RunGrids,
    ctx: RunContext,
    finished: Sequence[str],
    writer: RunWriter | None,
) -> None:
    """The finished models' numbers, the comparisons between them, the task families
    pooled over their members, published."""
    grids.publish(results, finished)
    families = family_summaries(results, ctx.tasks, ctx.plan.alpha, grids.draws)
    if families is not None:
        results.families = families
    leaderboards = leaderboard_views(results, ctx.tasks, ctx.plan.alpha, grids.draws)
    if leaderboards is not None:
        results.leaderboards = leaderboards
    if len(results.models) > 1:
        results.alpha_sweep = alpha_sweeps(results)
    if writer is not None:
        writer.publish(results)


def save_finished(
    results: EvalResults,
    ctx: RunContext,
    state: LoopState,
    grids: RunGrids,
    writer: RunWriter | None,
    exc: BaseException,
) -> None:
    """The failure policy of every plan: the failed model's samples are dropped, the
    models that finished before it are published (`results.failed` names the rest), and
    a note on `exc` says what was saved, so that the CLI (or the traceback) says it."""
    models = list(ctx.models)
    failed_spec = state.running or models[-1]
    finished = state.finished(models)
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    after = "not run" if state.round_index == 0 else "not finished"
    results.failed = {failed_spec: f"failed: {reason}"} | {
        m: after for m in models[models.index(failed_spec) + 1 :]
    }
    if failed_spec in ctx.identities:  # it loaded: what became of its answers
        exc.add_note(  # (said here: the backend that failed knows no cache)
            f"the answers {failed_spec} generated so far are in the response cache: the "
            "same command goes on from them"
            if ctx.load.use_cache
            else f"this run used --no-cache, so the answers {failed_spec} generated are lost"
        )
    if writer is None:
        return
    spans = state.spans.get(failed_spec, [])
    if state.started is not None:
        spans = [*spans, (state.started, writer.mark())]
    writer.drop(spans)
    if not finished:
        writer.discard()
        exc.add_note(f"no model finished: no results were written to {writer.folder}")
        return
    try:
        finish(results, grids, ctx, finished, writer)
    except Exception as publish_exc:  # the disk or the folder failed too
        exc.add_note(f"the finished models' results could not be saved: {publish_exc}")
        return
    saved = f"the {len(finished)} model(s) that finished ({', '.join(finished)})"
    path = Path(results.output_dir or writer.folder) / "results.json"
    if path.parent != writer.folder:
        exc.add_note(
            f"{writer.folder} keeps its previous results untouched; the results of {saved} "
            f"in this run were saved beside them, to {path}"
        )
        return
    exc.add_note(
        f"results of {saved} were saved to {path}; {failed_spec} and the models after it have none"
    )


def _scan_rows(tasks: Sequence[Task], options: EvalOptions) -> dict[str, preflight.Baseline]:
    """Every task's rows checked and its baselines computed, each step said."""
    on_status = options.output.on_status
    out = {}
    for task in tasks:
        if on_status is not None:
            on_status(f"reading {task.name}: every row checked, baselines computed")
        out[task.name] = preflight.scan_rows(task, options.plan, options.plan.decoding_list)
    return out
