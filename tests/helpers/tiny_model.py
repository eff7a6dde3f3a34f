"""The tiny random model: a randomly initialised 2-layer Llama on a real tokenizer, one
definition for the tests' `tiny_random_folder` (tests/conftest.py) and the engine's
overhead benchmark (benchmarks/bench_overhead.py, which imports it as bench_openai.py
imports tests.helpers.servers).

The one decision: large initial weights (`initializer_range=0.5`) make the next-token
distribution peaked, so greedy picks are far from float ties and comparisons between
code paths (hakari's engine against `model.generate`, the CPU against CUDA) are
meaningful. Seeded, so every caller gets the same weights for the same shapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM, PreTrainedTokenizerBase


def tiny_llama(
    tokenizer: PreTrainedTokenizerBase,
    *,
    hidden_size: int = 32,
    max_positions: int = 512,
    layers: int = 2,
    heads: int = 4,
) -> LlamaForCausalLM:
    """A random Llama of 2 layers, 4 heads (half as many key-value heads, at least 1),
    the feed-forward twice `hidden_size`, tied embeddings, the vocabulary and special
    tokens of `tokenizer`; in eval mode, seeded with 0."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        max_position_embeddings=max_positions,
        initializer_range=0.5,  # peaked distributions: answers far from float ties
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()
