"""The decoding loop of one generation batch, in place of `model.generate`.

`generate` computes every row of a batch until its last row ends, and prefills a prompt
once for each row that asks for it. Label answers end at very different lengths (a
label decided after three tokens beside a line that runs to its 24-character limit),
and the greedy and constrained requests of one run ask for the same prompts. So here:

* each distinct prompt of the batch is prefilled once, and every row on that prompt
  takes its first token from that prompt's logits (a constrained label answer often
  ends with it and never needs a cache of its own);
* a row leaves the batch as soon as it ends: its rows of the key/value cache are
  dropped (`Cache.batch_select_indices`), so later steps compute only the live rows;
* prompts that share a token prefix (the templates of one instance, one template's
  instruction) prefill it once (`prefill`): the distinct prefixes run first, their
  keys and values are copied to every prompt that starts with them, and the prompts'
  rests run against those copies, each left-padded after its prefix, the padding
  masked and positions counted on, so every row sees what it would on its whole
  prompt. The prefill is the larger part of a short answer's cost; this is done only
  where it saves a tenth of the tokens the model reads.

Each step does what `generate`'s loop does for a decoder-only model: the inputs come
from the model's own `prepare_inputs_for_generation`, position ids are counted from the
left-padded attention mask (padding at 0), the last position's logits are taken in
float32 and only they are computed (`logits_to_keep=1` where the model takes it). A
row's numbers can differ from `generate`'s only at float rounding level, as they do
between any two batch compositions.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from transformers import PreTrainedModel

from hakari.backends.hf.roomy import make_roomy
from hakari.backends.hf.rows import Row
from hakari.backends.hf.scheduling import left_pad, prefix_groups

# the live rows and their scores [rows, vocab] -> the scores to take the argmax of
ScoreHook = Callable[[list[Row], torch.Tensor], torch.Tensor]
TokenHook = Callable[[Row, int], None]


@torch.inference_mode()
def decode_rows(
    step: ModelStep,
    rows: list[Row],
    *,
    pad_token_id: int,
    process_scores: ScoreHook,
    advance: TokenHook,
) -> None:
    """Generate every row until `advance` marks it done (its `done` flag)."""
    for row in rows:
        if row.max_new <= 0:
            row.done, row.finish = True, "length"
    live = [row for row in rows if not row.done]
    if not live:
        return
    device = next(step.model.parameters()).device
    prompt_of: dict[tuple[int, ...], int] = {}
    of_row = [prompt_of.setdefault(tuple(row.prompt), len(prompt_of)) for row in live]
    logits, cache, attention, positions = prefill(
        step, [list(p) for p in prompt_of], pad_token_id, device
    )
    make_roomy(cache)  # each step writes into free room, not a copy of the whole cache
    # the prompt (cache row) of each live row where rows share prompts; None: row i is
    # cache row i, as it is after every step
    shared = torch.tensor(of_row, device=device) if len(prompt_of) < len(live) else None
    while True:
        scores = logits if shared is None else logits.index_select(0, shared)
        tokens = process_scores(live, scores).argmax(dim=-1).tolist()
        for row, token in zip(live, tokens, strict=True):
            advance(row, int(token))
        keep = [i for i, row in enumerate(live) if not row.done]
        if not keep:
            return
        if shared is not None or len(keep) < len(live):
            kept = torch.tensor(keep, device=device)
            index = kept if shared is None else shared[kept]
            cache.batch_select_indices(index)
            attention, positions = attention[index], positions[index]
            shared = None
        live = [live[i] for i in keep]
        next_ids = torch.tensor([[tokens[i]] for i in keep], dtype=torch.long, device=device)
        attention = torch.cat([attention, attention.new_ones((len(live), 1))], dim=-1)
        positions = positions[:, -1:] + 1
        logits, cache = step(next_ids, attention, positions, cache=cache)


def prefill(
    step: ModelStep, prompts: list[list[int]], pad_token_id: int, device: torch.device
) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
    """The prompts' last-position logits, their cache, attention mask and positions;
    shared prefixes once where that saves enough (module docstring)."""
    split = prefix_split(prompts)
    if split is None:
        ids, attention = left_pad(prompts, pad_token_id)
        ids, attention = ids.to(device), attention.to(device)
        positions = _positions(attention)
        logits, cache = step(ids, attention, positions, cache=None)
        return logits, cache, attention, positions
    heads, head_of = split
    head_ids, head_mask = left_pad(heads, pad_token_id)
    head_ids, head_mask = head_ids.to(device), head_mask.to(device)
    _, cache = step(head_ids, head_mask, _positions(head_mask), cache=None)
    index = torch.tensor(head_of, device=device)
    cache.batch_select_indices(index)
    rests = [p[len(heads[h]) :] for p, h in zip(prompts, head_of, strict=True)]
    rest_ids, rest_mask = left_pad(rests, pad_token_id)
    attention = torch.cat([head_mask[index], rest_mask.to(device)], dim=-1)
    positions = _positions(attention)[:, head_ids.shape[1] :]
    logits, cache = step.extend(rest_ids.to(device), attention, positions, cache)
    return logits[:, -1], cache, attention, positions


# common-prefix lengths at which prompts may be grouped (`prefix_split` takes the cheapest):
# a chat template's system prompt is shared by every prompt of a batch, one instance's
# templates share its text after it; a low bar would put them all in one group that
# shares only the system prompt
SPLIT_MIN_SHARED = (16, 32, 64, 128)


def prefill_tokens(prompts: list[list[int]]) -> int:
    """The tokens `prefill` reads for these prompts, padding included."""
    split = _worthwhile_split(prompts)
    return split[0] if split is not None else len(prompts) * max(map(len, prompts), default=0)


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
    if best is None or best[0] > 0.9 * len(prompts) * max(map(len, prompts)):
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


def _positions(attention: torch.Tensor) -> torch.Tensor:
    """Position ids counted over the unpadded tokens (padding at 0), as `generate` does."""
    return attention.cumsum(-1).sub(1).masked_fill(attention == 0, 0)


class ModelStep:
    """One forward pass of the model as `generate` makes it; returns the last position's
    float32 logits and the cache."""

    def __init__(self, model: PreTrainedModel) -> None:
        self.model = model
        accepted = set(inspect.signature(model.forward).parameters)
        self.takes_positions = "position_ids" in accepted
        self.takes_logits_to_keep = "logits_to_keep" in accepted
        # transformers 5.x renamed the cache argument and output field past_key_values ->
        # cache (the old name warns, then goes); use whichever this version takes
        prepare = inspect.signature(model.prepare_inputs_for_generation).parameters  # type: ignore[arg-type]
        self.cache_name = "cache" if "cache" in prepare else "past_key_values"

    def __call__(
        self,
        ids: torch.Tensor,
        attention: torch.Tensor,
        positions: torch.Tensor,
        *,
        cache: Any,
    ) -> tuple[torch.Tensor, Any]:
        kwargs: dict[str, Any] = {"attention_mask": attention, "use_cache": True}
        if self.takes_positions:
            kwargs["position_ids"] = positions
        if self.takes_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        kwargs[self.cache_name] = cache
        inputs = self.model.prepare_inputs_for_generation(  # type: ignore[operator]
            ids, is_first_iteration=cache is None, **kwargs
        )
        out = self.model(**inputs, return_dict=True)
        return out.logits[:, -1].to(dtype=torch.float32, copy=True), out[self.cache_name]

    def extend(
        self,
        ids: torch.Tensor,
        attention: torch.Tensor,
        positions: torch.Tensor,
        cache: Any,
        keep: int = 1,
    ) -> tuple[torch.Tensor, Any]:
        """Several tokens a row on top of `cache` (None: none yet), e.g. a prompt's rest
        after its shared prefix; the float32 logits of the last `keep` positions
        [rows, keep, vocab] and the cache. The model is called directly: `generate`'s
        input preparation keeps only the last token once a cache exists."""
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": attention,
            "use_cache": True,
            self.cache_name: cache,
        }
        if self.takes_positions:
            kwargs["position_ids"] = positions
        if self.takes_logits_to_keep:
            kwargs["logits_to_keep"] = keep
        out = self.model(**kwargs, return_dict=True)
        return out.logits[:, -keep:].to(dtype=torch.float32), out[self.cache_name]
