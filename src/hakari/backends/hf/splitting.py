"""Where a text's token ids split exactly: a context read once for all its continuations.

lm-evaluation-harness's rule reads tokenize(context + continuation) for every
continuation, so a four-choice question's context is tokenized five times. For a
byte-level BPE tokenizer (GPT-2's pre-tokenizer: its regex on the raw text, no
normalizer, no prefix space; SmolLM2's, GPT-2's, Pythia's) a single newline between two
characters that are not whitespace ends a piece of the pre-tokenizer's split whatever
comes after: none of the regex's alternatives (`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+|
?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`) crosses from non-space to a newline or
from a newline to non-space, none reads further than the next character, and the newline
alone is the same piece at the end of a text (`\\s+(?!\\S)`) as before a letter
(`\\s+`). BPE encodes each piece on its own, so for such a point k in the context,
ids(text) = ids(text[:k]) + ids(text[k:]) (the second without special tokens) for the
context and for every context + continuation: the head is tokenized once and each
continuation reads only the context's last line.

Taken only where that argument holds for the tokenizer as loaded (`newline_splitter`):
the pre-tokenizer is exactly `ByteLevel(add_prefix_space=False, use_regex=True)`, no
normalizer, a BPE model without dropout, no added token that holds a newline or strips
the spaces beside it (an added token is matched before the regex), and the special
tokens the tokenizer adds are a prefix only (a BOS) and the probe text splits as argued
through the encoder the pairs use (a tokenizer class may change a text first). Any other
tokenizer keeps the whole texts. `tests/backends/test_hf_pairs.py` checks the pairs
against tokenizing each text whole on random texts made of the characters the argument
is about (newlines, spaces, contractions, digits, Japanese, added tokens).
"""

from __future__ import annotations

from collections.abc import Callable

from tokenizers import models, pre_tokenizers
from transformers import PreTrainedTokenizerBase

from hakari.backends.hf.fasttok import direct_encoder

Splitter = Callable[[str], int | None]

# a probe for the special tokens being a prefix: words, digits, a newline, Japanese
PROBE = "Probe 12's text\nの確認。"


def newline_splitter(tokenizer: PreTrainedTokenizerBase) -> Splitter | None:
    """`split_point`, where the tokenizer's ids split exactly there; else None."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.normalizer is not None:
        return None
    pre = backend.pre_tokenizer
    if type(pre) is not pre_tokenizers.ByteLevel or pre.add_prefix_space or not pre.use_regex:
        return None
    if type(backend.model) is not models.BPE or backend.model.dropout is not None:
        return None
    added_tokens = getattr(backend, "get_added_tokens_decoder", None)
    if added_tokens is None:  # a tokenizers release without it: nothing to check them by
        return None
    for added in added_tokens().values():
        if "\n" in added.content or added.lstrip or added.rstrip:
            return None
    with_special, plain = direct_encoder(tokenizer, True), direct_encoder(tokenizer, False)
    prefix, whole = with_special(["", PROBE])
    k = split_point(PROBE)
    split = with_special([PROBE[:k]])[0] + plain([PROBE[k:]])[0]
    # specials a prefix only, and the split as the encoder the pairs use gives it (a
    # tokenizer class of a model's own may change a text before the Rust tokenizer)
    if whole != prefix + plain([PROBE])[0] or whole != split:
        return None
    return split_point


def split_point(context: str) -> int | None:
    """The start of the context's last line where a single newline ends the line before,
    both lines' characters beside it are not whitespace, and the line is not the context's
    end; None where there is none. (`str.isspace` holds for every character the regex's
    `\\s` matches, and for a few more: a stricter test.)"""
    k = context.rfind("\n")
    while k > 0:
        before, after = context[k - 1], context[k + 1 : k + 2]
        if after and not after.isspace() and not before.isspace():
            return k + 1
        k = context.rfind("\n", 0, k)
    return None
