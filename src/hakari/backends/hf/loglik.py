"""Log-likelihood rows through the transformers model, each shared token prefix once.

A batch's rows (model inputs: context + continuation[:-1]) form a tree of shared
prefixes (`prefixes.prefix_tree`): a space's prompts share their template's
instruction and few-shot examples, and a prompt's multi-token continuations share the
whole prompt. `tree.TreeWalk` runs each shared part once, where that reads fewer tokens
(a pass's fixed cost counted, `ModelStep.pass_tokens`) than the rows in runs of similar
length from the root; each row's last `keep` positions are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from hakari.backends.hf.prefixes import PrefixNode, prefix_tree
from hakari.backends.hf.step import PASS_TOKENS, ModelStep
from hakari.backends.hf.tree import TreeWalk, attention_pairs, tree_tokens


def score_rows(
    step: ModelStep, rows: Sequence[tuple[int, ...]], keep: int, pad: int, device: torch.device
) -> torch.Tensor:
    """Log-softmax of the last `keep` positions of each row: [rows, keep, vocab]."""
    out: list[torch.Tensor | None] = [None] * len(rows)

    def scored(picked: list[int], logits: torch.Tensor, _cache: Any, _mask: torch.Tensor) -> None:
        for row, scores in zip(picked, torch.log_softmax(logits, dim=-1), strict=True):
            out[row] = scores

    plan = rows_plan(rows, keep, step.pass_tokens, step.pair_tokens)
    TreeWalk(step, rows, keep, pad, device, scored).run(plan)
    return torch.stack([t for t in out if t is not None])


def rows_plan(
    rows: Sequence[tuple[int, ...]], keep: int, pass_tokens: int, pair_tokens: float = 0.0
) -> PrefixNode:
    """The tree of shared prefixes, or no shared part at all (every row from the root,
    in runs of similar length) where that costs less with `pass_tokens` a pass and
    `pair_tokens` for each pair attention scores (`passcost.attention_pair_tokens`): on a
    device whose pass costs far more than its tokens (a GPU), a shared part run on its
    own costs more than it saves, unless the rows' attention over it, read again in each
    row, costs more still (a tiny model on a CPU, where attention is most of the work).
    At the CPU-tuned cost (`PASS_TOKENS`, what a pass of the packaged model on a CPU is
    floored at) always the tree, as measured there (bench_space), so that such runs
    score as before to the bit."""
    tree = prefix_tree(rows, keep)
    if pass_tokens <= PASS_TOKENS:
        return tree
    flat = PrefixNode(0, 0, 0, list(range(len(rows))), [])

    def cost(plan: PrefixNode) -> float:
        return tree_tokens(plan, rows, pass_tokens) + pair_tokens * attention_pairs(plan, rows)

    return tree if cost(tree) < cost(flat) else flat
