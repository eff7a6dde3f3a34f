"""Tokenizing in batches: prompts, and log-likelihood requests into model inputs and
targets (`scheduling.Pair`) by lm-evaluation-harness's boundary rule.

Every distinct text is tokenized once, in one tokenizer call per `TOKENIZE_CHUNK` texts
(a fast tokenizer encodes a list on its own threads; the Rust tokenizer is called
directly where that gives the wrapper's ids, `fasttok.py`), never one call a text: a
request's context is read once however many continuations it has, and a space's
prompts once however many decodings ask for them. Where the tokenizer's ids split
exactly at a line break (`splitting.py`), a context is read once in all: its head once,
its last line with each continuation.
"""

from __future__ import annotations

from collections.abc import Sequence

from transformers import PreTrainedTokenizerBase

from hakari.backends.base import move_trailing_space
from hakari.backends.hf.fasttok import direct_encoder
from hakari.backends.hf.scheduling import Pair
from hakari.backends.hf.splitting import Splitter

# texts per tokenizer call: large enough that the call's own cost is shared, small
# enough that its encodings (offsets, masks) stay a few hundred MB at most
TOKENIZE_CHUNK = 8192


def tokenize(
    tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], add_special: bool
) -> list[list[int]]:
    """Each text's token ids, each distinct text tokenized once, `TOKENIZE_CHUNK` texts a
    call; `add_special`: the tokenizer's special tokens (e.g. a BOS) around each."""
    distinct = list(dict.fromkeys(texts))
    encode = direct_encoder(tokenizer, add_special)
    ids: dict[str, list[int]] = {}
    for start in range(0, len(distinct), TOKENIZE_CHUNK):
        chunk = distinct[start : start + TOKENIZE_CHUNK]
        ids.update(zip(chunk, encode(chunk), strict=True))
    return [ids[t] for t in texts]


def encode_pairs(
    tokenizer: PreTrainedTokenizerBase,
    contexts: Sequence[tuple[str, bool]],
    continuations: Sequence[Sequence[str]],
    *,
    empty_context: int,
    max_length: int,
    split: Splitter | None,
) -> list[list[Pair]]:
    """Each request's continuations as model inputs and targets.

    `contexts`: each request's rendered context and whether the tokenizer adds its
    special tokens to it (completion text: yes; a chat-rendered prompt already holds
    them). lm-evaluation-harness's rule: the context's trailing whitespace moves to the
    continuation (`move_trailing_space`); the model reads tokenize(context) followed by
    the tokens of tokenize(context + continuation) past len(tokenize(context)) (where the
    two texts merge at the boundary, lm-eval's sequence, not the whole text's); an empty
    context is `empty_context` (the BOS, else an EOS token); the last `max_length` + 1
    tokens are kept. An empty continuation has no tokens (log-likelihood 0). `split`: the
    tokenizer's `splitting.newline_splitter` (None: every text is tokenized whole)."""
    moved_contexts = [_moved(context) for context, _ in contexts]
    points = [split(moved) if split else None for moved in moved_contexts]
    wanted: dict[bool, list[str]] = {True: [], False: []}
    tails: list[str] = []  # each split context's last line, alone and + each continuation
    for (context, special), moved, conts, k in zip(
        contexts, moved_contexts, continuations, points, strict=True
    ):
        texts = [moved] + [context + c for c in conts if c]  # context + c = moved + its rest
        if k is None:
            wanted[special].extend(texts)
        else:
            wanted[special].append(moved[:k])
            tails.extend(t[k:] for t in texts)
    ids = {
        special: dict(zip(texts, tokenize(tokenizer, texts, special), strict=True))
        for special, texts in wanted.items()
        if texts
    }
    tail_ids = dict(zip(tails, tokenize(tokenizer, tails, False), strict=True))

    def ids_of(text: str, special: bool, k: int | None) -> list[int]:
        if k is None:
            return ids[special][text]
        return ids[special][text[:k]] + tail_ids[text[k:]]

    out: list[list[Pair]] = []
    for (context, special), moved, conts, k in zip(
        contexts, moved_contexts, continuations, points, strict=True
    ):
        own = ids_of(moved, special, k)
        ctx = own or [empty_context]
        row: list[Pair] = []
        for c in conts:
            if not c:
                row.append(Pair(inputs=(), targets=()))
                continue
            whole = ids_of(context + c, special, k)
            row.append(_pair(ctx, whole[len(own) :], max_length))
        out.append(row)
    return out


def _moved(context: str) -> str:
    """The context without its trailing whitespace (which goes to each continuation)."""
    return move_trailing_space(context, "")[0]


def _pair(ctx: list[int], cont: list[int], max_length: int) -> Pair:
    tokens = (ctx + cont)[-(max_length + 1) :]
    return Pair(inputs=tuple(tokens[:-1]), targets=tuple(cont[-(len(tokens) - 1) :]))
