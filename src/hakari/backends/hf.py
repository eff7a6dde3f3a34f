"""The transformers backend: batched generation and log-likelihood scoring in-process.

Scheduling. Requests are grouped by their decoding settings (everything but the prompt
and the seed), sorted by prompt length within a group, cut into batches of
`batch_size`, and the batches run longest first (an out-of-memory error shows at once).
Prompts are left-padded. Results come back in request order and `on_batch` is called
after every batch.

Per-row control. Every row of a batch carries its own stop strings, regex constraint,
token budget and sampler, so no setting forces a batch to split:

* Stop strings are checked on the last few generated tokens of each row only (a window
  as long, in tokens, as the longest stop string is in bytes), which costs microseconds a
  step; `generate(stop_strings=...)` made a plain loop 60% slower.
* A regex row is masked with its `RegexConstraint` and ends as soon as the regex cannot
  continue. A row that is done is padded while the others go on; the batch ends when
  every row is done. Stop strings do not apply to regex rows: the regex defines the end
  of the answer, and cutting a stop string out of a match could break it.
* Sampling (temperature > 0) draws from each row's own `torch.Generator`, seeded with
  the request's `seed`: the draw does not depend on which other requests share the
  batch (the logits themselves differ only at float rounding level between batch
  compositions). Without a seed the generator is seeded at random.

`GenerationResult.n_tokens` counts the tokens generated, the EOS token included when the
model produced one. A regex row cut by `max_new_tokens` (finish_reason "length") holds
a prefix of a match, not a full match.
"""

from __future__ import annotations

import gc
import json
import logging
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal, TypeVar

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    StoppingCriteria,
    StoppingCriteriaList,
)

from hakari.backends.base import (
    GenerationRequest,
    GenerationResult,
    LoglikRequest,
    LoglikResult,
    Message,
    ModelIdentity,
    OnBatch,
)
from hakari.constrained import RegexConstraint, RegexConstraintFactory, apply_bitmask
from hakari.errors import HakariInputError, ModelLoadError

log = logging.getLogger(__name__)

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}
PROMPT_FORMATS = ("auto", "chat", "completion")
DEFAULT_BATCH_SIZE = {"cpu": 8, "cuda": 32}

FinishReason = Literal["stop", "length", "eos", "regex_done"]
T = TypeVar("T")


