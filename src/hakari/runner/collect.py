"""The decodings of one task on one model: stream prompts in chunks through the cache
and the backend, extract answers, collect predictions per template and write every
sample. A chunk's generation requests of every decoding go to the backend in one call.

Prompts are never all in memory: `iter_chunks` yields CHUNK_ROWS instances × templates at
a time, and each chunk's answers are scored and written before the next is built.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hakari._util.regex import compile_regex
from hakari._util.unicode import has_unencodable
from hakari.backends.base import Backend, GenerationResult
from hakari.backends.cache import ResponseCache, cached_generate_together
from hakari.runner.options import CHUNK_ROWS, Decoding, ProgressHook, RunOptions
from hakari.runner.requests import generation_request, loglik_outputs
from hakari.runner.sampling import numbered_rows
from hakari.tasks.extract import Extraction, extract_answer
from hakari.tasks.loader import Task
from hakari.tasks.prompts import RenderedPrompt, iter_numbered_chunks, select_templates

SampleWriter = Callable[[dict[str, Any]], None]


@dataclass
class Collected:
    """Per-template predictions for one task × decoding (golds are shared)."""

    golds: list[Any] = field(default_factory=list)
    predictions: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    fallbacks: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # constrained decoding: finished answers that do not fullmatch their regex (an
    # engine that ignored the constraint); a budget-cut answer is a prefix, not counted
    constraint_misses: int = 0
    # prompts the server gave no text for, however often asked (scored as the fallback)
    refusals: int = 0
    # answers holding text UTF-8 cannot encode (kept exactly, written as JSON escapes)
    unencodable_answers: int = 0
    # cached rows that could not be read back: generated again
    unreadable_cache_rows: int = 0
    redacted_secrets: int = 0  # API keys replaced by *** in the answers (GenerationResult)

    def add(self, rp: RenderedPrompt, extraction: Extraction) -> None:
        preds = self.predictions[rp.template_id]
        if len(preds) == len(self.golds):
            self.golds.append(rp.gold)
        preds.append(extraction.answer)
        if extraction.used_fallback:
            self.fallbacks[rp.template_id] += 1


@dataclass
class CellsCollected(Collected):
    """The answers of a part of the grid (a budgeted run), by (template id, split
    position); kept across the rounds of a sequential run."""

    answers: dict[tuple[str, int], Any] = field(default_factory=dict)
    fallback_cells: set[tuple[str, int]] = field(default_factory=set)

    def add(self, rp: RenderedPrompt, extraction: Extraction) -> None:
        cell = (rp.template_id, rp.index)
        self.answers[cell] = extraction.answer
        if extraction.used_fallback:
            self.fallback_cells.add(cell)


def task_instances(task: Task, opts: RunOptions) -> Iterator[tuple[int, dict[str, Any]]]:
    """(position in the split, row) of the instances a run evaluates: the same rows for
    every model and decoding (all, the first --limit, or a seeded --sample)."""
    return numbered_rows(
        task, limit=opts.limit, sample=opts.sample, seed=opts.seed, data_dir=opts.data_dir
    )


def task_rows(task: Task, opts: RunOptions) -> Iterator[dict[str, Any]]:
    """The instances a run evaluates, without their positions."""
    return (row for _, row in task_instances(task, opts))


@dataclass
class DecodingRun:
    """What one decoding of a task × model ran: its predictions, the requests generated
    now and answered from the cache, and its seconds."""

    collected: Collected
    generated: int = 0
    cached: int = 0
    wall_s: float = 0.0


def run_decodings(
    task: Task,
    decodings: Sequence[Decoding],
    backend: Backend,
    opts: RunOptions,
    cache: ResponseCache | None,
    use_chat: bool,
    n_rows: int,
    label: str,
    hook: ProgressHook,
    write_sample: SampleWriter,
    *,
    cells: frozenset[tuple[str, int]] | None = None,
    collected: dict[Decoding, Collected] | None = None,
) -> dict[Decoding, DecodingRun]:
    """Several decodings of one task, chunk by chunk: each chunk's generation requests
    of every decoding go to the backend in one call, so that the requests on one prompt
    share its batches (the greedy and the constrained answer to a prompt share its
    prefill); loglik, a different computation, is asked for on its own.

    `cells` (template id, split position) restricts the run to part of the grid (a
    budgeted run); their answers go to `collected` (e.g. a `CellsCollected` per decoding
    kept across rounds).

    A decoding's `wall_s` is its share of the time: its own extraction and writing, and
    of the generation the decodings did together, a part proportional to the tokens its
    requests generated now plus one each (the prompt they read)."""
    spec = task.spec
    templates = select_templates(spec, opts.templates)
    runs = {
        d: DecodingRun(collected[d] if collected and d in collected else Collected())
        for d in decodings
    }
    generating = [d for d in decodings if d != "loglik"]
    total = (n_rows * len(templates) if cells is None else len(cells)) * len(decodings)
    hook(label, total, 0, False)
    advance = lambda n: hook(label, total, n, False)  # noqa: E731
    from_cache = lambda n: hook(label, total, n, True)  # noqa: E731
    for chunk in iter_numbered_chunks(spec, templates, task_instances(task, opts), CHUNK_ROWS):
        if cells is not None:
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
                runs[d].collected.unreadable_cache_rows += done.unreadable
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
                loglik.collected.unreadable_cache_rows += cache.unreadable - unreadable_before
            loglik.wall_s += time.perf_counter() - started
            answered["loglik"] = (outputs, None)
        for decoding in decodings:
            started = time.perf_counter()
            outputs, results = answered[decoding]
            run = runs[decoding]
            _collect(
                task, decoding, backend, opts, chunk, outputs, results, run.collected, write_sample
            )
            run.wall_s += time.perf_counter() - started
    return runs


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
    collected: Collected,
    write_sample: SampleWriter,
) -> None:
    """One chunk's answers of one decoding: counted, extracted, collected, written."""
    spec = task.spec
    refused: list[bool] = []
    if results is not None:
        collected.redacted_secrets += sum(r.redactions for r in results)
        refused = [r.refused for r in results]
        collected.refusals += sum(refused)
        if decoding == "constrained":
            collected.constraint_misses += sum(
                r.finish_reason not in ("length", "refused")
                and not compile_regex(rp.regex).fullmatch(r.text)
                for rp, r in zip(chunk, results, strict=True)
            )
    collected.unencodable_answers += sum(has_unencodable(o) for o in outputs)
    for i, (rp, output) in enumerate(zip(chunk, outputs, strict=True)):
        pattern = compile_regex(rp.regex)  # checked for every row before the model loaded
        extraction = extract_answer(spec, output, pattern, rp.answers, qa_mode=opts.qa_mode)
        collected.add(rp, extraction)
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
