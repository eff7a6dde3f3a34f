"""The transformers backend: batched generation and log-likelihood scoring in-process.

How batches are formed is in `scheduling.py`; what each row of a generation batch may
do (stop strings, regex constraint, own sampler) is in `rows.py`; loading the model is
in `loading.py`. This class ties them to the `Backend` protocol.

What a forward pass costs on this device (a fixed part, a part a token) is measured when
the backend loads (`passcost.py`) and cuts the batches' passes; results.json records it
(the model's `serving`).

`GenerationResult.n_tokens` counts the tokens generated, the EOS token included when the
model produced one. A regex row cut by `max_new_tokens` (finish_reason "length") holds
a prefix of a match, not a full match.
"""

from __future__ import annotations

import gc
import logging
import secrets
from collections.abc import Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, cast

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from hakari.backends.base import (
    GenerationRequest,
    GenerationResult,
    InOrder,
    LoglikRequest,
    LoglikResult,
    Message,
    ModelIdentity,
    OnResults,
    batch_size_of,
    check_prompt_format,
)
from hakari.backends.constrained import RegexConstraintFactory
from hakari.backends.hf.decode import DecodePool
from hakari.backends.hf.loading import (
    CPU_BIG_MODEL_PARAMS,
    context_length,
    decode_pool_limits,
    default_batch_size,
    find_eos_token_ids,
    load_pretrained,
)
from hakari.backends.hf.loglik import score_rows
from hakari.backends.hf.pairs import encode_pairs, tokenize
from hakari.backends.hf.passcost import attention_pair_tokens, measure_pass_cost
from hakari.backends.hf.prefill import prefill_tokens
from hakari.backends.hf.rows import Row, RowStepper, Sampler, constrain_and_sample
from hakari.backends.hf.scheduling import (
    LOGITS_BYTES,
    LoglikScheduler,
    Pair,
    loglik_rows,
    schedule,
)
from hakari.backends.hf.splitting import newline_splitter
from hakari.backends.hf.step import ModelStep
from hakari.backends.hub import cached_commit
from hakari.errors import HakariInputError, ModelLoadError

log = logging.getLogger(__name__)


