"""The prefill of one generation batch: each distinct prompt's last-position logits and
the key/value cache the decoding loop (`decode.py`) goes on from, shared prefixes once.

The plan that reads the fewest tokens (`prefill_tokens`, which the scheduler also uses
to cut batches) is taken; one that shares prefixes only where it reads a tenth fewer
tokens than a single pass:

* one left-padded pass over the whole prompts;
* a tree of shared prefixes (`tree.py`; plain key/value caches): a space's templates
  share their instruction, one template's prompts its instruction and shots, one
  instance's templates its text after a chat template's system prompt. Each shared part
  runs once; each group's keys and values are then left-padded to the batch's width and
  stacked into one cache, the padding masked and positions counted on, so every row sees
  what it would on its whole prompt (up to float rounding);
* two passes (caches whose layers cannot be padded so, e.g. sliding windows): the
  distinct prefixes of neighbouring prompts first, their keys and values copied to each
  prompt that starts with them, then the rests, each left-padded after its prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from hakari.backends.hf.internals import (
    cache_layers,
    is_plain,
    keep_rows,
    keys_values,
    release_layer,
    set_cache_layers,
)
from hakari.backends.hf.prefixes import PrefixNode, prefix_groups, prefix_tree
from hakari.backends.hf.roomy import RoomyLayer, stacked_layer
from hakari.backends.hf.scheduling import left_pad
from hakari.backends.hf.step import PASS_TOKENS, ModelStep, positions_of
from hakari.backends.hf.tree import TreeWalk, tree_tokens

WORTHWHILE = 0.9  # a plan that shares prefixes must read at most this share of one pass

# the prompts' last-position float32 logits, their cache, attention mask and positions
Prefilled = tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]


def prefill(
    step: ModelStep, prompts: list[list[int]], pad_token_id: int, device: torch.device
) -> Prefilled:
    """The prompts' prefill by the plan that reads the fewest tokens (module docstring)."""
    plan = _plan_cost(prompts, step.plain_cache, step.pass_tokens)[1]
    if isinstance(plan, PrefixNode):
        prefilled = _tree_pass(step, prompts, plan, pad_token_id, device)
        if prefilled is not None:
            return prefilled
        step.plain_cache = False  # the model's cache has other layers: plan again
        return prefill(step, prompts, pad_token_id, device)
    if plan is not None:
        return _split_pass(step, prompts, plan, pad_token_id, device)
    ids, attention = left_pad(prompts, pad_token_id)
    ids, attention = ids.to(device), attention.to(device)
    positions = positions_of(attention)
    logits, cache = step(ids, attention, positions, cache=None)
    return logits, cache, attention, positions


def prefill_tokens(prompts: list[list[int]], *, tree: bool, pass_tokens: int = PASS_TOKENS) -> int:
    """The tokens `prefill` reads for these prompts, padding included, and `pass_tokens`
    a forward pass; `tree`: the model's cache can be stacked from a tree's groups."""
    return _plan_cost(prompts, tree, pass_tokens)[0]


# a tree, a two-pass split (heads, each prompt's head) or None: one pass
Plan = PrefixNode | tuple[list[list[int]], list[int]] | None


def _plan_cost(prompts: list[list[int]], tree: bool, pass_tokens: int) -> tuple[int, Plan]:
    """The cheapest plan and the tokens it reads; one that shares prefixes only where it
    reads at most `WORTHWHILE` of one pass."""
    one_pass = len(prompts) * max(map(len, prompts), default=0) + pass_tokens
    if len(prompts) < 2 or min(map(len, prompts)) < 2:
        return one_pass, None
    plans: list[tuple[int, Plan]] = []
    split = _worthwhile_split(prompts)
    if split is not None:
        plans.append((split[0] + 2 * pass_tokens, (split[1], split[2])))
    if tree:
        root = prefix_tree(prompts, keep=1)
        plans.append((tree_tokens(root, prompts, pass_tokens), root))
    cost, plan = min(plans, key=lambda p: p[0], default=(one_pass, None))
    return (cost, plan) if cost <= WORTHWHILE * one_pass else (one_pass, None)


@dataclass
class _Group:
    """Rows that ended under one tree node: their prompts, logits, cache and mask."""

    picked: list[int]
    logits: torch.Tensor
    cache: Any
    attention: torch.Tensor


