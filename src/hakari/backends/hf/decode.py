"""The decoding loop of one generation batch, in place of `model.generate`.

`generate` computes every row of a batch until its last row ends, and prefills a prompt
once for each row that asks for it. Label answers end at very different lengths (a
label decided after three tokens beside a line that runs to its 24-character limit),
and the greedy and constrained requests of one run ask for the same prompts. So here:

* each distinct prompt of the batch is prefilled once, and every row on that prompt
  takes its first token from that prompt's logits (a constrained label answer often
  ends with it and never needs a cache of its own);
* a row leaves the batch as soon as it ends: its rows of the key/value cache are
  dropped (`Cache.batch_select_indices`), so later steps compute only the live rows.

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

from hakari.backends.hf.rows import Row
from hakari.backends.hf.scheduling import left_pad

# the live rows and their scores [rows, vocab] -> the scores to take the argmax of
ScoreHook = Callable[[list[Row], torch.Tensor], torch.Tensor]
TokenHook = Callable[[Row, int], None]


@torch.inference_mode()
def decode_rows(
    model: PreTrainedModel,
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
    device = next(model.parameters()).device
    prompt_of: dict[tuple[int, ...], int] = {}
    of_row = [prompt_of.setdefault(tuple(row.prompt), len(prompt_of)) for row in live]
    ids, attention = left_pad([list(p) for p in prompt_of], pad_token_id)
    ids, attention = ids.to(device), attention.to(device)
    positions = attention.cumsum(-1).sub(1).masked_fill(attention == 0, 0)
    step = _Forward(model)
    logits, cache = step(ids, attention, positions, cache=None)
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


class _Forward:
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