def resolve_dtype(dtype: str) -> str:
    name = DTYPE_ALIASES.get(dtype, dtype)
    if name not in DTYPES:
        raise ModelLoadError(
            f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}", field="dtype"
        )
    return name


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as e:
        raise ModelLoadError(f"unknown device {device!r}: use auto, cpu or cuda[:N]") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"device {device!r} asked for, but CUDA is not available here")
    if dev.type not in ("cpu", "cuda"):
        raise ModelLoadError(f"unsupported device {device!r}: use auto, cpu or cuda[:N]")
    return dev


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
        if prompt_format not in PROMPT_FORMATS:
            raise ModelLoadError(
                f"unknown prompt format {prompt_format!r}; use one of {', '.join(PROMPT_FORMATS)}",
                field="prompt_format",
            )
        self.model = model.eval()
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
        self.eos_token_ids = _eos_token_ids(model, tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_token_id: int = int(pad) if pad is not None else min(self.eos_token_ids)
        self.max_length = _max_length(model, tokenizer)
        self.default_batch_size = DEFAULT_BATCH_SIZE.get(self.device.type, 8)
        self._constraints: RegexConstraintFactory | None = None
        self._render_chat = lru_cache(maxsize=1 << 16)(self._apply_chat_template)

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
    ) -> HFBackend:
        """Load a local folder or a hub id (at `revision`). The identity's revision is
        `identity_revision`, else the hub commit, else the revision asked for."""
        torch_dtype = DTYPES[resolve_dtype(dtype)]
        dev = resolve_device(device)
        kwargs = {
            "revision": revision,
            "trust_remote_code": trust_remote_code,
            "local_files_only": local_files_only,
        }
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(source, dtype=torch_dtype, **kwargs)
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"cannot load model {name!r} from {source}: {e}") from e
        model.to(dev)  # type: ignore[arg-type]
        commit = getattr(model.config, "_commit_hash", None)
        return cls(
            model,
            tokenizer,
            name=name,
            revision=identity_revision or commit or revision or "",
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

    def _encode(self, requests: Sequence[GenerationRequest | LoglikRequest]) -> list[list[int]]:
        """Token ids of each rendered prompt. Chat-rendered text already holds its special
        tokens; completion prompts get the tokenizer's (e.g. Gemma's <bos>)."""
        out: list[list[int]] = [[] for _ in requests]
        for chat in (True, False):
            idx = [i for i, r in enumerate(requests) if self._is_chat(r) == chat]
            if not idx:
                continue
            texts = [self.render_prompt(requests[i]) for i in idx]
            ids = self.tokenizer(texts, add_special_tokens=not chat)["input_ids"]
            for i, row in zip(idx, ids, strict=True):
                out[i] = list(row)
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
        on_batch: OnBatch[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        self._check_regexes(requests)
        size = batch_size or self.default_batch_size
        prompts = [
            self._fit_prompt(ids, r.max_new_tokens)
            for ids, r in zip(self._encode(requests), requests, strict=True)
        ]
        results: list[GenerationResult | None] = [None] * len(requests)
        for batch in _schedule(requests, prompts, size, _generation_group):
            rows = [self._new_row(requests[i], prompts[i]) for i in batch]
            self._run_batch(rows)
            done = [(i, row.result(self.tokenizer)) for i, row in zip(batch, rows, strict=True)]
            for i, res in done:
                results[i] = res
            if on_batch is not None:
                on_batch(done)
        return _all_set(results)

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

    def _new_row(self, request: GenerationRequest, prompt: list[int]) -> _Row:
        constraint = self.constraints.start(request.regex) if request.regex is not None else None
        sampler = None
        if request.temperature > 0:
            seed = request.seed if request.seed is not None else secrets.randbits(63)
            sampler = _Sampler(request.temperature, request.top_p, request.top_k, seed)
        stop = () if constraint is not None else tuple(s for s in request.stop if s)
        return _Row(
            prompt=prompt,
            max_new=request.max_new_tokens,
            stop=stop,
            constraint=constraint,
            sampler=sampler,
        )

    def _run_batch(self, rows: list[_Row]) -> None:
        budget = max(r.max_new for r in rows)
        if budget == 0:
            return
        input_ids, attention = _left_pad([r.prompt for r in rows], self.pad_token_id)
        config = GenerationConfig(
            max_new_tokens=budget,
            do_sample=False,
            num_beams=1,
            eos_token_id=sorted(self.eos_token_ids),
            pad_token_id=self.pad_token_id,
            use_cache=True,
        )
        processors = LogitsProcessorList()
        if any(r.constraint is not None or r.sampler is not None for r in rows):
            processors.append(_RowLogits(rows, self.constraints))
        stopper = _RowStopper(rows, self.tokenizer, self.eos_token_ids)
        with torch.inference_mode():
            self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention.to(self.device),
                generation_config=config,
                logits_processor=processors,
                stopping_criteria=StoppingCriteriaList([stopper]),
            )

    # -- log-likelihood ----------------------------------------------------------------

    def loglik(
        self,
        requests: Sequence[LoglikRequest],
        *,
        batch_size: int | None = None,
        on_batch: OnBatch[LoglikResult] | None = None,
    ) -> list[LoglikResult]:
        """Sum log-probs of each continuation after the rendered prompt.

        Tokenisation follows lm-evaluation-harness: trailing whitespace of the context
        moves to the continuation, the continuation's tokens are those of
        tokenize(context + continuation) past len(tokenize(context)), and an empty
        context is replaced by the BOS (else EOS) token. Rows whose model input is the
        same (e.g. single-token continuations of one context) share one forward pass.
        """
        size = batch_size or self.default_batch_size
        pairs = self._encode_pairs(requests)
        scorer = _LoglikScheduler(pairs, size, self._score_rows, on_batch)
        return scorer.run()

    def _encode_pairs(self, requests: Sequence[LoglikRequest]) -> list[list[_Pair]]:
        contexts = self._encode(requests)
        out: list[list[_Pair]] = []
        for request, ctx_ids in zip(requests, contexts, strict=True):
            context = self.render_prompt(request)
            add_special = not self._is_chat(request)
            out.append(
                [self._encode_pair(context, c, ctx_ids, add_special) for c in request.continuations]
            )
        return out

    def _encode_pair(
        self, context: str, continuation: str, ctx_ids: list[int], add_special: bool
    ) -> _Pair:
        if not continuation:
            return _Pair(inputs=(), targets=())
        spaces = len(context) - len(context.rstrip())
        if spaces:
            continuation = context[-spaces:] + continuation
            context = context[:-spaces]
            ctx_ids = self.tokenizer(context, add_special_tokens=add_special)["input_ids"]
        whole = self.tokenizer(context + continuation, add_special_tokens=add_special)["input_ids"]
        cont = list(whole[len(ctx_ids) :])
        ctx = list(whole[: len(ctx_ids)])
        if not ctx:
            bos = self.tokenizer.bos_token_id
            ctx = [int(bos) if bos is not None else min(self.eos_token_ids)]
        tokens = (ctx + cont)[-(self.max_length + 1) :]
        return _Pair(inputs=tuple(tokens[:-1]), targets=tuple(cont[-(len(tokens) - 1) :]))

    def _score_rows(self, rows: Sequence[tuple[int, ...]], keep: int) -> torch.Tensor:
        """Log-softmax of the last `keep` positions of each row: [rows, keep, vocab]."""
        input_ids, attention = _left_pad([list(r) for r in rows], self.pad_token_id)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            out = self.model(
                input_ids=input_ids.to(self.device),
                attention_mask=attention.to(self.device),
                position_ids=positions.to(self.device),
                logits_to_keep=keep,
                use_cache=False,
            )
        return torch.log_softmax(out.logits.float(), dim=-1)

    def close(self) -> None:
        on_cuda = self.device.type == "cuda"
        del self.model
        gc.collect()
        if on_cuda:
            torch.cuda.empty_cache()


# -- helpers for generation ----------------------------------------------------------------


@dataclass
class _Sampler:
    temperature: float
    top_p: float
    top_k: int
    seed: int
    _generator: torch.Generator | None = None

    def draw(self, logits: torch.Tensor) -> int:
        """One token from `logits` (1-D, already constrained)."""
        if self._generator is None or self._generator.device != logits.device:
            self._generator = torch.Generator(device=logits.device).manual_seed(self.seed)
        scores = logits / self.temperature
        if 0 < self.top_k < scores.numel():
            kth = torch.topk(scores, self.top_k).values[-1]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if self.top_p < 1.0:
            ordered, order = torch.sort(scores, descending=True)
            cum = torch.softmax(ordered, dim=-1).cumsum(-1)
            drop = (cum - torch.softmax(ordered, dim=-1)) >= self.top_p  # keeps the first
            scores = scores.scatter(0, order[drop], float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        return int(torch.multinomial(probs, 1, generator=self._generator).item())


@dataclass
class _Row:
    prompt: list[int]
    max_new: int
    stop: tuple[str, ...]
    constraint: RegexConstraint | None
    sampler: _Sampler | None
    generated: list[int] = field(default_factory=list)
    done: bool = False
    finish: FinishReason = "length"

    @property
    def stop_window(self) -> int:
        # Every token is at least one byte: a stop string of n bytes ends within the last
        # n tokens; one more keeps a SentencePiece leading space out of the way.
        return max((len(s.encode()) for s in self.stop), default=0) + 1

    def result(self, tokenizer: PreTrainedTokenizerBase) -> GenerationResult:
        ids = self.generated[:-1] if self.finish == "eos" else self.generated
        text = str(tokenizer.decode(ids, skip_special_tokens=True))
        if self.finish == "stop":
            cuts = [i for i in (text.find(s) for s in self.stop) if i >= 0]
            if cuts:
                text = text[: min(cuts)]
        return GenerationResult(text=text, n_tokens=len(self.generated), finish_reason=self.finish)


class _RowStopper(StoppingCriteria):
    """Called after every generated token: records it per row and decides which rows end."""

    def __init__(
        self, rows: list[_Row], tokenizer: PreTrainedTokenizerBase, eos: frozenset[int]
    ) -> None:
        self.rows = rows
        self.tokenizer = tokenizer
        self.eos = eos

    def __call__(
        self, input_ids: torch.LongTensor, scores: object, **kwargs: object
    ) -> torch.BoolTensor:
        last = input_ids[:, -1].tolist()
        for row, token in zip(self.rows, last, strict=True):
            if not row.done:
                self._step(row, int(token))
        done = torch.tensor([r.done for r in self.rows], dtype=torch.bool)
        return done.to(input_ids.device)  # type: ignore[return-value]

    def _step(self, row: _Row, token: int) -> None:
        row.generated.append(token)
        if token in self.eos:
            row.done, row.finish = True, "eos"
            return
        if row.constraint is not None:
            row.constraint.advance(token)
            if row.constraint.is_finished:
                row.done, row.finish = True, "regex_done"
                return
        elif row.stop:
            window = self.tokenizer.decode(
                row.generated[-row.stop_window :], skip_special_tokens=True
            )
            if any(s in window for s in row.stop):
                row.done, row.finish = True, "stop"
                return
        if len(row.generated) >= row.max_new:
            row.done, row.finish = True, "length"


class _RowLogits(LogitsProcessor):
    """Masks constrained rows with their regex, then draws sampled rows with their own
    generator (the drawn token gets the only finite score, so the greedy pick takes it)."""

    def __init__(self, rows: list[_Row], factory: RegexConstraintFactory) -> None:
        self.rows = rows
        self.factory = factory

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        live = [i for i, r in enumerate(self.rows) if not r.done]
        masked = [i for i in live if self.rows[i].constraint is not None]
        if masked:
            bitmask = self.factory.allocate_bitmask(len(masked))
            constraints = [self.rows[i].constraint for i in masked]
            self.factory.fill_bitmasks([c for c in constraints if c is not None], bitmask)
            sub = scores[masked]
            apply_bitmask(sub, bitmask)
            scores[masked] = sub
        for i in live:
            sampler = self.rows[i].sampler
            if sampler is not None:
                token = sampler.draw(scores[i])
                scores[i].fill_(float("-inf"))
                scores[i, token] = 0.0
        return scores


def _left_pad(rows: Sequence[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = 1
    return ids, mask


def _generation_group(request: GenerationRequest) -> str:
    settings = request.settings()
    settings.pop("seed")
    return json.dumps(settings, sort_keys=True)


def _schedule(
    requests: Sequence[GenerationRequest],
    prompts: Sequence[list[int]],
    size: int,
    group_of: Callable[[GenerationRequest], str],
) -> Iterator[list[int]]:
    """Batches of request indices: same settings, similar lengths, longest batch first."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault(group_of(r), []).append(i)
    batches: list[list[int]] = []
    for members in groups.values():
        members.sort(key=lambda i: -len(prompts[i]))
        batches.extend(members[s : s + size] for s in range(0, len(members), size))

    def cost(batch: list[int]) -> int:
        return max(len(prompts[i]) + requests[i].max_new_tokens for i in batch)

    batches.sort(key=cost, reverse=True)
    yield from batches


def _all_set(results: list[T | None]) -> list[T]:
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise RuntimeError(f"no result for requests {missing[:5]}")
    return [r for r in results if r is not None]


def _eos_token_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    ids: set[int] = set()
    configured = getattr(model.generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(t) for t in configured)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    if not ids:
        raise ModelLoadError("the model has no EOS token (neither generation config nor tokenizer)")
    return frozenset(ids)


def _max_length(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> int:
    limits = [getattr(model.config, "max_position_embeddings", None), tokenizer.model_max_length]
    usable = [int(x) for x in limits if isinstance(x, int) and 0 < x < 10**8]
    return min(usable) if usable else 2048


# -- helpers for log-likelihood ------------------------------------------------------------


@dataclass(frozen=True)
class _Pair:
    inputs: tuple[int, ...]  # what the model reads: (context + continuation)[:-1]
    targets: tuple[int, ...]  # the continuation's tokens, predicted at the last positions


class _LoglikScheduler:
    """Feeds unique model inputs through the scorer in batches, longest requests first,
    and reports each request once all its continuations are scored."""

    def __init__(
        self,
        pairs: list[list[_Pair]],
        size: int,
        score: Callable[[Sequence[tuple[int, ...]], int], torch.Tensor],
        on_batch: OnBatch[LoglikResult] | None,
    ) -> None:
        self.pairs = pairs
        self.size = size
        self.score = score
        self.on_batch = on_batch
        self.values: list[list[float | None]] = [[None] * len(p) for p in pairs]
        self.results: list[LoglikResult | None] = [None] * len(pairs)
        self.pending: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        self.open: list[int] = []

    def run(self) -> list[LoglikResult]:
        order = sorted(
            range(len(self.pairs)),
            key=lambda i: -max((len(p.inputs) for p in self.pairs[i]), default=0),
        )
        for i in order:
            self.open.append(i)
            for j, pair in enumerate(self.pairs[i]):
                if pair.targets:
                    self.pending.setdefault(pair.inputs, []).append((i, j))
                else:
                    self.values[i][j] = 0.0
            while len(self.pending) >= self.size:
                self._flush(self.size)
        while self.pending:
            self._flush(self.size)
        self._report()
        return _all_set(self.results)

    def _flush(self, n: int) -> None:
        keys = list(self.pending)[:n]
        keep = max(len(self.pairs[i][j].targets) for k in keys for i, j in self.pending[k])
        logprobs = self.score(keys, keep).cpu()
        for row, key in enumerate(keys):
            for i, j in self.pending.pop(key):
                targets = self.pairs[i][j].targets
                steps = logprobs[row, keep - len(targets) :]
                picked = steps.gather(-1, torch.tensor(targets).unsqueeze(-1))
                self.values[i][j] = float(picked.sum())
        self._report()

    def _report(self) -> None:
        finished: list[tuple[int, LoglikResult]] = []
        for i in self.open:
            if all(v is not None for v in self.values[i]):
                result = LoglikResult(
                    logprobs=tuple(float(v) for v in self.values[i] if v is not None),
                    n_tokens=tuple(len(p.targets) for p in self.pairs[i]),
                )
                self.results[i] = result
                finished.append((i, result))
        if not finished:
            return
        done = {i for i, _ in finished}
        self.open = [i for i in self.open if i not in done]
        if self.on_batch is not None:
            self.on_batch(finished)
