"""One forward pass of the model as `generate` makes it (`ModelStep`), shared by the
decoding loop, its prefill and the log-likelihood tree."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.cache_utils import DynamicCache, DynamicLayer


def positions_of(attention: torch.Tensor) -> torch.Tensor:
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
        # whether the model's key/value cache is plain layers, which a prefill may build
        # from the groups of a tree of shared prefixes (`prefill.py`; it finds out and
        # sets this False where the model returns other layers)
        self.plain_cache = _plain_cache(model)

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


def _plain_cache(model: PreTrainedModel) -> bool:
    """Whether the cache transformers builds for the model's config is plain layers
    (none with a sliding window or another kind of state)."""
    try:
        layers = DynamicCache(config=model.config).layers
    except (TypeError, ValueError, KeyError, AttributeError):
        return False
    return all(type(layer) is DynamicLayer for layer in layers)
