"""Every use the transformers backend makes of transformers beyond its public model and
tokenizer API, in one place: the key/value cache's layers (read, replaced, rows kept,
repeated or copied), the layer class `roomy.RoomyLayer` extends, the model's own input
preparation for a decode step and the name of its cache argument.

The decoding loop, the prefill, the tree walk and the roomy layer reach transformers'
internals only through this module, so a release that changes them breaks this module
and its test (`tests/backends/test_hf_internals.py`, run on every release pyproject.toml
allows: `scripts/check_transformers_range.sh`, the versions checked in
docs/dependencies.md), not the engine. Why the engine exists rather than transformers'
own continuous batching (`generate_batch`): docs/architecture.md, "The transformers
backend: scope and why it is an engine".
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.cache_utils import DynamicCache, DynamicLayer

PlainLayer = DynamicLayer
"""transformers' growing key/value layer (keys and values [rows, heads, positions, dim];
`update` appends, `batch_select_indices` / `batch_repeat_interleave` keep or repeat rows,
`crop` drops positions, `get_seq_length` counts them): the one layer kind whose rows can
be left-padded and stacked, and the base of `roomy.RoomyLayer`."""


# -- the key/value cache ---------------------------------------------------------------


def cache_layers(cache: Any) -> list[Any]:
    """The cache's layers, in model order (an empty list where it has none)."""
    return list(getattr(cache, "layers", None) or ())


def set_cache_layers(cache: Any, layers: list[Any]) -> None:
    """Replace the cache's layers (e.g. by layers with room, or stacked ones)."""
    cache.layers = layers


def release_layer(cache: Any, n: int) -> None:
    """Drop the cache's reference to layer `n` (its copy has been stacked elsewhere), so
    that its memory goes before the next layer is copied."""
    cache.layers[n] = None


def keys_values(layer: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """A layer's keys and values [rows, heads, positions, dim]."""
    return layer.keys, layer.values


def is_plain(layer: Any) -> bool:
    """Whether a layer is an initialised `PlainLayer` (no sliding window, no other
    state): its rows can be left-padded and stacked with another cache's."""
    return type(layer) is PlainLayer and bool(layer.is_initialized)


def keep_rows(cache: Any, index: torch.Tensor) -> None:
    """Keep only the rows `index` of every layer (in place)."""
    cache.batch_select_indices(index)


def repeat_rows(cache: Any, repeats: int) -> None:
    """Repeat each row `repeats` times (in place): one prefix's cache for its rows."""
    cache.batch_repeat_interleave(repeats)


def copy_cache(cache: Any) -> Any:
    """An independent copy (a shared prefix's cache for one of its branches)."""
    return copy.deepcopy(cache)


def builds_plain_cache(model: PreTrainedModel) -> bool:
    """Whether the cache transformers builds for the model's config is plain layers
    (none with a sliding window or another kind of state)."""
    try:
        layers = DynamicCache(config=model.config).layers
    except (TypeError, ValueError, KeyError, AttributeError):
        return False
    return all(type(layer) is PlainLayer for layer in layers)


# -- a forward pass as `generate` makes it ---------------------------------------------


@dataclass(frozen=True)
class Forward:
    """What the model's forward pass takes: position ids, `logits_to_keep`, and the name
    of its cache argument and output (transformers 5.x renamed `past_key_values` to
    `cache`; the old name warns, then goes)."""

    takes_positions: bool
    takes_logits_to_keep: bool
    cache_name: str

    @classmethod
    def of(cls, model: PreTrainedModel) -> Forward:
        accepted = set(inspect.signature(model.forward).parameters)
        prepare = inspect.signature(model.prepare_inputs_for_generation).parameters  # type: ignore[arg-type]
        return cls(
            takes_positions="position_ids" in accepted,
            takes_logits_to_keep="logits_to_keep" in accepted,
            cache_name="cache" if "cache" in prepare else "past_key_values",
        )

    def step_inputs(self, model: PreTrainedModel, ids: torch.Tensor, **kwargs: Any) -> dict:
        """The inputs of one decode step (`ids`: the rows' last tokens) as `generate`
        makes them: the model's own `prepare_inputs_for_generation`, which knows its
        cache and mask conventions; `kwargs` holds the cache under `cache_name`."""
        first = kwargs.get(self.cache_name) is None
        return dict(
            model.prepare_inputs_for_generation(  # type: ignore[operator]
                ids, is_first_iteration=first, **kwargs
            )
        )

    def cache_of(self, output: Any) -> Any:
        """The cache a forward pass returned."""
        return output[self.cache_name]
