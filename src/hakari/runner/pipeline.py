"""The evaluation pipeline, stage by stage:

task spec → prompts (template × instance, streamed) → requests → backend (through the
response cache) → answer extraction → metrics per template → aggregation across
templates → results (results.json, samples.jsonl) → report.

`evaluate()` is the public entry point; the CLI is a thin layer over it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from hakari.aggregate import BootstrapResult
from hakari.backends import registry
from hakari.backends.base import Backend, PromptFormat
from hakari.backends.cache import ResponseCache
from hakari.backends.serving import ServingOptions
from hakari.results import DecodingResult, EvalResults, ModelResult, library_versions
from hakari.runner import budgeted, preflight
from hakari.runner.aggregation import (
    BootstrapStore,
    alpha_sweeps,
    model_groups,
    paired_comparisons,
    score,
)
from hakari.runner.collect import DecodingRun, SampleWriter, run_decodings
from hakari.runner.options import (
    DEFAULT_DECODINGS,
    DEFAULT_MODEL,
    DEFAULT_TASKS,
    BackendFactory,
    Decoding,
    ProgressHook,
    RunOptions,
    StatusHook,
    TaskDoneHook,
    parse_decodings,
    run_config,
    skip_reason,
)
from hakari.runner.progress import progress_bars
from hakari.runner.requests import resolve_chat
from hakari.runner.rundir import RunWriter, new_run_dir
from hakari.tasks.extract import DEFAULT_QA_MODE, QAMode
from hakari.tasks.loader import Task, load_task


def evaluate(
    models: Sequence[str] = (DEFAULT_MODEL,),
    tasks: Sequence[str | Path] = DEFAULT_TASKS,
    decodings: Sequence[str] = DEFAULT_DECODINGS,
    templates: str | Sequence[str] = "all",
    limit: int | None = None,
    alpha: float = 1.0,
    output_dir: str | Path | None = None,
    *,
    batch_size: int | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    prompt_format: PromptFormat = "auto",
    data_dir: str | Path | None = None,
    dtype: str | None = None,
    device: str = "auto",
    n_boot: int = 1000,
    sample: int | None = None,
    seed: int = 0,
    progress: bool = False,
    backend_factory: BackendFactory | None = None,
    qa_mode: QAMode = DEFAULT_QA_MODE,
    new_run_under: str | Path | None = None,
    serving: ServingOptions | None = None,
    argv: Sequence[str] | None = None,
    budget: str | float | int | None = None,
    target_ci: float | None = None,
    until_decided: bool = False,
    on_task_done: TaskDoneHook | None = None,
    on_status: StatusHook | None = None,
) -> EvalResults:
    """Evaluate every model on every task with every decoding and template.

    Everything the user gave is validated before the first model is loaded (options,
    model specs, task files, every row that will be used, the cache, the output folder;
    see `preflight`). Returns the same data that `results.json` holds. With `output_dir`
    (or `new_run_under`: a fresh folder `<it>/<time>-<random>` for this run) the folder
    gets `results.json` and `samples.jsonl`, published together at the end. When a model
    fails, the models that finished are published (`results.failed` names the rest) and
    the error is raised again with a note that says what was saved.

    `serving` holds the options of the serving backends (`openai:`, `vllm:` specs):
    concurrency, timeouts and retries, parallelism.

    `argv` is the command line that asked for the run (the CLI passes it, secrets
    scrubbed); recorded as `config.argv` so reports show the command as typed.

    `backend_factory(spec) -> Backend` replaces the built-in model loader: it is called
    once per model spec, after validation, and the backend is closed when its model is
    done. This is the public way to evaluate a custom backend.

    `qa_mode` picks the SQuAD/JSQuAD post-processing (`hakari.tasks.extract`): "first-line"
    (default) or "paper" (Appendix B exactly); it is recorded in results.json.

    `limit` evaluates the first N rows of each task; `sample` a random N rows drawn
    without replacement with `seed` (the same rows for every model, decoding and
    template; see `hakari.runner.sampling`); not both. `seed` also seeds the bootstrap.

    `budget` ("2x": a multiple of one template's run; "0.1": a fraction of the grid;
    "5000": cells), `target_ci` (stop when every Sharpe interval's half-width is at most
    this) and `until_decided` (stop when every pair of models differs) run part of each
    task's template × instance grid and estimate every number from it, marked as
    estimated (`hakari.runner.budgeted`). Without them the run is the full grid, as always.

    `on_task_done(model_spec, task_name, task_result)` is called as soon as a model has
    finished a task (a full run; a budgeted run's estimates exist only at its end);
    `on_status(text)` says what the run does in the steps without a progress bar.
    """
    opts = RunOptions(
        templates=templates,
        limit=limit,
        sample=sample,
        seed=seed,
        alpha=alpha,
        batch_size=batch_size,
        cache_dir=Path(cache_dir) if cache_dir else None,
        use_cache=use_cache,
        prompt_format=prompt_format,
        data_dir=Path(data_dir) if data_dir else None,
        dtype=dtype,
        device=device,
        n_boot=n_boot,
        progress=progress,
        qa_mode=qa_mode,
        serving=serving or ServingOptions(),
        argv=tuple(argv) if argv is not None else None,
        on_task_done=on_task_done,
        on_status=on_status,
    )
    preflight.check_options(opts)
    plan = budgeted.make_plan(
        budget, target_ci, until_decided, n_models=len(models), n_boot=opts.n_boot
    )
    decoding_list = parse_decodings(list(decodings))
    loaded = [load_task(t) for t in tasks]
    preflight.check_tasks(loaded, opts, decoding_list)
    if plan.active:
        for task in loaded:
            budgeted.check_task_fits(task)
    preflight.check_models(
        models,
        opts,
        preflight.running_decodings(loaded, decoding_list),
        builtin_loader=backend_factory is None,
    )
    baselines = {}
    for task in loaded:
        _status(opts, f"reading {task.name}: every row checked, baselines computed")
        baselines[task.name] = preflight.scan_rows(task, opts, decoding_list)
    preflight.check_bootstrap_memory(loaded, baselines, len(models), opts, decoding_list)
    factory = backend_factory or default_factory(opts)
    cache = ResponseCache.in_dir(opts.cache_dir) if opts.use_cache else None
    try:
        out_dir = Path(output_dir) if output_dir else None
        created = out_dir is None and new_run_under is not None
        if created:
            out_dir = new_run_dir(Path(new_run_under))  # type: ignore[arg-type]
        writer = (
            RunWriter(out_dir, created=created, recovery=_recovery(opts))
            if out_dir is not None
            else None
        )
    except BaseException:
        if cache is not None:
            cache.close()
        raise
    try:
        return _run(
            models, loaded, baselines, decoding_list, opts, plan, factory, cache, writer, out_dir
        )
    finally:
        if writer is not None:
            writer.release()


def _recovery(opts: RunOptions) -> str:
    """What a user can do when the run folder cannot be written at the end."""
    if not opts.use_cache:
        return "this run used --no-cache, so its answers are lost"
    return (
        "every answer is in the response cache: run the same command again once the "
        "folder can be written (or with another --output) to publish them without "
        "generating them again"
    )


def _run(
    models: Sequence[str],
    loaded: list[Task],
    baselines: dict[str, preflight.Baseline],
    decoding_list: list[Decoding],
    opts: RunOptions,
    plan: budgeted.Plan,
    factory: BackendFactory,
    cache: ResponseCache | None,
    writer: RunWriter | None,
    out_dir: Path | None,
) -> EvalResults:
    results = EvalResults(
        config=run_config(models, loaded, decoding_list, opts),
        versions=library_versions(),
        output_dir=str(out_dir) if out_dir else None,
    )
    write_sample = writer.write_sample if writer is not None else _discard
    if plan.active:
        results.config.budget = str(plan.budget) if plan.budget else None
        results.config.target_ci = plan.target_ci
        results.config.until_decided = plan.until_decided
        _run_budgeted(
            results,
            models,
            loaded,
            decoding_list,
            plan,
            opts,
            factory,
            cache,
            writer,
            write_sample,
            baselines,
        )
        return results
    bootstraps: BootstrapStore = {}
    try:
        with progress_bars(opts.progress) as hook:
            for model_spec in models:
                mark = writer.mark() if writer is not None else None
                try:
                    _status(opts, f"loading {model_spec}")
                    backend = factory(model_spec)
                    try:
                        results.models[model_spec] = evaluate_model(
                            model_spec,
                            backend,
                            loaded,
                            baselines,
                            decoding_list,
                            opts,
                            cache,
                            hook,
                            write_sample,
                            bootstraps,
                        )
                    finally:
                        backend.close()
                except BaseException as exc:
                    if writer is not None and mark is not None:
                        writer.roll_back(mark)
                    _save_finished(results, models, model_spec, exc, writer, bootstraps)
                    raise
    finally:
        if cache is not None:
            cache.close()
    _finish(results, writer, bootstraps)
    return results


def _status(opts: RunOptions, text: str) -> None:
    if opts.on_status is not None:
        opts.on_status(text)


def _discard(record: dict[str, object]) -> None:
    return None


def _run_budgeted(
    results: EvalResults,
    models: Sequence[str],
    tasks: Sequence[Task],
    decodings: Sequence[Decoding],
    plan: budgeted.Plan,
    opts: RunOptions,
    factory: BackendFactory,
    cache: ResponseCache | None,
    writer: RunWriter | None,
    write_sample: SampleWriter,
    baselines: dict[str, preflight.Baseline],
) -> None:
    """A budgeted or sequential run: all models round by round (`budgeted`); published
    whole or not at all (the cache keeps every answer, so the same command resumes)."""
    try:
        try:
            with progress_bars(opts.progress) as hook:
                results.models, outcomes = budgeted.run_budgeted(
                    models,
                    tasks,
                    decodings,
                    plan,
                    opts,
                    factory,
                    cache,
                    hook,
                    write_sample,
                    baselines,
                )
        finally:
            if cache is not None:
                cache.close()
    except BaseException as exc:
        if writer is not None:
            writer.discard()
            exc.add_note(
                "nothing was published; the same command resumes from the response cache "
                "(every answer already generated is kept)"
            )
        raise
    if len(results.models) > 1:
        results.alpha_sweep = alpha_sweeps(results)
        if opts.n_boot > 0:
            results.paired = budgeted.paired_items(outcomes) or None
            results.model_groups = budgeted.group_items(outcomes) or None
    if writer is not None:
        writer.publish(results)


def _finish(results: EvalResults, writer: RunWriter | None, bootstraps: BootstrapStore) -> None:
    if len(results.models) > 1:
        results.alpha_sweep = alpha_sweeps(results)
        # a model that failed part-way kept some bootstraps: compare finished models only
        finished = {
            key: {
                metric: {m: boot for m, boot in per_model.items() if m in results.models}
                for metric, per_model in per_metric.items()
            }
            for key, per_metric in bootstraps.items()
        }
        results.paired = paired_comparisons(finished) or None
        groups = model_groups(finished)
        if groups:
            results.model_groups = groups
    if writer is not None:
        writer.publish(results)


def _save_finished(
    results: EvalResults,
    models: Sequence[str],
    failed_spec: str,
    exc: BaseException,
    writer: RunWriter | None,
    bootstraps: BootstrapStore,
) -> None:
    """Publish the models that finished before `failed_spec` failed; note on `exc` what
    was saved, so that the CLI (or the traceback) says it."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    not_run = models[models.index(failed_spec) + 1 :]
    results.failed = {failed_spec: f"failed: {reason}"} | {m: "not run" for m in not_run}
    finished = list(results.models)
    if writer is None:
        return
    if not finished:
        writer.discard()
        exc.add_note(f"no model finished: no results were written to {writer.folder}")
        return
    try:
        _finish(results, writer, bootstraps)
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


def default_factory(opts: RunOptions) -> BackendFactory:
    def factory(spec: str) -> Backend:
        return registry.load_backend(
            spec,
            dtype=opts.dtype,
            device=opts.device,
            prompt_format=opts.prompt_format,
            cache_dir=opts.cache_dir,
            serving=opts.serving,
        )

    return factory


def _passes(answer_type: str, decodings: Sequence[Decoding]) -> list[tuple[Decoding, ...]]:
    """The decodings of a task that apply to it, in passes over its prompts: the
    generating ones together (they share each prompt's prefill), loglik on its own."""
    applying = [d for d in decodings if skip_reason(d, answer_type) is None]
    generating = tuple(d for d in applying if d != "loglik")
    passes: list[tuple[Decoding, ...]] = [generating] if generating else []
    if "loglik" in applying:
        passes.append(("loglik",))
    return passes


def evaluate_model(
    model_spec: str,
    backend: Backend,
    tasks: Sequence[Task],
    baselines: dict[str, preflight.Baseline],
    decodings: Sequence[Decoding],
    opts: RunOptions,
    cache: ResponseCache | None,
    hook: ProgressHook,
    write_sample: SampleWriter,
    bootstraps: BootstrapStore | None = None,
) -> ModelResult:
    identity = {k: str(v) for k, v in vars(backend.identity).items()}
    result = ModelResult(identity=identity)
    use_chat = resolve_chat(backend, opts.prompt_format)
    for task in tasks:
        spec = task.spec
        n_rows = baselines[task.name].n_rows
        task_result = baselines[task.name].task_result(spec)
        runs: dict[Decoding, DecodingRun] = {}
        for together in _passes(spec.answer_type, decodings):
            label = f"{model_spec} · {spec.name} · {'+'.join(together)}"
            runs |= run_decodings(
                task, together, backend, opts, cache, use_chat, n_rows, label, hook, write_sample
            )
        for decoding in decodings:
            skipped = skip_reason(decoding, spec.answer_type)
            if skipped is not None:
                task_result.decodings[decoding] = DecodingResult(skipped=skipped)
                continue
            run = runs[decoding]
            started = time.perf_counter()
            collected = run.collected
            kept: dict[str, BootstrapResult] = {}
            dec = score(task, collected, opts, kept)
            if bootstraps is not None:
                per_metric = bootstraps.setdefault((spec.name, decoding), {})
                for metric, boot in kept.items():
                    per_metric.setdefault(metric, {})[model_spec] = boot
            dec.generated, dec.cached = run.generated, run.cached
            if collected.unencodable_answers:  # written only when there are some
                dec.unencodable_answers = collected.unencodable_answers
            if collected.unreadable_cache_rows:
                dec.unreadable_cache_rows = collected.unreadable_cache_rows
            if collected.refusals:
                dec.refusals = collected.refusals
            if collected.redacted_secrets:
                dec.redacted_secrets = collected.redacted_secrets
            if decoding == "constrained":
                dec.constraint_misses = collected.constraint_misses
            dec.wall_s = round(run.wall_s + time.perf_counter() - started, 3)
            task_result.decodings[decoding] = dec
        result.tasks[spec.name] = task_result
        if opts.on_task_done is not None:
            opts.on_task_done(model_spec, spec.name, task_result)
    return result
