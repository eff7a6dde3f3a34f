"""Log-likelihood rows through the transformers model, each shared token prefix once.

A batch's rows (model inputs: context + continuation[:-1]) form a tree of shared
prefixes (`scheduling.prefix_tree`): a space's prompts share their template's
instruction and few-shot examples, and a prompt's multi-token continuations share the
whole prompt. Each node's tokens run once (batch 1) on top of its parent's keys and
values; the rows that end under a node run their remaining tokens in one left-padded
batch against copies of them, the padding masked and positions continuing from the
prefix, so the model computes what it would on each whole row (up to float rounding).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from hakari.backends.hf.decode import ModelStep
from hakari.backends.hf.scheduling import PrefixNode, left_pad, prefix_tree


def score_rows(
    step: ModelStep, rows: Sequence[tuple[int, ...]], keep: int, pad: int, device: torch.device
) -> torch.Tensor:
    """Log-softmax of the last `keep` positions of each row: [rows, keep, vocab]."""
    walk = _TreeWalk(step, rows, keep, pad, device, [None] * len(rows))
    with torch.inference_mode():
        walk.node(prefix_tree(rows, keep), cache=None)
    return torch.stack([t for t in walk.out if t is not None])


@dataclass
class _TreeWalk:
    step: ModelStep
    rows: Sequence[tuple[int, ...]]
    keep: int
    pad: int
    device: torch.device
    out: list[torch.Tensor | None]

    def node(self, node: PrefixNode, cache: Any) -> None:
        """The node's own tokens on top of `cache`, then its children (each on a copy of
        the keys and values, the last user on the original), then its rows."""
        if node.end > node.start:
            ids = torch.tensor([self.rows[node.first][node.start : node.end]], device=self.device)
            attention = torch.ones(1, node.end, dtype=torch.long, device=self.device)
            positions = torch.arange(node.start, node.end, device=self.device)[None]
            _, cache = self.step.extend(ids, attention, positions, cache, keep=1)
        users = len(node.children) + bool(node.rows)
        for n, child in enumerate(node.children):
            last_user = n == users - 1
            self.node(child, cache if last_user or cache is None else copy.deepcopy(cache))
        if node.rows:
            scores = self.rests(node.rows, node.end, cache)
            for row, i in enumerate(node.rows):
                self.out[i] = scores[row]

    def rests(self, picked: list[int], shared: int, cache: Any) -> torch.Tensor:
        """Each picked row's tokens past the `shared` ones `cache` holds (None: none)."""
        rest, rest_mask = left_pad([list(self.rows[i][shared:]) for i in picked], self.pad)
        attention = torch.cat([torch.ones(len(picked), shared, dtype=torch.long), rest_mask], 1)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)[:, shared:]
        if cache is not None and len(picked) > 1:
            cache.batch_repeat_interleave(len(picked))
        logits, _ = self.step.extend(
            rest.to(self.device),
            attention.to(self.device),
            positions.to(self.device),
            cache,
            keep=self.keep,
        )
        return torch.log_softmax(logits, dim=-1)
