"""The decodings of one task on one model: stream prompts in chunks through the cache
and the backend, extract answers, put each in its cell (`estimators.Cells`: by template
and split position, with every counter results.json records) and write every sample. A
chunk's generation requests of every decoding go to the backend in one call.

Prompts are never all in memory: `iter_chunks` yields CHUNK_ROWS instances × templates at
a time, and each chunk's answers are scored and written before the next is built.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from hakari._util.regex import compile_regex
from hakari._util.unicode import has_unencodable
from hakari.backends.base import Backend, GenerationResult
from hakari.backends.cache import ResponseCache, cached_generate_together
from hakari.runner.estimators import Cell, Cells
from hakari.runner.options import CHUNK_ROWS, Decoding, ProgressHook, RunOptions
from hakari.runner.requests import generation_request, loglik_outputs
from hakari.runner.sampling import numbered_rows
from hakari.tasks.extract import Extraction, extract_answer
from hakari.tasks.loader import Task
from hakari.tasks.prompts import RenderedPrompt, iter_numbered_chunks, select_templates

SampleWriter = Callable[[dict[str, Any]], None]


def task_instances(task: Task, opts: RunOptions) -> Iterator[tuple[int, dict[str, Any]]]:
    """(position in the split, row) of the instances a run evaluates: the same rows for
    every model and decoding (all, the first --limit, or a seeded --sample)."""
    return numbered_rows(
        task, limit=opts.limit, sample=opts.sample, seed=opts.seed, data_dir=opts.data_dir
    )


def task_rows(task: Task, opts: RunOptions) -> Iterator[dict[str, Any]]:
    """The instances a run evaluates, without their positions."""
    return (row for _, row in task_instances(task, opts))


def run_decodings(
    task: Task,
    decodings: Sequence[Decoding],
    backend: Backend,
    opts: RunOptions,
    cache: ResponseCache | None,
    use_chat: bool,
    label: str,
    hook: ProgressHook,
    write_sample: SampleWriter,
    *,
    cells: Collection[Cell],
    answers: Mapping[Decoding, Cells],
) -> None:
    """Several decodings of one task, chunk by chunk: each chunk's generation requests
    of every decoding go to the backend in one call, so that the requests on one prompt
    share its batches (the greedy and the constrained answer to a prompt share its
    prefill); loglik, a different computation, is asked for on its own.

    `cells` (template id, split position) are the cells this pass runs (every cell of
    the grid, or a budgeted round's part of it); their answers and counters go to each
    decoding's `answers[decoding]` (kept across the rounds).

    A decoding's `wall_s` is its share of the time: its own extraction and writing, and
    of the generation the decodings did together, a part proportional to the tokens its
    requests generated now plus one each (the prompt they read)."""
    spec = task.spec
    templates = select_templates(spec, opts.templates)
    runs = {d: answers[d] for d in decodings}
    generating = [d for d in decodings if d != "loglik"]
    total = len(cells) * len(decodings)
    hook(label, total, 0, False)
    advance = lambda n: hook(label, total, n, False)  # noqa: E731
    from_cache = lambda n: hook(label, total, n, True)  # noqa: E731
    for chunk in iter_numbered_chunks(spec, templates, task_instances(task, opts), CHUNK_ROWS):
        chunk = [rp for rp in chunk if (rp.template_id, rp.index) in cells]
        if not chunk:
            continue
        answered: dict[Decoding, tuple[list[str], list[GenerationResult] | None]] = {}
        if generating:
            started = time.perf_counter()
            groups = [[generation_request(rp, d, use_chat) for rp in chunk] for d in generating]
            together = cached_generate_together(
                backend,
                groups,
                cache,
                batch_size=opts.batch_size,
                on_progress=advance,
                on_cached=from_cache,
            )
            seconds = time.perf_counter() - started
            shares = _time_shares(seconds, [done.tokens + done.generated for done in together])
            for d, done, share in zip(generating, together, shares, strict=True):
                runs[d].generated += done.generated
                runs[d].cached += len(chunk) - done.generated
                runs[d].unreadable_cache_rows += done.unreadable
                runs[d].wall_s += share
                answered[d] = ([r.text for r in done.results], done.results)
        if "loglik" in runs:
            started = time.perf_counter()
            unreadable_before = cache.unreadable if cache is not None else 0
            outputs, n_new = loglik_outputs(
                chunk, backend, cache, opts, use_chat, advance, from_cache
            )
            loglik = runs["loglik"]
            loglik.generated += n_new
            loglik.cached += len(chunk) - n_new
            if cache is not None:
                loglik.unreadable_cache_rows += cache.unreadable - unreadable_before
            loglik.wall_s += time.perf_counter() - started
            answered["loglik"] = (outputs, None)
        for decoding in decodings:
            started = time.perf_counter()
            outputs, results = answered[decoding]
            run = runs[decoding]
            _collect(task, decoding, backend, opts, chunk, outputs, results, run, write_sample)
            run.wall_s += time.perf_counter() - started


def _time_shares(seconds: float, weights: Sequence[int]) -> list[float]:
    """`seconds` split in proportion to `weights` (evenly when they are all 0)."""
    total = sum(weights)
    if total == 0:
        return [seconds / len(weights)] * len(weights)
    return [seconds * w / total for w in weights]


def _collect(
    task: Task,
    decoding: Decoding,
    backend: Backend,
    opts: RunOptions,
    chunk: list[RenderedPrompt],
    outputs: list[str],
    results: list[GenerationResult] | None,
    into: Cells,
    write_sample: SampleWriter,
) -> None:
    """One chunk's answers of one decoding: counted, extracted, put in their cells,
    written."""
    spec = task.spec
    refused: list[bool] = []
    if results is not None:
        into.redacted_secrets += sum(r.redactions for r in results)
        refused = [r.refused for r in results]
        into.refusals += sum(refused)
        if decoding == "constrained":
            into.constraint_misses = (into.constraint_misses or 0) + sum(
                r.finish_reason not in ("length", "refused")
                and not compile_regex(rp.regex).fullmatch(r.text)
                for rp, r in zip(chunk, results, strict=True)
            )
    into.unencodable_answers += sum(has_unencodable(o) for o in outputs)
    for i, (rp, output) in enumerate(zip(chunk, outputs, strict=True)):
        pattern = compile_regex(rp.regex)  # checked for every row before the model loaded
        extraction = extract_answer(spec, output, pattern, rp.answers, qa_mode=opts.qa_mode)
        into.add((rp.template_id, rp.index), extraction.answer, extraction.used_fallback)
        record = sample_record(backend, task, decoding, rp, output, extraction)
        if refused and refused[i]:
            record["refused"] = True  # written only when true: samples stay as they were
        write_sample(record)


def sample_record(
    backend: Backend,
    task: Task,
    decoding: str,
    rp: RenderedPrompt,
    output: str,
    extraction: Extraction,
) -> dict[str, Any]:
    """One line of samples.jsonl."""
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
