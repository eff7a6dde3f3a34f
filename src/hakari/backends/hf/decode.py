"""The decoding loop of generation, in place of `model.generate`: the rows of several
prefilled batches decoded together (continuous batching).

`generate` computes every row of a batch until its last row ends, and prefills a prompt
once for each row that asks for it. Label answers end at very different lengths (a
label decided after three tokens beside a line that runs to its 24-character limit),
and the greedy and constrained requests of one run ask for the same prompts. So here:

* each distinct prompt of a batch is prefilled once, and every row on that prompt
  takes its first token from that prompt's logits (a constrained label answer often
  ends with it and never needs a cache of its own);
* a row leaves as soon as it ends: its rows of the key/value cache are dropped
  (`internals.keep_rows`), so later steps compute only the live rows;
* prompts that share a token prefix (a space's templates their instruction and shots,
  one instance's templates its text) prefill it once (`prefill.py`); the prefill is
  the larger part of a short answer's cost;
* the live rows of a new batch join those still decoding (`DecodePool.add`), their
  caches stacked left-padded to one width, up to the pool's limit of rows: a step costs
  a fixed part (on a CPU, reading the weights: 54 ms of SmolLM2-135M's 146 ms step of
  32 rows) whatever the rows, so long answers of several batches are decoded in one
  step each. Caches that cannot be stacked (sliding-window layers) decode a batch at a
  time;
* each row's result is handed on (`on_ended`) in the step it ends, before the next
  forward pass: the caller commits it to the response cache then, so a kill loses only
  the rows still running, never a finished row waiting for the rest of its batch.

Each step does what `generate`'s loop does for a decoder-only model: the inputs come
from the model's own `prepare_inputs_for_generation`, position ids are counted from the
left-padded attention mask (padding at 0), the last position's logits are taken in
float32 and only they are computed (`logits_to_keep=1` where the model takes it). A
row's numbers can differ from `generate`'s only at float rounding level, as they do
between any two batch compositions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from hakari.backends.hf.internals import (
    cache_layers,
    keep_rows,
    keys_values,
    release_layer,
    set_cache_layers,
)
from hakari.backends.hf.prefill import prefill
from hakari.backends.hf.roomy import ROOM, RoomyLayer, make_roomy, stacked_layer
from hakari.backends.hf.rows import Row
from hakari.backends.hf.step import ModelStep

# the live rows and their scores [rows, vocab] -> the scores to take the argmax of
ScoreHook = Callable[[list[Row], torch.Tensor], torch.Tensor]
TokenHook = Callable[[list[Row], list[int]], None]  # each row's token of one step
EndHook = Callable[[list[Row]], None]  # the rows that ended in one step


class DecodePool:
    """Live rows with their next token chosen and not yet read, and the key/value
    cache of everything before it."""

    def __init__(
        self,
        step: ModelStep,
        *,
        pad_token_id: int,
        process_scores: ScoreHook,
        advance: TokenHook,
        on_ended: EndHook,
        max_rows: int,
        max_bytes: int | None = None,
    ) -> None:
        """Up to `max_rows` live rows, whose key/value cache takes at most `max_bytes`
        (None: no bound) unless one batch alone takes more; `on_ended` gets the rows
        that ended in each step (and at `add`), before the next one."""
        self.step = step
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.bytes_per_position: int | None = None  # a row's, over all layers
        self.pad_token_id = pad_token_id
        self.process_scores = process_scores
        self.advance = advance
        self.on_ended = on_ended
        self.live: list[Row] = []
        self.cache: Any = None
        self.attention = torch.empty(0)  # [rows, cache width], padding at 0
        self.positions = torch.empty(0)  # [rows, 1]: each row's last position read
        self.next_ids: list[int] = []

    @property
    def stackable(self) -> bool:
        """Whether another batch's rows can join these (plain layers with room)."""
        return self.cache is None or all(type(x) is RoomyLayer for x in cache_layers(self.cache))

    @torch.inference_mode()
    def add(self, rows: list[Row]) -> None:
        """Prefill the rows' prompts, take each row's first token (the rows that end
        with it go to `on_ended`), and let the rows that go on join the live ones
        (after those have ended where the caches cannot be stacked)."""
        for row in rows:
            if row.max_new <= 0:
                row.done, row.finish = True, "length"
        new = [row for row in rows if not row.done]
        if len(new) < len(rows):
            self.on_ended([row for row in rows if row.done])
        if not new:
            return
        device = next(self.step.model.parameters()).device
        prompt_of: dict[tuple[int, ...], int] = {}
        of_row = [prompt_of.setdefault(tuple(row.prompt), len(prompt_of)) for row in new]
        logits, cache, attention, positions = prefill(
            self.step, [list(p) for p in prompt_of], self.pad_token_id, device
        )
        shared = torch.tensor(of_row, device=device)
        tokens = self._choose(new, logits.index_select(0, shared))
        keep = [i for i, row in enumerate(new) if not row.done]
        if len(keep) < len(new):
            self.on_ended([row for row in new if row.done])
        if not keep:
            return
        if len(keep) < len(new) or len(prompt_of) < len(new):
            index = shared[torch.tensor(keep, device=device)]
            attention, positions = _select_rows(cache, attention, positions, index)
        roomy = make_roomy(cache)  # each step writes into free room, not a copy
        new = [new[i] for i in keep]
        positions = positions[:, -1:]
        if not (roomy and self.stackable):
            self.drain()
        if self.bytes_per_position is None:
            self.bytes_per_position = _bytes_per_position(cache)
        if not self.live:
            self.live, self.cache = new, cache
            self.attention, self.positions = attention, positions
            self.next_ids = [tokens[i] for i in keep]
            return
        self._join(new, cache, attention, positions, [tokens[i] for i in keep])

    @torch.inference_mode()
    def make_room(self, rows: list[Row]) -> None:
        """Decode until the rows can join the live ones within the pool's limits."""
        while self.live and not self._fits(rows):
            self._step()

    @torch.inference_mode()
    def drain(self) -> None:
        while self.live:
            self._step()

    def _fits(self, rows: list[Row]) -> bool:
        n = len(self.live) + len(rows)
        if n > self.max_rows:
            return False
        if self.max_bytes is None or self.bytes_per_position is None:
            return True
        # left-padded to the longest prompt with its whole answer, and room to grow
        width = max(len(row.prompt) + row.max_new for row in (*self.live, *rows)) + ROOM
        return n * width * self.bytes_per_position <= self.max_bytes

    def _choose(self, rows: list[Row], scores: torch.Tensor) -> list[int]:
        tokens = greedy_tokens(self.process_scores(rows, scores))
        self.advance(rows, tokens)
        return tokens

    def _step(self) -> None:
        device = self.attention.device
        ids = torch.tensor([[t] for t in self.next_ids], dtype=torch.long, device=device)
        attention = torch.cat([self.attention, self.attention.new_ones((len(ids), 1))], dim=-1)
        positions = self.positions + 1
        logits, self.cache = self.step(ids, attention, positions, cache=self.cache)
        tokens = self._choose(self.live, logits)
        keep = [i for i, row in enumerate(self.live) if not row.done]
        if len(keep) < len(self.live):
            self.on_ended([row for row in self.live if row.done])
            if keep:
                index = torch.tensor(keep, device=device)
                attention, positions = _select_rows(self.cache, attention, positions, index)
            else:
                self.cache = None
        self.live = [self.live[i] for i in keep]
        self.next_ids = [tokens[i] for i in keep]
        self.attention, self.positions = attention, positions

    def _join(
        self,
        rows: list[Row],
        cache: Any,
        attention: torch.Tensor,
        positions: torch.Tensor,
        next_ids: list[int],
    ) -> None:
        """The new rows after the live ones, both left-padded to the wider cache."""
        old, new = len(self.live), len(rows)
        device = attention.device
        width = max(self.attention.shape[1], attention.shape[1])
        index = (torch.arange(old, device=device), torch.arange(old, old + new, device=device))
        layers: list[RoomyLayer] = []
        pairs = zip(cache_layers(self.cache), cache_layers(cache), strict=True)
        for n, (mine, theirs) in enumerate(pairs):
            parts = [(index[0], *keys_values(mine)), (index[1], *keys_values(theirs))]
            layers.append(stacked_layer(parts, old + new, width))
            release_layer(self.cache, n)  # each copy goes once stacked
            release_layer(cache, n)
        set_cache_layers(self.cache, layers)
        mask = attention.new_zeros((old + new, width))
        mask[:old, width - self.attention.shape[1] :] = self.attention
        mask[old:, width - attention.shape[1] :] = attention
        self.attention = mask
        self.positions = torch.cat([self.positions, positions])
        self.live += rows
        self.next_ids += next_ids


