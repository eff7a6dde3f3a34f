"""The decodings of one task on one model (a *pass*): stream its prompts in chunks
through the cache and the backend, extract answers, put each in its cell
(`estimators.Cells`: by template and split position, with every counter results.json
records) and write every sample. A chunk's generation requests of every decoding go to
the backend in one call.

Prompts are never all in memory: a chunk holds the prompts of CHUNK_ROWS instances ×
the templates (a full run's), and each chunk's answers are scored and written before the
next is built. A pass over part of the grid (a budget's round) renders only its cells and
fills its chunks to the same size, so its backend calls batch as a full run's do.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hakari._util.regex import compile_regex
from hakari._util.unicode import has_unencodable
from hakari.backends.base import Backend, GenerationResult
from hakari.backends.cache import cached_generate_together
from hakari.runner.context import ModelContext
from hakari.runner.estimators import Cell, Cells
from hakari.runner.options import CHUNK_ROWS, Decoding
from hakari.runner.requests import generation_request, loglik_outputs
from hakari.runner.sampling import task_instances
from hakari.runner.settings import PlanOptions
from hakari.tasks.extract import Extraction, extract_answer
from hakari.tasks.loader import Task
from hakari.tasks.prompts import RenderedPrompt, render, select_templates


@dataclass(frozen=True)
class Pass:
    """One call of `run_decodings`: decodings of one task that run the same cells
    together (`plan.Schedule.passes`), where their answers go (each decoding's `Cells`,
    kept across the rounds) and the progress label."""

    task: Task
    decodings: tuple[Decoding, ...]
    cells: Collection[Cell]  # (template id, split position): the grid's or a round's part
    answers: Mapping[Decoding, Cells]
    label: str


def run_decodings(step: Pass, ctx: ModelContext) -> None:
    """Several decodings of one task, chunk by chunk: each chunk's generation requests
    of every decoding go to the backend in one call, so that the requests on one prompt
    share its batches (the greedy and the constrained answer to a prompt share its
    prefill); loglik, a different computation, is asked for on its own.

    Only the pass's cells are rendered and asked for; their answers and counters go to
    `step.answers[decoding]`. A decoding's `wall_s` is its share of the time: its own
    extraction and writing, and of the generation the decodings did together, a part
    proportional to the tokens its requests generated now plus one each (the prompt they
    read)."""
    run, backend = ctx.run, ctx.backend
    runs = {d: step.answers[d] for d in step.decodings}
    generating = [d for d in step.decodings if d != "loglik"]
    total = len(step.cells) * len(step.decodings)
    hook, label = run.hook, step.label
    hook(label, total, 0, False)
    advance = lambda n: hook(label, total, n, False)  # noqa: E731
    from_cache = lambda n: hook(label, total, n, True)  # noqa: E731
    for chunk in _chunks(step, run.plan):
        answered: dict[Decoding, tuple[list[str], list[GenerationResult] | None]] = {}
        if generating:
            started = time.perf_counter()
            groups = [[generation_request(rp, d, ctx.use_chat) for rp in chunk] for d in generating]
            together = cached_generate_together(
                backend,
                groups,
                run.cache,
                batch_size=run.load.batch_size,
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
            cache = run.cache
            unreadable_before = cache.unreadable if cache is not None else 0
            outputs, n_new = loglik_outputs(chunk, ctx, advance, from_cache)
            loglik = runs["loglik"]
            loglik.generated += n_new
            loglik.cached += len(chunk) - n_new
            if cache is not None:
                loglik.unreadable_cache_rows += cache.unreadable - unreadable_before
            loglik.wall_s += time.perf_counter() - started
            answered["loglik"] = (outputs, None)
        for decoding in step.decodings:
            started = time.perf_counter()
            outputs, results = answered[decoding]
            _collect(step.task, decoding, ctx, chunk, outputs, results, runs[decoding])
            runs[decoding].wall_s += time.perf_counter() - started


def _chunks(step: Pass, plan: PlanOptions) -> Iterator[list[RenderedPrompt]]:
    """The pass's prompts in chunks of a full run's size (CHUNK_ROWS instances × the
    templates), instance by instance in split order: only the pass's cells are rendered,
    and a pass over part of the grid fills each chunk with as many prompts as a full run's
    (the same batches: a budget's cell costs what a full run's does)."""
    spec = step.task.spec
    templates = select_templates(spec, plan.templates)
    size = CHUNK_ROWS * len(templates)
    chunk: list[RenderedPrompt] = []
    for index, row in task_instances(step.task, plan):
        chunk += [render(spec, t, row, index) for t in templates if (t.id, index) in step.cells]
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _time_shares(seconds: float, weights: Sequence[int]) -> list[float]:
    """`seconds` split in proportion to `weights` (evenly when they are all 0)."""
    total = sum(weights)
    if total == 0:
        return [seconds / len(weights)] * len(weights)
    return [seconds * w / total for w in weights]


def _collect(
    task: Task,
    decoding: Decoding,
    ctx: ModelContext,
    chunk: list[RenderedPrompt],
    outputs: list[str],
    results: list[GenerationResult] | None,
    into: Cells,
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
    qa_mode = ctx.run.plan.qa_mode
    for i, (rp, output) in enumerate(zip(chunk, outputs, strict=True)):
        pattern = compile_regex(rp.regex)  # checked for every row before the model loaded
        extraction = extract_answer(spec, output, pattern, rp.answers, qa_mode=qa_mode)
        into.add((rp.template_id, rp.index), extraction.answer, extraction.used_fallback)
        record = sample_record(ctx.backend, task, decoding, rp, output, extraction)
        if refused and refused[i]:
            record["refused"] = True  # written only when true: samples stay as they were
        ctx.run.write_sample(record)


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
