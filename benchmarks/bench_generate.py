"""Generation speed: HFBackend against a bare batched `model.generate` loop, and greedy
against regex-constrained answers.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_generate.py [--model smollm2-135m]

Both loops see the same prompts in the same length-sorted batches, greedy, fp32. The
bare loop has no stop strings and always runs `max_new_tokens` steps; HFBackend is timed
with the default newline stop, with the newline stop and a 24-character budget (the label
tasks' greedy setting: the row's text is decoded after every token), without stops (the
like-for-like row), and with the 24-character greedy and the regex requests of every
prompt in one call (as a run sends a task's greedy and constrained requests: each prompt
is prefilled once for both; compare with the sum of the two rows above it).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from pathlib import Path

import torch
from timing import add_smoke_flag, best_of_rounds

from hakari.backends.base import GenerationRequest
from hakari.backends.hf import HFBackend
from hakari.backends.registry import load_backend

TOPICS = ["sports", "politics", "science", "music", "cooking", "travel", "finance", "films"]
SUBJECTS = ["The match", "A new law", "The telescope", "This album", "My soup", "The flight"]
VERBS = ["was", "seemed", "turned out", "felt", "proved"]
ADJECTIVES = ["great", "awful", "surprising", "boring", "fine", "unexpected", "superb"]


def classification_prompts(n: int, seed: int = 0) -> list[str]:
    """Short zero-shot classification prompts of varied length."""
    rng = random.Random(seed)
    prompts = []
    for _ in range(n):
        extra = " ".join(rng.choices(ADJECTIVES, k=rng.randint(0, 12)))
        text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(ADJECTIVES)} {extra}."
        options = ", ".join(rng.sample(TOPICS, 3))
        prompts.append(f"Text: {text}\nTopic ({options}) - answer 0, 1 or 2:\nAnswer:")
    return prompts


def bare_loop(backend: HFBackend, prompts: list[str], batch_size: int, max_new: int) -> None:
    tok, model = backend.tokenizer, backend.model
    tok.padding_side = "left"
    ordered = sorted(prompts, key=lambda p: -len(tok(p)["input_ids"]))
    with torch.inference_mode():
        for start in range(0, len(ordered), batch_size):
            enc = tok(ordered[start : start + batch_size], return_tensors="pt", padding=True)
            out = model.generate(
                **enc.to(backend.device),
                max_new_tokens=max_new,
                do_sample=False,
                pad_token_id=backend.pad_token_id,
            )
            tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=5)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=2)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.batch_size, args.max_new_tokens, args.rounds = 4, 2, 2, 1

    backend = load_backend(args.model, dtype=args.dtype, cache_dir=args.cache_dir)
    assert isinstance(backend, HFBackend)
    prompts = classification_prompts(args.n)
    bs, max_new = args.batch_size, args.max_new_tokens

    def requests(
        stop: tuple[str, ...], regex: str | None = None, chars: int | None = None
    ) -> list[GenerationRequest]:
        return [
            GenerationRequest(
                prompt=p, max_new_tokens=max_new, stop=stop, regex=regex, max_new_chars=chars
            )
            for p in prompts
        ]

    def hakari(asked: list[GenerationRequest]) -> Callable[[], object]:
        return lambda: backend.generate(asked, batch_size=bs)

    greedy, constrained = requests(("\n",), chars=24), requests(("\n",), "[0-2]")

    # Warm up both paths (first-call allocations, llguidance tokenizer build).
    bare_loop(backend, prompts[:bs], bs, max_new)
    backend.generate(
        [GenerationRequest(prompt=p, max_new_tokens=2, regex="[0-2]") for p in prompts[:bs]]
    )

    runs: dict[str, Callable[[], object]] = {
        "bare model.generate loop": lambda: bare_loop(backend, prompts, bs, max_new),
        "HFBackend, no stop": hakari(requests(())),
        "HFBackend, stop at newline": hakari(requests(("\n",))),
        "HFBackend, newline + 24 chars": hakari(greedy),
        "HFBackend, regex [0-2]": hakari(constrained),
        # a run's greedy and constrained requests, as the runner sends them: in one call
        "HFBackend, 24 chars + regex": hakari(greedy + constrained),
    }
    best = best_of_rounds(runs, args.rounds)
    rows = list(best.items())
    base = rows[0][1]
    print(
        f"\n{args.model}, {args.n} prompts, batch {bs}, max_new_tokens {max_new}, "
        f"{args.dtype}, {backend.device}, {torch.get_num_threads()} threads, "
        f"best of {args.rounds} interleaved rounds"
    )
    print(f"| {'run':<28} | {'wall s':>7} | {'vs bare':>7} | {'prompts/s':>9} |")
    print(f"|{'-' * 30}|{'-' * 9}|{'-' * 9}|{'-' * 11}|")
    for name, seconds in rows:
        print(f"| {name:<28} | {seconds:7.2f} | {seconds / base:6.2f}x | {args.n / seconds:9.1f} |")
    apart = best["HFBackend, newline + 24 chars"] + best["HFBackend, regex [0-2]"]
    together = best["HFBackend, 24 chars + regex"]
    print(f"\ngreedy + regex in one call: {together / apart:.2f}x the two calls apart")


if __name__ == "__main__":
    main()
