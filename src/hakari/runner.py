"""The evaluation pipeline, stage by stage:

task spec → prompts (template × instance, streamed) → requests → backend (through the
response cache) → answer extraction → metrics per template → aggregation across
templates → results (results.json, samples.jsonl) → report.

`evaluate()` is the public entry point; the CLI is a thin layer over it.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, cast

from hakari import aggregate as agg
from hakari import metrics
from hakari.backends.base import (
    Backend,
    GenerationRequest,
    LoglikRequest,
    Message,
)
from hakari.cache import ResponseCache, cached_generate, cached_loglik
from hakari.errors import HakariInputError
from hakari.extract import Extraction, extract_answer
from hakari.prompts import RenderedPrompt, iter_chunks, select_templates
from hakari.results import (
    DecodingResult,
    EvalResults,
    ModelResult,
    TaskResult,
    TemplateResult,
    library_versions,
)
from hakari.tasks.data import iter_rows
from hakari.tasks.loader import Task, check_constraints, check_task_data, load_task
from hakari.tasks.spec import PromptFormat

Decoding = Literal["greedy", "constrained", "loglik"]
DECODINGS: tuple[Decoding, ...] = ("greedy", "constrained", "loglik")
DEFAULT_MODEL = "smollm2-135m"
DEFAULT_TASKS = ("demo_sentiment_en", "demo_sentiment_ja")
DEFAULT_DECODINGS: tuple[Decoding, ...] = ("greedy", "constrained")
CHUNK_ROWS = 64  # instances per streamed chunk (× templates = prompts per chunk)

BackendFactory = Callable[[str], Backend]
ProgressHook = Callable[[str, int, int], Any]  # (label, total, advanced) -> None


@dataclass
class RunOptions:
    templates: str | Sequence[str] = "all"
    limit: int | None = None
    alpha: float = 1.0
    batch_size: int = 8
    cache_dir: Path | None = None
    use_cache: bool = True
    prompt_format: PromptFormat = "auto"
    data_dir: Path | None = None
    dtype: str = "float32"
    device: str = "auto"
    n_boot: int = 1000
    seed: int = 0
    progress: bool = True


@dataclass
class _Collected:
    """Per-template predictions for one task × decoding (golds are shared)."""

    golds: list[Any] = field(default_factory=list)
    predictions: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    fallbacks: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def parse_decodings(value: str | Sequence[str]) -> list[Decoding]:
    names = value.split(",") if isinstance(value, str) else list(value)
    out: list[Decoding] = []
    for name in (n.strip() for n in names):
        if name == "all":
            return list(DECODINGS)
        if name not in DECODINGS:
            raise HakariInputError(
                f"unknown decoding {name!r} (choose from greedy, constrained, loglik, all)",
                field="--decoding",
            )
        out.append(cast(Decoding, name))
    return out


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
) -> EvalResults:
    """Evaluate every model on every task with every decoding and template.

    Everything the user gave is validated (task files, data, templates, regexes) before
    the first model is loaded. Returns the same data that `results.json` holds; with
    `output_dir` the run directory gets `results.json` and `samples.jsonl`.
    """
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
    factory = backend_factory or _default_factory(opts)
    out_dir = Path(output_dir) if output_dir else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    results = EvalResults(
        config=_config_dict(models, loaded, decoding_list, opts),
        versions=library_versions(),
        output_dir=str(out_dir) if out_dir else None,
    )
    baselines = {task.name: _task_baseline(task, opts) for task in loaded}
    cache = ResponseCache.in_dir(opts.cache_dir) if opts.use_cache else None
    samples_path = out_dir / "samples.jsonl" if out_dir else None
    try:
        with _progress(opts.progress) as hook, _samples_writer(samples_path) as write_sample:
            for model_spec in models:
                backend = factory(model_spec)
                try:
                    results.models[model_spec] = _evaluate_model(
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
        results.alpha_sweep = _alpha_sweeps(results)
    if out_dir is not None:
        results.write(out_dir / "results.json")
    return results


def _default_factory(opts: RunOptions) -> BackendFactory:
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


def _config_dict(
    models: Sequence[str], tasks: Sequence[Task], decodings: Sequence[str], opts: RunOptions
) -> dict[str, Any]:
    return {
        "models": list(models),
        "tasks": [t.name for t in tasks],
        "task_files": {t.name: str(t.path) for t in tasks},
        "decodings": list(decodings),
        "templates": opts.templates if isinstance(opts.templates, str) else list(opts.templates),
        "limit": opts.limit,
        "alpha": opts.alpha,
        "std": "population (ddof=0) across templates",
        "em_f1": "SQuAD v1.1 (en) / JGLUE JSQuAD char-level (ja) scorers, golds NFKC like outputs",
        "batch_size": opts.batch_size,
        "prompt_format": opts.prompt_format,
        "dtype": opts.dtype,
        "device": opts.device,
        "n_boot": opts.n_boot,
        "data_dir": str(opts.data_dir) if opts.data_dir else None,
        "started": datetime.now().isoformat(timespec="seconds"),
    }


def _evaluate_model(
    model_spec: str,
    backend: Backend,
    tasks: Sequence[Task],
    baselines: dict[str, tuple[int, dict[str, float]]],
    decodings: Sequence[Decoding],
    opts: RunOptions,
    cache: ResponseCache | None,
    hook: ProgressHook,
    write_sample: Callable[[dict[str, Any]], None],
) -> ModelResult:
    identity = {k: str(v) for k, v in vars(backend.identity).items()}
    result = ModelResult(identity=identity)
    use_chat = _resolve_chat(backend, opts.prompt_format)
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
            collected, generated, cached = _run_decoding(
                task, decoding, backend, opts, cache, use_chat, n_rows, label, hook, write_sample
            )
            dec = _score(task, collected, opts)
            dec.generated, dec.cached = generated, cached
            dec.wall_s = round(time.perf_counter() - started, 3)
            task_result.decodings[decoding] = dec
        result.tasks[spec.name] = task_result
    return result


def _rows(task: Task, opts: RunOptions) -> Iterator[dict[str, Any]]:
    return iter_rows(task.spec, data_dir=opts.data_dir, task_dir=task.task_dir, limit=opts.limit)


def _resolve_chat(backend: Backend, prompt_format: PromptFormat) -> bool:
    supports_chat = bool(getattr(backend, "supports_chat", False))
    if prompt_format == "chat" and not supports_chat:
        raise HakariInputError(
            f"--prompt-format chat: model {backend.identity.name} has no chat template",
            field="--prompt-format",
        )
    return prompt_format == "chat" or (prompt_format == "auto" and supports_chat)


def _messages(text: str, use_chat: bool) -> tuple[Message, ...] | None:
    return (Message("user", text),) if use_chat else None


def _run_decoding(
    task: Task,
    decoding: Decoding,
    backend: Backend,
    opts: RunOptions,
    cache: ResponseCache | None,
    use_chat: bool,
    n_rows: int,
    label: str,
    hook: ProgressHook,
    write_sample: Callable[[dict[str, Any]], None],
) -> tuple[_Collected, int, int]:
    spec = task.spec
    templates = select_templates(spec, opts.templates)
    collected = _Collected()
    generated = cached = 0
    total = n_rows * len(templates)
    hook(label, total, 0)
    compiled: dict[str, re.Pattern[str]] = {}
    for chunk in iter_chunks(spec, templates, _rows(task, opts), CHUNK_ROWS):
        advance = lambda n: hook(label, total, n)  # noqa: E731
        if decoding == "loglik":
            outputs, n_new = _loglik_outputs(chunk, backend, cache, opts, use_chat, advance)
        else:
            requests = [_generation_request(rp, decoding, use_chat) for rp in chunk]
            results, n_new = cached_generate(
                backend, requests, cache, batch_size=opts.batch_size, on_progress=advance
            )
            outputs = [r.text for r in results]
        generated += n_new
        cached += len(chunk) - n_new
        for rp, output in zip(chunk, outputs, strict=True):
            pattern = compiled.get(rp.regex) or compiled.setdefault(rp.regex, re.compile(rp.regex))
            extraction = extract_answer(spec, output, pattern, rp.answers)
            _collect(collected, rp, extraction)
            write_sample(_sample_record(backend, task, decoding, rp, output, extraction))
    return collected, generated, cached


def _generation_request(
    rp: RenderedPrompt, decoding: Decoding, use_chat: bool
) -> GenerationRequest:
    constrained = decoding == "constrained"
    return GenerationRequest(
        prompt=rp.text,
        messages=_messages(rp.text, use_chat),
        max_new_tokens=rp.max_new_tokens,
        stop=() if constrained else ("\n",),
        regex=rp.regex if constrained else None,
    )


def _loglik_outputs(
    chunk: list[RenderedPrompt],
    backend: Backend,
    cache: ResponseCache | None,
    opts: RunOptions,
    use_chat: bool,
    advance: Callable[[int], Any],
) -> tuple[list[str], int]:
    """The verbalisation with the highest log-likelihood, as if the model had said it."""
    requests = []
    for rp in chunk:
        assert rp.answers is not None
        requests.append(
            LoglikRequest(
                prompt=rp.text,
                continuations=tuple(rp.answers),
                messages=_messages(rp.text, use_chat),
            )
        )
    results, n_new = cached_loglik(
        backend, requests, cache, batch_size=opts.batch_size, on_progress=advance
    )
    outputs = []
    for req, res in zip(requests, results, strict=True):
        best = max(range(len(req.continuations)), key=lambda i: res.logprobs[i])
        outputs.append(req.continuations[best])
    return outputs, n_new


def _collect(collected: _Collected, rp: RenderedPrompt, extraction: Extraction) -> None:
    preds = collected.predictions[rp.template_id]
    if len(preds) == len(collected.golds):
        collected.golds.append(rp.gold)
    preds.append(extraction.answer)
    if extraction.used_fallback:
        collected.fallbacks[rp.template_id] += 1


def _sample_record(
    backend: Backend,
    task: Task,
    decoding: str,
    rp: RenderedPrompt,
    output: str,
    extraction: Extraction,
) -> dict[str, Any]:
    return {
        "model": backend.identity.name,
        "task": task.name,
        "decoding": decoding,
        "template_id": rp.template_id,
        "index": rp.index,
        "prompt": rp.text,
        "output": output,
        "answer": extraction.answer,
        "matched": extraction.matched,
        "fallback": extraction.used_fallback,
        "gold": rp.gold,
    }


def _metric_options(task: Task, metric: str) -> dict[str, Any]:
    if metric not in ("exact_match", "f1"):
        return {}
    # Predictions are NFKC-normalised (Appendix B), so golds are too: otherwise an exact
    # copy of a gold with full-width brackets (252 JSQuAD golds) could never match.
    return {"lang": task.spec.language, "nfkc": True}


def _score(task: Task, collected: _Collected, opts: RunOptions) -> DecodingResult:
    spec = task.spec
    dec = DecodingResult()
    golds = collected.golds
    for template_id, preds in collected.predictions.items():
        scores: dict[str, float] = {
            m: float(metrics.compute(m, preds, golds, **_metric_options(task, m)))
            for m in spec.metrics
        }
        dec.templates[template_id] = TemplateResult(
            metrics=scores,
            fallback_rate=collected.fallbacks.get(template_id, 0) / max(len(preds), 1),
            n=len(preds),
        )
    for m in spec.metrics:
        per_template = {tid: r.metrics[m] for tid, r in dec.templates.items()}
        if not per_template:
            continue
        stats = agg.aggregate(per_template, alpha=opts.alpha).to_dict()
        if opts.n_boot > 0 and len(golds) > 1:
            boot = agg.bootstrap(
                dict(collected.predictions),
                golds,
                m,
                alpha=opts.alpha,
                n_boot=opts.n_boot,
                seed=opts.seed,
                **_metric_options(task, m),
            )
            stats.update(boot.to_dict())
        dec.aggregate[m] = stats
    return dec


def _task_baseline(task: Task, opts: RunOptions) -> tuple[int, dict[str, float]]:
    """The number of evaluated instances and the chance rates on them: one pass over the
    data per task, shared by every model."""
    from hakari.chance import chance_rates
    from hakari.extract import gold_answer
    from hakari.tasks.data import get_path

    spec = task.spec
    golds = [
        gold_answer(spec, get_path(r, spec.field_path(spec.target))) for r in _rows(task, opts)
    ]
    return len(golds), (chance_rates(spec, golds) if golds else {})


def _alpha_sweeps(results: EvalResults) -> dict[str, dict[str, dict[str, list[dict[str, Any]]]]]:
    sweeps: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    model_names = list(results.models)
    first = results.models[model_names[0]]
    for task_name, task_result in first.tasks.items():
        for decoding, dec in task_result.decodings.items():
            for metric in dec.aggregate:
                stats = {}
                for model in model_names:
                    other = results.models[model].tasks.get(task_name)
                    other_dec = other.decodings.get(decoding) if other else None
                    if other_dec is None or metric not in other_dec.aggregate:
                        continue
                    a = other_dec.aggregate[metric]
                    stats[model] = (float(a["mean"]), float(a["std"]))
                if len(stats) > 1:
                    sweeps.setdefault(task_name, {}).setdefault(decoding, {})[metric] = (
                        agg.alpha_sweep(stats)
                    )
    return sweeps


@contextmanager
def _samples_writer(path: Path | None) -> Iterator[Callable[[dict[str, Any]], None]]:
    if path is None:
        yield lambda record: None
        return
    with path.open("w", encoding="utf-8") as fh:

        def write(record: dict[str, Any]) -> None:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")

        yield write


@contextmanager
def _progress(enabled: bool) -> Iterator[ProgressHook]:
    if not enabled:
        yield lambda label, total, n: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bars: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
    ) as progress:

        def hook(label: str, total: int, advanced: int) -> None:
            if label not in bars:
                bars[label] = progress.add_task(label, total=total)
            if advanced:
                progress.advance(bars[label], advanced)

        yield hook