def _select_rows(
    cache: Any, attention: torch.Tensor, positions: torch.Tensor, index: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the rows `index` of the cache (in place), its attention mask and positions."""
    keep_rows(cache, index)
    return attention[index], positions[index]


def _bytes_per_position(cache: Any) -> int | None:
    """What one position of one row takes in the cache's keys and values, all layers
    (None where the layers hold no keys tensor)."""
    total = 0
    for layer in cache_layers(cache):
        keys = getattr(layer, "keys", None)
        if not isinstance(keys, torch.Tensor) or keys.dim() != 4:
            return None
        total += 2 * keys.shape[1] * keys.shape[-1] * keys.element_size()
    return total or None


def greedy_tokens(scores: torch.Tensor) -> list[int]:
    """Each row's highest-scoring token, the first of equal ones (and a NaN before any
    number), as torch's `argmax`. On a CPU numpy's argmax: over 96 rows of a 49k
    vocabulary torch's took 8.3 ms on this CPU and numpy's 0.6 ms, a third of a tiny
    model's greedy step (docs/results/speed.md)."""
    if scores.device.type == "cpu" and scores.dtype in (torch.float32, torch.float64):
        return list(np.argmax(scores.detach().numpy(), axis=-1).tolist())
    return list(scores.argmax(dim=-1).tolist())
