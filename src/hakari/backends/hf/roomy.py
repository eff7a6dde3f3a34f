"""A key/value cache layer with room to grow, for the decoding loop (`decode.py`).

transformers' `DynamicLayer` grows by `torch.cat` on every step: each new token copies
every row's keys and values of every layer (a 32-row batch of Japanese prompts, ~200
tokens: ~300 MB a step for SmolLM2-135M). A `RoomyLayer` keeps them in a buffer with
`ROOM` free positions and writes each step's token into it; attention reads a view of
the filled part (the same numbers, bit for bit: a view differs from the copy only in its
strides), and the buffer is copied only when it is full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from hakari.backends.hf.internals import (
    PlainLayer,
    cache_layers,
    is_plain,
    keys_values,
    set_cache_layers,
)

ROOM = 32  # positions added each time a buffer is full


class RoomyLayer(PlainLayer):
    """A `PlainLayer` (transformers' `DynamicLayer`) whose `keys`/`values` are views of
    buffers with free room."""

    def __init__(self, key_buffer: torch.Tensor, value_buffer: torch.Tensor, length: int) -> None:
        """Keys and values of the first `length` positions of the buffers [rows, heads,
        positions, dim]; the positions past them are free room."""
        super().__init__()
        self.device = key_buffer.device
        self.is_initialized = True
        self._key_buffer = key_buffer
        self._value_buffer = value_buffer
        self._set_length(length)

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        start = self.get_seq_length()
        end = start + key_states.shape[-2]
        if end > self._key_buffer.shape[-2]:
            self._key_buffer = _with_room(self._key_buffer, start)
            self._value_buffer = _with_room(self._value_buffer, start)
        self._key_buffer[:, :, start:end].copy_(key_states)
        self._value_buffer[:, :, start:end].copy_(value_states)
        self._set_length(end)
        return self.keys, self.values  # type: ignore[return-value]

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        length = self.get_seq_length()
        self._key_buffer = self._key_buffer.index_select(0, indices)
        self._value_buffer = self._value_buffer.index_select(0, indices)
        self._set_length(length)

    def batch_repeat_interleave(self, repeats: int) -> None:
        length = self.get_seq_length()
        self._key_buffer = self._key_buffer.repeat_interleave(repeats, dim=0)
        self._value_buffer = self._value_buffer.repeat_interleave(repeats, dim=0)
        self._set_length(length)

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)  # the views shrink; the buffers keep their room

    def _set_length(self, length: int) -> None:
        self.keys = self._key_buffer[:, :, :length]
        self.values = self._value_buffer[:, :, :length]


def _with_room(tensor: torch.Tensor, length: int) -> torch.Tensor:
    """A buffer holding the first `length` positions of `tensor` and `ROOM` free ones."""
    shape = (*tensor.shape[:-2], length + ROOM, tensor.shape[-1])
    buffer = tensor.new_empty(shape)
    buffer[:, :, :length].copy_(tensor[:, :, :length])
    return buffer


def roomy_layer(keys: torch.Tensor, values: torch.Tensor) -> RoomyLayer:
    """A `RoomyLayer` holding copies of `keys` and `values` [rows, heads, positions, dim]."""
    length = keys.shape[-2]
    return RoomyLayer(_with_room(keys, length), _with_room(values, length), length)


def stacked_layer(
    parts: Sequence[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], rows: int, width: int
) -> RoomyLayer:
    """One layer of `rows` rows from parts (the rows each fills, as an index tensor, and
    its keys and values), each part left-padded to `width` positions. The padding is
    zeros, not uninitialised memory: a masked position's attention weight is 0, and 0
    times a NaN left in free memory is NaN."""
    first = parts[0][1]
    shape = (rows, first.shape[1], width + ROOM, first.shape[-1])
    key_buffer, value_buffer = first.new_zeros(shape), first.new_zeros(shape)
    for index, keys, values in parts:
        start = width - keys.shape[-2]
        key_buffer[index, :, start:width] = keys
        value_buffer[index, :, start:width] = values
    return RoomyLayer(key_buffer, value_buffer, width)


def make_roomy(cache: Any) -> bool:
    """Replace the plain layers of a transformers cache with `RoomyLayer`s in place
    (True where its layers are all `RoomyLayer`s then); False (cache untouched) where it
    holds other layers (sliding windows, linear attention) or none."""
    layers = cache_layers(cache)
    if layers and all(type(layer) is RoomyLayer for layer in layers):
        return True
    if not layers or not all(is_plain(layer) for layer in layers):
        return False
    set_cache_layers(cache, [roomy_layer(*keys_values(layer)) for layer in layers])
    return True
