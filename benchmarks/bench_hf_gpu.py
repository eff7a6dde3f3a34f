"""The transformers backend at the sizes people evaluate, on a GPU: hakari's `HFBackend`
against bare loops and transformers' and lm-evaluation-harness's own ways, for randomly
initialised models with the shapes of Qwen2.5-0.5B, 1.5B and 7B (speed does not depend
on the weights), in bf16. Two tables, generation (tokens/s) and log-likelihood (requests/s).

    PYTHONPATH=src python benchmarks/bench_hf_gpu.py --sizes 0.5b,1.5b,7b     # CUDA, bf16
    PYTHONPATH=src python benchmarks/bench_hf_gpu.py --sizes tiny --device cpu --dtype float32

Generation: every variant sees the same prompts (random words of a word-level tokenizer
as large as Qwen's vocabulary, 32-256 tokens) and generates exactly `--new-tokens` tokens
each: the EOS row of the output layer is zeroed, so a random model never picks it (its
logit 0 lies below the maximum of 152k random logits), and the bare loop also sets
`min_new_tokens`. HFBackend runs with no stop string and no character budget (the
like-for-like setting; hakari's stop rule and budgets are timed on the CPU by
bench_generate.py). Beside the bare loop at `--batch-size`: HFBackend with its decode
pool held to one batch, the bare loop at the pool's rows (`loading.DECODE_BATCHES`
batches; every answer here is as long as the others, so a pooled run is a bigger batch,
and that is the fair comparison for it), and transformers' continuous batching
(`model.generate_batch`: paged cache, its default `ContinuousBatchingConfig` on CUDA, one
call for all prompts, the same token ids, greedy; one line where transformers lacks it).

Log-likelihood: `--loglik-n` MMLU-like requests (a context of `--context` random words,
the one-token continuations " A" to " D": the letters are words of the tokenizer), on the
same model object, three ways: `HFBackend.loglik` at its own batch size (`--hakari-batch`
fixes one); lm-evaluation-harness's `HFLM` given the same model and tokenizer objects
(`loglikelihood` on `Instance`s at `--hflm-batch`, "auto" allowed; one forward per
context for one-token continuations), skipped with a line where `lm_eval` cannot be
imported (a dev dependency of hakari, not a runtime one); a plain loop: contexts sorted
by length, one forward per `--loglik-batch` of them, left-padded, the four letters read
off the last position. Each runs once untimed first, a forward pre-hook counting its passes, and its
answers (the letter of the highest log-prob) are compared with hakari's; bf16 logits of a
random model can part on a near tie, so the largest log-prob difference is printed too.

All times: best of `--rounds` interleaved rounds (`timing.best_of_rounds`), CUDA synced.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from typing import Any

import torch
from timing import add_smoke_flag, best_of_rounds, skip
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from transformers import __version__ as transformers_version

from hakari.backends.base import GenerationRequest, LoglikRequest
from hakari.backends.hf import HFBackend, loading

VOCAB = 151936  # Qwen2.5's
SHAPES = {  # hidden, intermediate, layers, attention heads, key-value heads, tied embeddings
    "tiny": (64, 128, 2, 4, 2, True),
    "0.5b": (896, 4864, 24, 14, 2, True),
    "1.5b": (1536, 8960, 28, 12, 2, True),
    "7b": (3584, 18944, 28, 28, 4, False),
}
EOS, PAD = 1, 0
LETTERS = ("A", "B", "C", "D")  # words 2-5 of the tokenizer: " A" is one token
FIRST_WORD = 2 + len(LETTERS)  # the random words: w6 and up
Scores = list[list[float]]  # a request's log-prob of each letter


def word_tokenizer() -> PreTrainedTokenizerFast:
    """One token a word. The special tokens are named so that no word holds them: a special
    token is matched inside words (EOS named "w1" split "w123" into EOS and "23")."""
    words = ["<pad>", "<eos>", *LETTERS] + [f"w{i}" for i in range(FIRST_WORD, VOCAB)]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>")


def random_model(size: str, dtype: torch.dtype, device: str) -> Qwen2ForCausalLM:
    hidden, intermediate, layers, heads, kv_heads, tied = SHAPES[size]
    config = Qwen2Config(
        vocab_size=VOCAB, hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        tie_word_embeddings=tied, max_position_embeddings=32768, rope_theta=1e6,
        rms_norm_eps=1e-6, eos_token_id=EOS, pad_token_id=PAD, bos_token_id=None,
    )  # fmt: skip
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(dtype)
    with torch.no_grad():
        model.lm_head.weight[EOS].zero_()  # never the argmax: exactly --new-tokens tokens
    model.generation_config.eos_token_id = EOS
    model.generation_config.pad_token_id = PAD
    return model.eval()


def words(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(f"w{rng.randrange(FIRST_WORD, VOCAB)}" for _ in range(rng.randint(lo, hi)))


def prompts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [words(rng, 32, 256) for _ in range(n)]


def loglik_requests(n: int, lo: int, hi: int, seed: int = 1) -> list[LoglikRequest]:
    rng = random.Random(seed)
    return [LoglikRequest(words(rng, lo, hi), tuple(f" {x}" for x in LETTERS)) for _ in range(n)]


def bare_loop(backend: HFBackend, texts: list[str], batch: int, new: int) -> None:
    tok, model = backend.tokenizer, backend.model
    tok.padding_side = "left"
    ordered = sorted(texts, key=lambda p: -len(p.split()))
    with torch.inference_mode():
        for start in range(0, len(ordered), batch):
            enc = tok(ordered[start : start + batch], return_tensors="pt", padding=True)
            out = model.generate(
                **enc.to(backend.device), max_new_tokens=new, min_new_tokens=new,
                do_sample=False, pad_token_id=PAD,
            )  # fmt: skip
            tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)


def one_batch_at_a_time(backend: HFBackend, requests: list[GenerationRequest], size: int) -> None:
    """HFBackend with its decode pool held to one batch (as before the pool served CUDA)."""
    pooled = loading.DECODE_BATCHES
    loading.DECODE_BATCHES = 1
    try:
        backend.generate(requests, batch_size=size)
    finally:
        loading.DECODE_BATCHES = pooled


def continuous_batching(backend: HFBackend, ids: list[list[int]], new: int) -> Callable[[], int]:
    """`model.generate_batch` on the prompts' token ids, decoded as the bare loop decodes;
    returns the fewest tokens a row got (all should get `new`). On a CUDA device with its
    default `ContinuousBatchingConfig`, as a user calls it; on a CPU that default sizes the
    paged cache from the machine's RAM (60-90% of it: most of a minute a call here), so
    there the cache holds the prompts' blocks and no more."""
    from transformers import ContinuousBatchingConfig

    config = GenerationConfig(
        max_new_tokens=new, do_sample=False, eos_token_id=EOS, pad_token_id=PAD
    )
    page = ContinuousBatchingConfig.page_size
    blocks = sum(-(-(len(row) + new) // page) for row in ids)
    sized = ContinuousBatchingConfig(num_blocks=blocks, max_batch_tokens=512)
    cb_config = sized if backend.device.type == "cpu" else None

    def run() -> int:
        done = backend.model.generate_batch(
            inputs=ids,
            generation_config=config,
            continuous_batching_config=cb_config,
            progress_bar=False,
        )
        tokens = [list(out.generated_tokens) for out in done.values()]
        backend.tokenizer.batch_decode(tokens, skip_special_tokens=True)
        return min(map(len, tokens))

    return run


@torch.inference_mode()
def plain_loglik(backend: HFBackend, requests: list[LoglikRequest], batch: int) -> Scores:
    """One forward per `batch` contexts (sorted by length, left-padded), the letters'
    log-probs read off the last position: the context's tokens then " A"'s are the pair
    lm-eval's rule makes here (no trailing space, one-token continuations)."""
    tok, model = backend.tokenizer, backend.model
    tok.padding_side = "left"
    letters = tok.convert_tokens_to_ids(list(LETTERS))
    order = sorted(range(len(requests)), key=lambda i: -len(requests[i].prompt.split()))
    out: Scores = [[] for _ in requests]
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        enc = tok([requests[i].prompt for i in rows], return_tensors="pt", padding=True)
        ids, mask = enc["input_ids"].to(backend.device), enc["attention_mask"].to(backend.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(
            input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=1
        ).logits[:, -1]
        scores = torch.log_softmax(logits.float(), -1)[:, letters].tolist()
        for i, row in zip(rows, scores, strict=True):
            out[i] = row
    return out


def hakari_loglik(backend: HFBackend, requests: list[LoglikRequest], batch: int) -> Scores:
    return [list(r.logprobs) for r in backend.loglik(requests, batch_size=batch or None)]


def lm_eval_loglik(
    backend: HFBackend, requests: list[LoglikRequest], batch: str
) -> Callable[[], Scores] | str:
    """lm-eval's `HFLM` on the backend's model and tokenizer objects, or why not."""
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError as error:
        return f"lm_eval cannot be imported here ({error}); `pip install lm_eval==0.4.13`"
    lm = HFLM(pretrained=backend.model, tokenizer=backend.tokenizer, batch_size=batch)
    instances = [
        Instance("loglikelihood", {}, (r.prompt, c), i)
        for i, r in enumerate(requests)
        for c in r.continuations
    ]

    def run() -> Scores:
        flat = [score for score, _ in lm.loglikelihood(instances, disable_tqdm=True)]
        return [flat[i : i + len(LETTERS)] for i in range(0, len(flat), len(LETTERS))]

    return run


def counted(model: torch.nn.Module, fn: Callable[[], Any]) -> tuple[int, Any]:
    """(forward passes of `model`, the result) of one call of `fn`, by a pre-hook."""
    passes = [0]
    hook = model.register_forward_pre_hook(lambda *_: passes.__setitem__(0, passes[0] + 1))
    try:
        result = fn()
    finally:
        hook.remove()
    return passes[0], result


def bench_generation(
    size: str, backend: HFBackend, args: argparse.Namespace, texts: list[str]
) -> dict[str, float]:
    """Tokens/s of each generation variant."""
    requests = [GenerationRequest(prompt=t, max_new_tokens=args.new_tokens, stop=()) for t in texts]
    warm = backend.generate(requests[: args.batch_size], batch_size=args.batch_size)
    assert all(r.n_tokens == args.new_tokens for r in warm), "an answer ended early"
    bare_loop(backend, texts[: args.batch_size], args.batch_size, args.new_tokens)
    pooled = args.batch_size * loading.DECODE_BATCHES
    runs: dict[str, Callable[[], object]] = {
        "bare": lambda: bare_loop(backend, texts, args.batch_size, args.new_tokens),
        "bare, pooled": lambda: bare_loop(backend, texts, pooled, args.new_tokens),
        "hakari": lambda: backend.generate(requests, batch_size=args.batch_size),
        "hakari, one batch": lambda: one_batch_at_a_time(backend, requests, args.batch_size),
    }
    if hasattr(backend.model, "generate_batch"):
        runs["generate_batch"] = continuous_batching(
            backend, backend.encode(requests), args.new_tokens
        )
        fewest = runs["generate_batch"]()  # its warm-up: CUDA graphs, the paged cache's sizing
        assert fewest == args.new_tokens, f"generate_batch ended a row at {fewest} tokens"
    else:
        print(f"{size}: no `generate_batch` in transformers {transformers_version}", flush=True)
    best = best_of_rounds(runs, args.rounds, alternate=True, sync=sync_of(args.device))
    print(f"{size}: " + ", ".join(f"{k} {v:.1f} s" for k, v in best.items()), flush=True)
    return {k: len(texts) * args.new_tokens / v for k, v in best.items()}


def bench_loglik(
    size: str, backend: HFBackend, args: argparse.Namespace, requests: list[LoglikRequest]
) -> dict[str, Any]:
    """Requests/s, passes and answers of each log-likelihood variant."""
    hflm = lm_eval_loglik(backend, requests, args.hflm_batch or str(args.loglik_batch))
    if isinstance(hflm, str):
        print(f"{size}: the lm-eval HFLM row is skipped: {hflm}", flush=True)
    runs: dict[str, Callable[[], Scores]] = {
        "hakari": lambda: hakari_loglik(backend, requests, args.hakari_batch),
        **({} if isinstance(hflm, str) else {"HFLM": hflm}),
        "plain": lambda: plain_loglik(backend, requests, args.loglik_batch),
    }
    passes: dict[str, int] = {}
    scores: dict[str, Scores] = {}
    for name, run in runs.items():  # untimed, once: the warm-up, the passes, the answers
        passes[name], scores[name] = counted(backend.model, run)
    best = best_of_rounds(runs, args.rounds, alternate=True, sync=sync_of(args.device))
    print(f"{size}: " + ", ".join(f"{k} {v:.2f} s" for k, v in best.items()), flush=True)
    same, gap = {}, {}
    for name, theirs in scores.items():
        pairs = list(zip(theirs, scores["hakari"], strict=True))
        same[name] = sum(letter(a) == letter(b) for a, b in pairs)
        gap[name] = max(abs(x - y) for a, b in pairs for x, y in zip(a, b, strict=True))
    rate = {k: len(requests) / v for k, v in best.items()}
    return {"rate": rate, "passes": passes, "same": same, "gap": gap}


def letter(scores: list[float]) -> int:
    """The answer: the letter of the highest log-prob."""
    return max(range(len(scores)), key=scores.__getitem__)


def sync_of(device: str) -> Callable[[], None] | None:
    return torch.cuda.synchronize if device.startswith("cuda") else None


def bench_size(
    size: str, args: argparse.Namespace, tokenizer: PreTrainedTokenizerFast
) -> tuple[str, int, dict[str, float], dict[str, Any]]:
    """(size, parameters, generation tokens/s, log-likelihood figures) of one model shape."""
    model = random_model(size, getattr(torch, args.dtype), args.device)
    params = sum(p.numel() for p in model.parameters())
    backend = HFBackend(model, tokenizer, name=f"random-qwen2.5-{size}", revision="random")
    print(f"{size}: the pass cost measured at load {backend.serving_record()}", flush=True)
    parts = args.parts.split(",")
    generation = (
        bench_generation(size, backend, args, prompts(args.n)) if "generate" in parts else {}
    )
    lo, hi = map(int, args.context.split("-"))
    requests = loglik_requests(args.loglik_n, lo, hi)
    loglik = bench_loglik(size, backend, args, requests) if "loglik" in parts else {}
    return size, params, generation, loglik


def print_generation(
    args: argparse.Namespace, rows: list[tuple[str, int, dict[str, float]]]
) -> None:
    pooled = args.batch_size * loading.DECODE_BATCHES
    print(
        f"\nGeneration: {args.n} prompts of 32-256 tokens, batch {args.batch_size}, "
        f"{args.new_tokens} new tokens each; tokens/s\n\n"
        "| model shape | parameters | hakari | hakari, one batch at a time | bare `generate`, "
        f"batch {args.batch_size} | bare, batch {pooled} | `generate_batch` | hakari / bare | "
        f"hakari / bare {pooled} | hakari / `generate_batch` |\n" + "|---" * 10 + "|"
    )
    for size, params, rate in rows:
        cb = rate.get("generate_batch")
        cells = [f"{rate[k]:,.0f}" for k in ("hakari", "hakari, one batch", "bare", "bare, pooled")]
        cells += [f"{cb:,.0f}" if cb else "—"]
        cells += [f"{rate['hakari'] / rate[k]:.2f}×" for k in ("bare", "bare, pooled")]
        cells += [f"{rate['hakari'] / cb:.2f}×" if cb else "—"]
        print(f"| Qwen2.5-{size} (random) | {params / 1e9:.2f} B | " + " | ".join(cells) + " |")


def print_loglik(args: argparse.Namespace, rows: list[tuple[str, dict[str, Any]]]) -> None:
    hakari_batch = f"batch {args.hakari_batch}" if args.hakari_batch else "its own batches"
    print(
        f"\nLog-likelihood: {args.loglik_n} requests, a context of {args.context} words and "
        f"four one-token letters; hakari at {hakari_batch}, lm-eval `HFLM` at batch "
        f"{args.hflm_batch or args.loglik_batch}, the plain loop at {args.loglik_batch}; "
        "requests/s, forward passes, answers (the letter) as hakari's, the largest log-prob "
        "difference from hakari's\n\n"
        "| model shape | hakari | `HFLM` | plain loop | hakari / `HFLM` | hakari / plain | "
        "passes: hakari, `HFLM`, plain | same answers: `HFLM`, plain | largest difference: "
        "`HFLM`, plain |\n" + "|---" * 9 + "|"
    )
    n = args.loglik_n
    for size, r in rows:
        rate, passes, same, gap = r["rate"], r["passes"], r["same"], r["gap"]
        ratio = {k: rate["hakari"] / v for k, v in rate.items()}

        def cell(table: dict[str, Any], fmt: str, name: str = "HFLM", end: str = "") -> str:
            return format(table[name], fmt) + end if name in table else "—"

        print(
            f"| Qwen2.5-{size} (random) | {rate['hakari']:,.0f} | {cell(rate, ',.0f')} | "
            f"{rate['plain']:,.0f} | {cell(ratio, '.2f', end='×')} | {ratio['plain']:.2f}× | "
            f"{passes['hakari']}, {cell(passes, 'd')}, {passes['plain']} | "
            f"{cell(same, 'd', end=f'/{n}')}, {same['plain']}/{n} | "
            f"{cell(gap, '.2g')}, {gap['plain']:.2g} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.5b,1.5b,7b")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--parts", default="generate,loglik", help="generate, loglik or both")
    parser.add_argument("--n", type=int, default=256, help="generation prompts")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--loglik-n", type=int, default=1024, help="log-likelihood requests")
    parser.add_argument("--context", default="150-400", help="context words, LOW-HIGH")
    parser.add_argument("--loglik-batch", type=int, default=32, help="the plain loop's batch")
    parser.add_argument("--hflm-batch", default="", help="HFLM's batch_size (--loglik-batch)")
    parser.add_argument("--hakari-batch", type=int, default=0, help="0: HFBackend's own")
    parser.add_argument("--rounds", type=int, default=2)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:  # the code path on the CPU, in seconds: the GPU numbers need a GPU run
        args.sizes, args.device, args.dtype = "tiny", "cpu", "float32"
        args.n, args.batch_size, args.new_tokens, args.rounds = 4, 2, 2, 1
        args.loglik_n, args.context, args.loglik_batch = 8, "8-24", 4
    elif args.device.startswith("cuda") and not torch.cuda.is_available():
        skip("no CUDA device (--device cpu --sizes tiny runs on the CPU)")
    tokenizer = word_tokenizer()
    rows = []
    for size in args.sizes.split(","):
        rows.append(bench_size(size, args, tokenizer))
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    print(f"\n{device}, {args.dtype}, best of {args.rounds} interleaved rounds")
    if "generate" in args.parts:
        print_generation(args, [(size, params, gen) for size, params, gen, _ in rows])
    if "loglik" in args.parts:
        print_loglik(args, [(size, loglik) for size, _, _, loglik in rows])


if __name__ == "__main__":
    main()
