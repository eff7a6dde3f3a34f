"""transformers' own continuous batching (`generate_batch`) against hakari's decode pool on
the default run's greedy rows, on this machine.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_generate_batch.py [--limit 8] [--rounds 1]

The requests are the default run's greedy ones (SmolLM2-135M, the two demo tasks × 6
templates × `--limit` instances, chat-templated as the run sends them), captured from
`hakari.evaluate` through a recording backend. Every engine gets the same token ids, the
same `max_new_tokens`, greedy decoding in float32 on the same threads:

* `generate_batch`: transformers' continuous batching (paged cache, block-level prefix
  sharing), as a user calls it (`GenerationConfig`, default `ContinuousBatchingConfig`;
  `--paged-cache sized`, and the smoke run, size its cache to the rows instead: on a CPU
  the default sizes it from the machine's RAM, most of a minute a call here).
  It has no stop strings, character budgets or regex masks, so every row runs to its
  token limit or EOS;
* `hakari pool, no stops`: `HFBackend.generate` on the same rows with `stop=()` and no
  character budget: the like-for-like row;
* `hakari pool, the run's rules`: the run's real greedy requests (newline stop,
  24-character budget, the decided-label stop): what a run does. `generate_batch` cannot
  stop there, but its answers cut afterwards by the same rules (`apply_output_rules`) are
  compared with these.

Answers are checked: `generate_batch`'s texts (decoded as hakari decodes, EOS dropped, no
half characters) and token counts against hakari's without stops, and its cut texts
against the run's rules; a difference is listed with where the texts part (float
rounding between batch compositions can turn a greedy pick).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import transformers
from timing import add_smoke_flag, best_of_rounds
from transformers import GenerationConfig

from hakari import evaluate
from hakari.backends.base import GenerationRequest, GenerationResult, apply_output_rules
from hakari.backends.fake import FakeBackend
from hakari.backends.hf import HFBackend
from hakari.backends.hf.fasttok import direct_decoder
from hakari.backends.hf.rows import decode_whole_chars
from hakari.backends.registry import load_backend
from hakari.runner import DEFAULT_MODEL, DEFAULT_TASKS


def default_run_requests(limit: int, supports_chat: bool) -> list[GenerationRequest]:
    """The greedy requests of `hakari run --limit LIMIT` (the default tasks), as the
    runner builds them, recorded by a backend that answers nothing."""
    recorder = FakeBackend(lambda request: "", supports_chat=supports_chat)
    with tempfile.TemporaryDirectory() as cache:
        evaluate(
            DEFAULT_MODEL,
            list(DEFAULT_TASKS),
            backend_factory=lambda spec: recorder,
            decodings="greedy",
            limit=limit,
            n_boot=0,
            use_cache=False,
            cache_dir=cache,
        )
    return recorder.generated


def unstopped(request: GenerationRequest) -> GenerationRequest:
    """The request without hakari's stop rules: it runs to its token limit or EOS."""
    return replace(request, stop=(), max_new_chars=None, stop_after=None)


