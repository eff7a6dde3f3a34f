"""The transformers backend at the sizes people evaluate, on a GPU: hakari's `HFBackend`
against a bare batched `model.generate` loop, tokens/s and their ratio, for randomly
initialised models with the shapes of Qwen2.5-0.5B, 1.5B and 7B (speed does not depend
on the weights), in bf16.

    PYTHONPATH=src python benchmarks/bench_hf_gpu.py --sizes 0.5b,1.5b,7b     # CUDA, bf16
    PYTHONPATH=src python benchmarks/bench_hf_gpu.py --sizes tiny --device cpu --dtype float32

Both loops see the same prompts (random words of a word-level tokenizer as large as
Qwen's vocabulary, 32-256 tokens) in the same length-sorted batches and generate exactly
`--new-tokens` tokens each: the EOS row of the output layer is zeroed, so a random model
never picks it (its logit 0 lies below the maximum of 152k random logits), and the bare
loop also sets `min_new_tokens`. HFBackend runs with no stop string and no character
budget (the like-for-like setting; hakari's stop rule and budgets are timed on the CPU by
bench_generate.py). Best of interleaved rounds. Beside the bare loop at `--batch-size`:
HFBackend with its decode pool held to one batch, and the bare loop at the pool's rows
(`loading.DECODE_BATCHES` batches; every answer here is as long as the others, so a
pooled run is a bigger batch, and that is the fair comparison for it).
"""

from __future__ import annotations

import argparse
import random

import torch
from timing import add_smoke_flag, best_of_rounds, skip
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from hakari.backends.base import GenerationRequest
from hakari.backends.hf import HFBackend, loading

VOCAB = 151936  # Qwen2.5's
SHAPES = {  # hidden, intermediate, layers, attention heads, key-value heads, tied embeddings
    "tiny": (64, 128, 2, 4, 2, True),
    "0.5b": (896, 4864, 24, 14, 2, True),
    "1.5b": (1536, 8960, 28, 12, 2, True),
    "7b": (3584, 18944, 28, 28, 4, False),
}
EOS, PAD = 1, 0


def word_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {f"w{i}": i for i in range(VOCAB)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="w1", pad_token="w0")


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


def prompts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(f"w{rng.randrange(2, VOCAB)}" for _ in range(rng.randint(32, 256)))
            for _ in range(n)]  # fmt: skip


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


def bench_size(
    size: str, args: argparse.Namespace, tokenizer: PreTrainedTokenizerFast, texts: list[str]
) -> tuple[str, int, dict[str, float]]:
    """(size, parameters, tokens/s of each variant) for one model shape."""
    model = random_model(size, getattr(torch, args.dtype), args.device)
    params = sum(p.numel() for p in model.parameters())
    backend = HFBackend(model, tokenizer, name=f"random-qwen2.5-{size}", revision="random")
    print(f"{size}: the pass cost measured at load {backend.serving_record()}", flush=True)
    requests = [GenerationRequest(prompt=t, max_new_tokens=args.new_tokens, stop=()) for t in texts]
    warm = backend.generate(requests[: args.batch_size], batch_size=args.batch_size)
    assert all(r.n_tokens == args.new_tokens for r in warm), "an answer ended early"
    bare_loop(backend, texts[: args.batch_size], args.batch_size, args.new_tokens)
    pooled = args.batch_size * loading.DECODE_BATCHES
    runs = {
        "bare": lambda: bare_loop(backend, texts, args.batch_size, args.new_tokens),
        "bare, pooled": lambda: bare_loop(backend, texts, pooled, args.new_tokens),
        "hakari": lambda: backend.generate(requests, batch_size=args.batch_size),
        "hakari, one batch": lambda: one_batch_at_a_time(backend, requests, args.batch_size),
    }
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else None
    best = best_of_rounds(runs, args.rounds, alternate=True, sync=sync)
    print(f"{size}: " + ", ".join(f"{k} {v:.1f} s" for k, v in best.items()), flush=True)
    tokens = len(texts) * args.new_tokens
    return size, params, {k: tokens / v for k, v in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.5b,1.5b,7b")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--n", type=int, default=256, help="prompts")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:  # the code path on the CPU, in seconds: the GPU numbers need a GPU run
        args.sizes, args.device, args.dtype = "tiny", "cpu", "float32"
        args.n, args.batch_size, args.new_tokens, args.rounds = 4, 2, 2, 1
    elif args.device.startswith("cuda") and not torch.cuda.is_available():
        skip("no CUDA device (--device cpu --sizes tiny runs on the CPU)")
    tokenizer, texts = word_tokenizer(), prompts(args.n)
    rows = []
    for size in args.sizes.split(","):
        rows.append(bench_size(size, args, tokenizer, texts))
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    print(
        f"\n{device}, {args.dtype}, {args.n} prompts of 32-256 tokens, batch {args.batch_size}, "
        f"{args.new_tokens} new tokens each, best of {args.rounds} interleaved rounds\n"
    )
    pooled = args.batch_size * loading.DECODE_BATCHES
    print(
        "| model shape | parameters | hakari tokens/s | hakari, one batch at a time | bare "
        f"`generate`, batch {args.batch_size} | bare, batch {pooled} | hakari / bare | "
        f"hakari / bare {pooled} |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for size, params, rate in rows:
        print(
            f"| Qwen2.5-{size} (random) | {params / 1e9:.2f} B | {rate['hakari']:,.0f} | "
            f"{rate['hakari, one batch']:,.0f} | {rate['bare']:,.0f} | "
            f"{rate['bare, pooled']:,.0f} | {rate['hakari'] / rate['bare']:.2f}× | "
            f"{rate['hakari'] / rate['bare, pooled']:.2f}× |"
        )


if __name__ == "__main__":
    main()
