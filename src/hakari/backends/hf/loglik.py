"""Log-likelihood rows through the transformers model, each shared token prefix once.

A batch's rows (model inputs: context + continuation[:-1]) form a tree of shared
prefixes (`prefixes.prefix_tree`): a space's prompts share their template's
instruction and few-shot examples, and a prompt's multi-token continuations share the
whole prompt. `tree.TreeWalk` runs each shared part once; each row's last `keep`
positions are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from hakari.backends.hf.prefixes import prefix_tree
from hakari.backends.hf.step import ModelStep
from hakari.backends.hf.tree import TreeWalk


def score_rows(
    step: ModelStep, rows: Sequence[tuple[int, ...]], keep: int, pad: int, device: torch.device
) -> torch.Tensor:
    """Log-softmax of the last `keep` positions of each row: [rows, keep, vocab]."""
    out: list[torch.Tensor | None] = [None] * len(rows)

    def scored(picked: list[int], logits: torch.Tensor, _cache: Any, _mask: torch.Tensor) -> None:
        for row, scores in zip(picked, torch.log_softmax(logits, dim=-1), strict=True):
            out[row] = scores

    TreeWalk(step, rows, keep, pad, device, scored).run(prefix_tree(rows, keep))
    return torch.stack([t for t in out if t is not None])