class GenerateBatch:
    """`model.generate_batch` on the rows' token ids, one call per `max_new_tokens` value
    (its config holds one); its outputs decoded as hakari decodes a row."""

    def __init__(
        self, backend: HFBackend, requests: Sequence[GenerationRequest], sized: bool = False
    ) -> None:
        self.backend = backend
        self.sized = sized
        self.ids = backend.encode(requests)
        self.limits = [r.max_new_tokens for r in requests]
        self.outputs: list[list[int]] = [[] for _ in requests]

    def run(self) -> None:
        by_limit: dict[int, list[int]] = defaultdict(list)
        for i, limit in enumerate(self.limits):
            by_limit[limit].append(i)
        for limit, rows in by_limit.items():
            config = GenerationConfig(
                max_new_tokens=limit,
                do_sample=False,
                eos_token_id=sorted(self.backend.eos_token_ids),
                pad_token_id=self.backend.pad_token_id,
            )
            inputs = [self.ids[i] for i in rows]
            done = self.backend.model.generate_batch(
                inputs=inputs,
                generation_config=config,
                continuous_batching_config=self.cache_config(inputs, limit),
                progress_bar=False,
            )
            # results come back keyed by request id, in the order of the inputs
            for i, output in zip(rows, done.values(), strict=True):
                self.outputs[i] = list(output.generated_tokens)

    def cache_config(self, inputs: list[list[int]], limit: int) -> Any:
        """None: transformers' default `ContinuousBatchingConfig`, which on a CPU sizes the
        paged cache from the machine's RAM (60-90% of it: most of a minute a call on this
        machine, whatever the rows). `sized`: a cache of the rows' own blocks (their prompt
        and `limit` new tokens), as `bench_hf_gpu.py` sizes it on a CPU."""
        if not self.sized:
            return None
        from transformers import ContinuousBatchingConfig

        page = ContinuousBatchingConfig.page_size
        blocks = sum(-(-(len(row) + limit) // page) for row in inputs)
        return ContinuousBatchingConfig(num_blocks=blocks, max_batch_tokens=512)

    def texts(self) -> list[tuple[str, int]]:
        """Each row's text (EOS dropped, no trailing half character) and its tokens."""
        eos = self.backend.eos_token_ids
        decode = direct_decoder(self.backend.tokenizer)  # hakari's rows' decoder
        out = []
        for tokens in self.outputs:
            ids = tokens[:-1] if tokens and tokens[-1] in eos else tokens
            out.append((decode_whole_chars(decode, ids), len(tokens)))
        return out


def parted_at(a: str, b: str) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def compare(
    name: str, theirs: Sequence[tuple[str, int]], ours: Sequence[GenerationResult], tokens: bool
) -> None:
    same = [
        t == o.text and (not tokens or n == o.n_tokens)
        for (t, n), o in zip(theirs, ours, strict=True)
    ]
    print(f"{name}: {sum(same)}/{len(same)} the same")
    for i, ok in enumerate(same):
        if not ok:
            (text, n), mine = theirs[i], ours[i]
            at = parted_at(text, mine.text)
            print(
                f"  row {i}: parted at character {at}: generate_batch {text[at : at + 20]!r} "
                f"({n} tokens), hakari {mine.text[at : at + 20]!r} ({mine.n_tokens} tokens)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--limit", type=int, default=8, help="instances of each default task")
    parser.add_argument("--batch-size", type=int, default=None, help="hakari's (default: its own)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, help="cap every row's token limit")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--rows", type=int, help="the first ROWS requests only")
    parser.add_argument(
        "--paged-cache",
        choices=("default", "sized"),
        default="default",
        help="generate_batch's paged cache: transformers' default sizing (from the machine's "
        "RAM on a CPU), or sized to the rows (the smoke run's)",
    )
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:  # the RAM-sized cache alone took most of a minute a call on this CPU
        args.limit, args.rounds, args.max_new_tokens, args.rows = 1, 1, 4, 4
        args.paged_cache = "sized"
    sized = args.paged_cache == "sized"

    backend = load_backend(args.model, cache_dir=args.cache_dir, device="cpu")
    assert isinstance(backend, HFBackend)
    rules = default_run_requests(args.limit, backend.supports_chat)[: args.rows]
    if args.max_new_tokens:
        rules = [
            replace(r, max_new_tokens=min(r.max_new_tokens, args.max_new_tokens)) for r in rules
        ]
    free = [unstopped(r) for r in rules]
    theirs = GenerateBatch(backend, free, sized)
    results: dict[str, list[GenerationResult]] = {}

    def hakari(name: str, requests: list[GenerationRequest]) -> Callable[[], Any]:
        return lambda: results.__setitem__(
            name, backend.generate(requests, batch_size=args.batch_size)
        )

    warm = GenerateBatch(backend, free[:2], sized)  # first-call set-up of both, untimed
    warm.run()
    backend.generate(free[:2])
    runs = {
        "transformers generate_batch": theirs.run,
        "hakari pool, no stops": hakari("free", free),
        "hakari pool, the run's rules": hakari("rules", rules),
    }
    best = best_of_rounds(runs, args.rounds, alternate=True)

    generated = {
        "transformers generate_batch": sum(len(t) for t in theirs.outputs),
        "hakari pool, no stops": sum(r.n_tokens for r in results["free"]),
        "hakari pool, the run's rules": sum(r.n_tokens for r in results["rules"]),
    }
    base = best["transformers generate_batch"]
    limits = sorted({r.max_new_tokens for r in rules})
    print(
        f"\n{args.model}, the default run's greedy rows: {len(rules)} prompts "
        f"(--limit {args.limit}), max_new_tokens {limits}, float32, {backend.device}, "
        f"{torch.get_num_threads()} threads, transformers {transformers.__version__}, "
        f"generate_batch's paged cache {args.paged_cache}, "
        f"best of {args.rounds}; load average {os.getloadavg()[0]:.1f}"
    )
    print("| engine | tokens generated | wall s | tokens/s | wall vs generate_batch |")
    print("|---|---|---|---|---|")
    for name, seconds in best.items():
        n = generated[name]
        print(f"| {name} | {n:,} | {seconds:.1f} | {n / seconds:.1f} | {seconds / base:.2f}× |")
    print()
    texts = theirs.texts()
    compare(
        "generate_batch vs hakari without stops (text and tokens)", texts, results["free"], True
    )
    cut = [
        (
            apply_output_rules(
                t, stop=r.stop, max_new_chars=r.max_new_chars, stop_after=r.stop_after
            )[0],
            n,
        )
        for (t, n), r in zip(texts, rules, strict=True)
    ]
    compare(
        "generate_batch cut by the run's rules vs hakari's answers", cut, results["rules"], False
    )


if __name__ == "__main__":
    main()
