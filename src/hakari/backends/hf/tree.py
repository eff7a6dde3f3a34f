"""A batch of token rows run as a tree of shared prefixes (`prefixes.prefix_tree`).

Each node's tokens run once (batch 1) on top of its parent's keys and values; the rows
that end under a node run their remaining tokens in left-padded batches of similar
length (`scheduling.by_length_runs`) against copies of them, the padding masked and
positions continuing from the prefix, so the model computes what it would on each whole
row (up to float rounding). The
log-likelihood pass reads each row's last positions (`loglik.py`); the generation
prefill also keeps each row's keys and values to decode from (`prefill.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from hakari.backends.hf.internals import copy_cache, repeat_rows
from hakari.backends.hf.prefixes import PrefixNode
from hakari.backends.hf.scheduling import by_length_runs, left_pad
from hakari.backends.hf.step import PASS_TOKENS, ModelStep

# the rows that end under one node (indices into the walk's rows), the float32 logits of
# their last `keep` positions [rows, keep, vocab], their cache and attention mask
OnRows = Callable[[list[int], torch.Tensor, Any, torch.Tensor], None]


@dataclass
class TreeWalk:
    step: ModelStep
    rows: Sequence[Sequence[int]]
    keep: int
    pad: int
    device: torch.device
    on_rows: OnRows

    @torch.inference_mode()
    def run(self, root: PrefixNode) -> None:
        self.node(root, cache=None)

    def node(self, node: PrefixNode, cache: Any) -> None:
        """The node's own tokens on top of `cache`, then its children (each on a copy of
        the keys and values, the last user on the original), then its rows."""
        if node.end > node.start:
            ids = torch.tensor([self.rows[node.first][node.start : node.end]], device=self.device)
            attention = torch.ones(1, node.end, dtype=torch.long, device=self.device)
            positions = torch.arange(node.start, node.end, device=self.device)[None]
            _, cache = self.step.extend(ids, attention, positions, cache, keep=1)
        users = len(node.children) + bool(node.rows)  # the rows' runs share one original
        for n, child in enumerate(node.children):
            last_user = n == users - 1
            self.node(child, cache if last_user or cache is None else copy_cache(cache))
        if node.rows:
            lengths = [len(self.rows[i]) - node.end for i in node.rows]
            runs = by_length_runs(lengths, self.step.pass_tokens)[1]
            for n, run in enumerate(runs):
                last = n == len(runs) - 1
                own = cache if last or cache is None else copy_cache(cache)
                self.rests([node.rows[k] for k in run], node.end, own)

    def rests(self, picked: list[int], shared: int, cache: Any) -> None:
        """Each picked row's tokens past the `shared` ones `cache` holds (None: none)."""
        rests = [list(self.rows[i][shared:]) for i in picked]
        # a run of short rests still has the `keep` positions the caller reads (masked)
        rest, rest_mask = left_pad(rests, self.pad, min_width=self.keep)
        attention = torch.cat([torch.ones(len(picked), shared, dtype=torch.long), rest_mask], 1)
        attention = attention.to(self.device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)[:, shared:]
        if cache is not None and len(picked) > 1:
            repeat_rows(cache, len(picked))
        logits, cache = self.step.extend(
            rest.to(self.device), attention, positions, cache, keep=self.keep
        )
        self.on_rows(picked, logits, cache, attention)


def tree_tokens(
    root: PrefixNode, rows: Sequence[Sequence[int]], pass_tokens: int = PASS_TOKENS
) -> int:
    """The tokens a walk of `root` reads, padding included, and `pass_tokens` for each
    forward pass it makes."""
    tokens = root.end - root.start + (pass_tokens if root.end > root.start else 0)
    if root.rows:
        tokens += by_length_runs([len(rows[i]) - root.end for i in root.rows], pass_tokens)[0]
    return tokens + sum(tree_tokens(child, rows, pass_tokens) for child in root.children)


def attention_pairs(root: PrefixNode, rows: Sequence[Sequence[int]]) -> int:
    """The (query, key) pairs a walk of `root` scores in attention: each token against
    every token before it in its row, the shared part's own or its parent's (padding
    left out). A flat plan reads each row's shared part again, and its attention again."""
    own = root.end - root.start
    pairs = own * root.start + own * (own + 1) // 2
    for i in root.rows:
        rest = len(rows[i]) - root.end
        pairs += rest * root.end + rest * (rest + 1) // 2
    return pairs + sum(attention_pairs(child, rows) for child in root.children)