def _tree_pass(
    step: ModelStep,
    prompts: list[list[int]],
    root: PrefixNode,
    pad_token_id: int,
    device: torch.device,
) -> Prefilled | None:
    """The tree's groups stacked into one batch; None where the model's cache has layers
    other than plain ones (they cannot be left-padded)."""
    groups: list[_Group] = []

    def kept(picked: list[int], logits: torch.Tensor, cache: Any, attention: torch.Tensor) -> None:
        groups.append(_Group(picked, logits[:, -1], cache, attention))

    TreeWalk(step, prompts, 1, pad_token_id, device, kept).run(root)
    if not all(is_plain(layer) for g in groups for layer in cache_layers(g.cache)):
        return None
    width = max(g.attention.shape[1] for g in groups)
    index = [torch.tensor(g.picked, device=device) for g in groups]
    layers: list[RoomyLayer] = []
    for n in range(len(cache_layers(groups[0].cache))):
        parts = [
            (i, *keys_values(cache_layers(g.cache)[n])) for i, g in zip(index, groups, strict=True)
        ]
        layers.append(stacked_layer(parts, len(prompts), width))
        for g in groups:
            release_layer(g.cache, n)  # each group's copy goes as soon as it is stacked
    cache = groups[0].cache
    set_cache_layers(cache, layers)
    logits = torch.empty(len(prompts), groups[0].logits.shape[-1], device=device)
    attention = torch.zeros(len(prompts), width, dtype=torch.long, device=device)
    for i, g in zip(index, groups, strict=True):
        logits[i] = g.logits
        attention[i, width - g.attention.shape[1] :] = g.attention
    return logits, cache, attention, positions_of(attention)


def _split_pass(
    step: ModelStep,
    prompts: list[list[int]],
    split: tuple[list[list[int]], list[int]],
    pad_token_id: int,
    device: torch.device,
) -> Prefilled:
    """The distinct prefixes in one pass, their keys and values copied to each prompt
    that starts with them, the rests in a second pass against the copies."""
    heads, head_of = split
    head_ids, head_mask = left_pad(heads, pad_token_id)
    head_ids, head_mask = head_ids.to(device), head_mask.to(device)
    _, cache = step(head_ids, head_mask, positions_of(head_mask), cache=None)
    index = torch.tensor(head_of, device=device)
    keep_rows(cache, index)
    rests = [p[len(heads[h]) :] for p, h in zip(prompts, head_of, strict=True)]
    rest_ids, rest_mask = left_pad(rests, pad_token_id)
    attention = torch.cat([head_mask[index], rest_mask.to(device)], dim=-1)
    positions = positions_of(attention)[:, head_ids.shape[1] :]
    logits, cache = step.extend(rest_ids.to(device), attention, positions, cache)
    return logits[:, -1], cache, attention, positions


# common-prefix lengths at which prompts may be grouped (`prefix_split` takes the cheapest):
# a chat template's system prompt is shared by every prompt of a batch, one instance's
# templates share its text after it; a low bar would put them all in one group that
# shares only the system prompt
SPLIT_MIN_SHARED = (16, 32, 64, 128)


def prefix_split(prompts: list[list[int]]) -> tuple[list[list[int]], list[int]] | None:
    """The distinct prefixes to run first and each prompt's prefix (an index into them),
    or None where a single pass reads (almost) as few tokens. Prompts that share a
    prefix of at least one of `SPLIT_MIN_SHARED` tokens with their neighbours
    (`prefix_groups`, in the order given) split there, at the bar that reads the fewest
    tokens (heads and rests, each padded to its longest); a prompt alone splits where its
    rest is as long as the longest shared group's rest, so that neither pass is padded
    further for it."""
    split = _worthwhile_split(prompts)
    return None if split is None else (split[1], split[2])


def _worthwhile_split(
    prompts: list[list[int]],
) -> tuple[int, list[list[int]], list[int]] | None:
    """The cheapest split (tokens read, heads, each prompt's head), or None where it
    would save less than a tenth of a single pass."""
    if len(prompts) < 2 or min(map(len, prompts)) < 2:
        return None
    best: tuple[int, list[list[int]], list[int]] | None = None
    for shared_min in SPLIT_MIN_SHARED:
        split = _split_at(prompts, shared_min)
        if split is not None and (best is None or split[0] < best[0]):
            best = split
    if best is None or best[0] > WORTHWHILE * len(prompts) * max(map(len, prompts)):
        return None
    return best


def _split_at(
    prompts: list[list[int]], shared_min: int
) -> tuple[int, list[list[int]], list[int]] | None:
    """`prefix_split`'s split with groups sharing at least `shared_min` tokens, and the
    tokens its two passes read (padding included); None where no prompts group."""
    groups = prefix_groups(prompts, keep=1, shared_min=shared_min)
    shared = [(n, members) for n, members in groups if n]
    if not shared:
        return None
    rest_width = max(len(prompts[i]) - n for n, members in shared for i in members)
    heads: list[list[int]] = []
    head_of = [0] * len(prompts)
    for n, members in groups:
        cut = n or max(1, len(prompts[members[0]]) - rest_width)
        for i in members:
            head_of[i] = len(heads)
        heads.append(prompts[members[0]][:cut])
    rests = [len(p) - len(heads[h]) for p, h in zip(prompts, head_of, strict=True)]
    cost = len(heads) * max(map(len, heads)) + len(prompts) * max(rests)
    return cost, heads, head_of
