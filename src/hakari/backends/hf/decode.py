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
* prompts that share a token prefix (a space's templates their instruction and shots,
  one instance's templates its text) prefill it once (`prefill.py`); the prefill is
  the larger part of a short answer's cost.

Each step does what `generate`'s loop does for a decoder-only model: the inputs come
from the model's own `prepare_inputs_for_generation`, position ids are counted from the
left-padded attention mask (padding at 0), the last position's logits are taken in
float32 and only they are computed (`logits_to_keep=1` where the model takes it). A
row's numbers can differ from `generate`'s only at float rounding level, as they do
between any two batch compositions.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from hakari.backends.hf.prefill import prefill
from hakari.backends.hf.roomy import make_roomy
from hakari.backends.hf.rows import Row
from hakari.backends.hf.step import ModelStep

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
