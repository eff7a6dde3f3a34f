"""One forward pass of the model as `generate` makes it (`ModelStep`), shared by the
decoding loop, its prefill and the log-likelihood tree."""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedModel

from hakari.backends.hf.internals import Forward, builds_plain_cache

# A forward pass's fixed cost counted in tokens, where it was not measured on the device
# (`passcost.py` measures it when the backend loads): a shared part or a run of rows of
# similar length is a pass of its own only where it saves more tokens than this. A
# 1-token pass of SmolLM2 on the 2-core CPU takes 54 ms (reading the weights), ~32
# tokens at a batched pass's rate; a tree's pass also copies its parent's keys and
# values and runs at batch 1, slower a token: on the default run's Japanese batches a
# tree counted 8% fewer tokens at 32 and ran 5-12% slower than two passes.
PASS_TOKENS = 64


def positions_of(attention: torch.Tensor) -> torch.Tensor:
    """Position ids counted over the unpadded tokens (padding at 0), as `generate` does."""
    return attention.cumsum(-1).sub(1).masked_fill(attention == 0, 0)


class ModelStep:
    """One forward pass of the model as `generate` makes it; returns the last position's
    float32 logits and the cache."""

    def __init__(self, model: PreTrainedModel) -> None:
        self.model = model
        self.forward = Forward.of(model)
        # whether the model's key/value cache is plain layers, which a prefill may build
        # from the groups of a tree of shared prefixes (`prefill.py`; it finds out and
        # sets this False where the model returns other layers)
        self.plain_cache = builds_plain_cache(model)
        # a pass's fixed cost in tokens, which the batch cuts weigh against the tokens a
        # plan saves (the backend sets the one measured on its device)
        self.pass_tokens = PASS_TOKENS
        # a (query, key) pair of attention in tokens (`passcost.attention_pair_tokens`)
        self.pair_tokens = 0.0

    def __call__(
        self,
        ids: torch.Tensor,
        attention: torch.Tensor,
        positions: torch.Tensor,
        *,
        cache: Any,
    ) -> tuple[torch.Tensor, Any]:
        forward = self.forward
        kwargs: dict[str, Any] = {"attention_mask": attention, "use_cache": True}
        if forward.takes_positions:
            kwargs["position_ids"] = positions
        if forward.takes_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        kwargs[forward.cache_name] = cache
        out = self.model(**forward.step_inputs(self.model, ids, **kwargs), return_dict=True)
        # a copy only where the output holds more positions than the last (no
        # `logits_to_keep`), which a view would keep alive; else the step's own tensor
        # (a greedy step over 96 rows of a 49k vocabulary copied 19 MB a step)
        whole = out.logits.shape[1] > 1
        return out.logits[:, -1].to(dtype=torch.float32, copy=whole), forward.cache_of(out)

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
        forward = self.forward
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": attention,
            "use_cache": True,
            forward.cache_name: cache,
        }
        if forward.takes_positions:
            kwargs["position_ids"] = positions
        if forward.takes_logits_to_keep:
            kwargs["logits_to_keep"] = keep
        out = self.model(**kwargs, return_dict=True)
        return out.logits[:, -keep:].to(dtype=torch.float32), forward.cache_of(out)
