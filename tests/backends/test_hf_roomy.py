"""The decoding loop's key/value cache layer with room: the same keys and values as
transformers' `DynamicLayer`, written in place until its room is used up."""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer

from hakari.backends.hf.roomy import ROOM, roomy_layer


def _step(batch: int, n: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, 3, n, 8), torch.randn(batch, 3, n, 8)


def test_roomy_layer_holds_what_a_dynamic_layer_holds() -> None:
    torch.manual_seed(0)
    plain = DynamicLayer()
    plain.update(*_step(4, 5))
    roomy = roomy_layer(plain.keys, plain.values)  # type: ignore[arg-type]
    buffer = roomy._key_buffer.data_ptr()
    for i in range(ROOM + 3):
        states = _step(4)
        expected = plain.update(*states)
        got = roomy.update(*states)
        assert all(torch.equal(e, g) for e, g in zip(expected, got, strict=True))
        if i == ROOM - 1:  # written in place until the room is used up
            assert roomy._key_buffer.data_ptr() == buffer
    keep = torch.tensor([3, 0])
    plain.batch_select_indices(keep)
    roomy.batch_select_indices(keep)
    assert roomy.get_seq_length() == plain.get_seq_length() == 5 + ROOM + 3
    states = _step(2)
    assert torch.equal(plain.update(*states)[0], roomy.update(*states)[0])
