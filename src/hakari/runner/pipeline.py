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

from hakari.backends.base import Backend
from hakari.cache import ResponseCache
from hakari.errors import HakariInputError
from hakari.extract import DEFAULT_QA_MODE, QA_MODES, QAMode
from hakari.prompts import select_templates
from hakari.results import DecodingResult, EvalResults, ModelResult, TaskResult, library_versions
from hakari.runner.collect import SampleWriter, run_decoding
from hakari.runner.options import (
    DEFAULT_DECODINGS,
    DEFAULT_MODEL,
    DEFAULT_TASKS,
    BackendFactory,
    Decoding,
    ProgressHook,
    RunOptions,
    config_dict,
    parse_decodings,
)
from hakari.runner.progress import progress_bars
from hakari.runner.requests import resolve_chat
from hakari.runner.rundir import samples_writer
from hakari.runner.scoring import alpha_sweeps, score, task_baseline
from hakari.tasks.loader import Task, check_constraints, check_task_data, load_task
from hakari.tasks.spec import PromptFormat


def evaluate(
    models: Sequence[str] = (DEFAULT_MODEL,),
    tasks: Sequence[str | Path] = DEFAULT_TASKS,
    decodings: Sequence[str] = DEFAULT_DECODINGS,
    templates: str | Sequence[str] = "all",
    limit: int | None = None,
    alpha: float = 1.0,
    output_dir: str | Path | None = None,
    *,
    batch_size: int = 8,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    prompt_format: PromptFormat = "auto",
    data_dir: str | Path | None = None,
    dtype: str = "float32",
    device: str = "auto",
    n_boot: int = 1000,
    progress: bool = False,
    backend_factory: BackendFactory | None = None,
    qa_mode: QAMode = DEFAULT_QA_MODE,
) -> EvalResults:
    """Evaluate every model on every task with every decoding and template.

    Everything the user gave is validated (task files, data, templates, regexes) before
    the first model is loaded. Returns the same data that `results.json` holds; with
    `output_dir` the run directory gets `results.json` and `samples.jsonl`.

    `backend_factory(spec) -> Backend` replaces the built-in model loader: it is called
    once per model spec, after validation, and the backend is closed when its model is
    done. This is the public way to evaluate a custom backend.

    `qa_mode` picks the SQuAD/JSQuAD post-processing (`hakari.extract`): "first-line"
    (default) or "paper" (Appendix B exactly); it is recorded in results.json.
    """
    if qa_mode not in QA_MODES:
        raise HakariInputError(
            f"unknown QA mode {qa_mode!r} (choose from {', '.join(QA_MODES)})", field="--qa-mode"
        )
    if limit is not None and limit < 1:
        raise HakariInputError("--limit must be at least 1", field="--limit")
    opts = RunOptions(
        templates=templates,
        limit=limit,
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
    )
    decoding_list = parse_decodings(list(decodings))
    loaded = [load_task(t) for t in tasks]
    for task in loaded:
        check_task_data(task, data_dir=opts.data_dir)
        select_templates(task.spec, templates)
        if "constrained" in decoding_list:
            check_constraints(task)
    if not models:
        raise HakariInputError("no model given", field="--model")
    factory = backend_factory or default_factory(opts)
    out_dir = Path(output_dir) if output_dir else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    results = EvalResults(
        config=config_dict(models, loaded, decoding_list, opts),
        versions=library_versions(),
        output_dir=str(out_dir) if out_dir else None,
    )
    baselines = {task.name: task_baseline(task, opts) for task in loaded}
    cache = ResponseCache.in_dir(opts.cache_dir) if opts.use_cache else None
    samples_path = out_dir / "samples.jsonl" if out_dir else None
    try:
        with progress_bars(opts.progress) as hook, samples_writer(samples_path) as write_sample:
            for model_spec in models:
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
                    )
                finally:
                    backend.close()
    finally:
        if cache is not None:
            cache.close()
    if len(models) > 1:
        results.alpha_sweep = alpha_sweeps(results)
    if out_dir is not None:
        results.write(out_dir / "results.json")
    return results


def default_factory(opts: RunOptions) -> BackendFactory:
    def factory(spec: str) -> Backend:
        from hakari.models import load_backend

        return load_backend(
            spec,
            dtype=opts.dtype,
            device=opts.device,
            prompt_format=opts.prompt_format,
            cache_dir=opts.cache_dir,
        )

    return factory


def evaluate_model(
    model_spec: str,
    backend: Backend,
    tasks: Sequence[Task],
    baselines: dict[str, tuple[int, dict[str, float]]],
    decodings: Sequence[Decoding],
    opts: RunOptions,
    cache: ResponseCache | None,
    hook: ProgressHook,
    write_sample: SampleWriter,
) -> ModelResult:
    identity = {k: str(v) for k, v in vars(backend.identity).items()}
    result = ModelResult(identity=identity)
    use_chat = resolve_chat(backend, opts.prompt_format)
    for task in tasks:
        spec = task.spec
        n_rows, chance = baselines[task.name]
        task_result = TaskResult(
            language=spec.language,
            n_instances=n_rows,
            metrics=[str(m) for m in spec.metrics],
            chance=chance,
        )
        for decoding in decodings:
            label = f"{model_spec} · {spec.name} · {decoding}"
            if decoding == "loglik" and spec.answer_type != "label":
                task_result.decodings[decoding] = DecodingResult(
                    skipped="loglik applies to label tasks only"
                )
                continue
            started = time.perf_counter()
            collected, generated, cached = run_decoding(
                task, decoding, backend, opts, cache, use_chat, n_rows, label, hook, write_sample
            )
            dec = score(task, collected, opts)
            dec.generated, dec.cached = generated, cached
            dec.wall_s = round(time.perf_counter() - started, 3)
            task_result.decodings[decoding] = dec
        result.tasks[spec.name] = task_result
    return result