class HFBackend:
    """A causal LM from transformers, run in this process."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        name: str,
        revision: str,
        prompt_format: str = "auto",
    ) -> None:
        check_prompt_format(prompt_format, field="prompt_format")
        self.model = model.eval()
        self.step = ModelStep(self.model)  # the forward pass as generate makes it
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self.supports_chat: bool = bool(getattr(tokenizer, "chat_template", None))
        if prompt_format == "chat" and not self.supports_chat:
            raise ModelLoadError(
                f"prompt format 'chat' asked for, but {name} has no chat template",
                field="prompt_format",
            )
        self.use_chat_template = self.supports_chat and prompt_format != "completion"
        dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        self.identity = ModelIdentity(
            backend="hf",
            name=name,
            revision=revision,
            dtype=dtype,
            prompt_format="chat" if self.use_chat_template else "completion",
        )
        self.eos_token_ids = find_eos_token_ids(model, tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_token_id: int = int(pad) if pad is not None else min(self.eos_token_ids)
        self.max_length = context_length(model, tokenizer)
        n_params = sum(p.numel() for p in model.parameters())
        self.default_batch_size = default_batch_size(self.device.type, n_params)
        self._constraints: RegexConstraintFactory | None = None
        self._render_chat = lru_cache(maxsize=1 << 16)(self._apply_chat_template)
        self._stepper = RowStepper(tokenizer, self.eos_token_ids)
        self._split_lines = newline_splitter(tokenizer)  # checked once, on probe texts
        embeddings = model.get_input_embeddings().weight
        self.vocab_size = int(cast(torch.Tensor, embeddings).shape[0])
        # a big model on a CPU: its pass costs little more than its tokens, the measurement
        # would take seconds a pass and end at the floor (`passcost.MIN_PASS_TOKENS`)
        measured = not (self.device.type == "cpu" and n_params >= CPU_BIG_MODEL_PARAMS)
        self.pass_cost = (
            measure_pass_cost(self.step, self.device, self.vocab_size) if measured else None
        )
        if self.pass_cost is not None:
            self.step.pass_tokens = self.pass_cost.pass_tokens
        self.step.pair_tokens = attention_pair_tokens(getattr(model.config, "hidden_size", None))

    def serving_record(self) -> dict[str, Any]:
        """results.json's `serving` of the model: the device and the pass cost measured
        on it, which cut the batches (never part of a cache key); a model of 1B
        parameters or more on a CPU is not measured and counts `step.PASS_TOKENS`."""
        if self.pass_cost is None:
            return {"device": str(self.device), "pass_tokens": self.step.pass_tokens}
        return {"device": str(self.device), **self.pass_cost.record()}

    @classmethod
    def from_pretrained(
        cls,
        source: str | Path,
        *,
        name: str,
        revision: str | None = None,
        identity_revision: str | None = None,
        dtype: str = "float32",
        device: str = "auto",
        prompt_format: str = "auto",
        trust_remote_code: bool = False,
        local_files_only: bool = False,
        threads: int | None = None,
    ) -> HFBackend:
        """Load a local folder or a hub id (at `revision`). The identity's revision is
        `identity_revision`, else the commit of the hub snapshot loaded, else the revision
        asked for. `threads`: torch's CPU threads (None: as they are)."""
        model, tokenizer = load_pretrained(
            source,
            name=name,
            revision=revision,
            dtype=dtype,
            device=device,
            trust_remote_code=trust_remote_code,
            local_files_only=local_files_only,
            threads=threads,
        )
        if identity_revision is None and not Path(source).is_dir():  # a hub id
            identity_revision = cached_commit(str(source), revision)
        return cls(
            model,
            tokenizer,
            name=name,
            revision=identity_revision or revision or "",
            prompt_format=prompt_format,
        )

    # -- prompts -----------------------------------------------------------------------

    def render_prompt(self, request: GenerationRequest | LoglikRequest) -> str:
        if request.messages and self.use_chat_template:
            return self._render_chat(request.messages)
        return request.prompt

    def _apply_chat_template(self, messages: tuple[Message, ...]) -> str:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        text = self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        return str(text)

    def encode(self, requests: Sequence[GenerationRequest | LoglikRequest]) -> list[list[int]]:
        """Token ids of each rendered prompt. Chat-rendered text already holds its special
        tokens; completion prompts get the tokenizer's (e.g. Gemma's <bos>)."""
        out: list[list[int]] = [[] for _ in requests]
        for chat in (True, False):
            idx = [i for i, r in enumerate(requests) if self._is_chat(r) == chat]
            if not idx:
                continue
            texts = [self.render_prompt(requests[i]) for i in idx]
            for i, row in zip(idx, tokenize(self.tokenizer, texts, not chat), strict=True):
                out[i] = row
        return out

    def _is_chat(self, request: GenerationRequest | LoglikRequest) -> bool:
        return bool(request.messages) and self.use_chat_template

    # -- generation --------------------------------------------------------------------

    @property
    def constraints(self) -> RegexConstraintFactory:
        if self._constraints is None:
            self._constraints = RegexConstraintFactory(
                self.tokenizer, eos_token_ids=sorted(self.eos_token_ids)
            )
        return self._constraints

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        self._check_regexes(requests)
        size = batch_size_of(batch_size, self.default_batch_size)
        prompts = [
            self._fit_prompt(ids, r.max_new_tokens)
            for ids, r in zip(self.encode(requests), requests, strict=True)
        ]
        collected = InOrder(len(requests), on_results)
        cost = partial(
            prefill_tokens, tree=self.step.plain_cache, pass_tokens=self.step.pass_tokens
        )
        max_rows, max_bytes = decode_pool_limits(self.device, size)

        def ended(rows: list[Row]) -> None:
            """The rows that ended in one step go on at once (the cache commits them)."""
            collected.add([(row.index, row.result(self._stepper.decode)) for row in rows])

        pool = DecodePool(
            self.step,
            pad_token_id=self.pad_token_id,
            process_scores=self._process_scores,
            advance=self._stepper.advance,
            on_ended=ended,
            max_rows=max_rows,
            max_bytes=max_bytes,
        )
        for batch in schedule(requests, prompts, size, cost):
            rows = [self._new_row(i, requests[i], prompts[i]) for i in batch]
            pool.make_room(rows)
            pool.add(rows)
        pool.drain()
        return collected.results()

    def _check_regexes(self, requests: Sequence[GenerationRequest]) -> None:
        for regex in sorted({r.regex for r in requests if r.regex is not None}):
            error = self.constraints.validate(regex)
            if error is not None:
                raise HakariInputError(f"invalid regex {regex!r}: {error}", field="regex")

    def _fit_prompt(self, ids: list[int], max_new_tokens: int) -> list[int]:
        room = self.max_length - max_new_tokens
        if room < 1:
            raise HakariInputError(
                f"max_new_tokens={max_new_tokens} leaves no room for a prompt in the "
                f"model's {self.max_length} tokens",
                field="max_new_tokens",
            )
        if len(ids) > room:
            log.warning("prompt of %d tokens cut to its last %d", len(ids), room)
            return ids[-room:]
        return ids

    def _new_row(self, index: int, request: GenerationRequest, prompt: list[int]) -> Row:
        constraint = self.constraints.start(request.regex) if request.regex is not None else None
        sampler = None
        if request.temperature > 0:
            seed = request.seed if request.seed is not None else secrets.randbits(63)
            sampler = Sampler(request.temperature, request.top_p, request.top_k, seed)
        stop = () if constraint is not None else tuple(s for s in request.stop if s)
        return Row(
            prompt=prompt,
            max_new=request.max_new_tokens,
            stop=stop,
            constraint=constraint,
            sampler=sampler,
            max_chars=request.max_new_chars,
            stop_after=request.stop_after if constraint is None else None,
            index=index,
        )

    def _process_scores(self, rows: list[Row], scores: torch.Tensor) -> torch.Tensor:
        if any(r.constraint is not None or r.sampler is not None for r in rows):
            return constrain_and_sample(rows, scores, self.constraints)
        return scores

    # -- log-likelihood ----------------------------------------------------------------

    def loglik(
        self,
        requests: Sequence[LoglikRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[LoglikResult] | None = None,
    ) -> list[LoglikResult]:
        """Sum log-probs of each continuation after the rendered prompt.

        Tokenisation follows lm-evaluation-harness: trailing whitespace of the context
        moves to the continuation, the model reads tokenize(context) followed by the
        tokens of tokenize(context + continuation) past len(tokenize(context)) (so where
        the two texts merge at the boundary, lm-eval's sequence, not the whole text's),
        and an empty context is replaced by the BOS (else EOS) token. Rows whose model input is the
        same (e.g. single-token continuations of one context) share one forward pass,
        and rows that share a token prefix of at least `prefixes.SHARED_MIN` tokens in a batch
        (the prompts of one template) compute that prefix once where that reads fewer
        tokens, a pass's measured cost counted (`loglik.rows_plan`). A batch holds
        `batch_size` distinct model inputs, else as many as make a pass's fixed cost a
        small part of it (`scheduling.loglik_rows`).
        """
        pairs = self._encode_pairs(requests)
        size = batch_size_of(
            batch_size,
            loglik_rows(
                [len(p.inputs) for row in pairs for p in row if p.targets],
                self.step.pass_tokens,
                self.default_batch_size,
            ),
        )
        positions = LOGITS_BYTES // (4 * self.vocab_size)
        scorer = LoglikScheduler(pairs, size, self._score_rows, on_results, positions)
        return scorer.run()

    def _encode_pairs(self, requests: Sequence[LoglikRequest]) -> list[list[Pair]]:
        bos = self.tokenizer.bos_token_id
        return encode_pairs(
            self.tokenizer,
            [(self.render_prompt(r), not self._is_chat(r)) for r in requests],
            [r.continuations for r in requests],
            empty_context=int(bos) if bos is not None else min(self.eos_token_ids),
            max_length=self.max_length,
            split=self._split_lines,
        )

    def _score_rows(self, rows: Sequence[tuple[int, ...]], keep: int) -> torch.Tensor:
        return score_rows(self.step, rows, keep, self.pad_token_id, self.device)

    def close(self) -> None:
        on_cuda = self.device.type == "cuda"
        del self.model
        gc.collect()
        if on_cuda:
            torch.cuda.empty_cache()
