"""`VLLMBackend`: the `Backend` protocol on one or more vLLM engines (data-parallel
ranks): prompts tokenized as the transformers backend does, the stop rule by re-asking
(on the engine that answered: `engine.answer_on`), log-likelihoods from prompt logprobs,
the identity, and a record of the engines for results.json (`serving_record`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from hakari.backends.adapters import AdapterRef
from hakari.backends.base import (
    GenerationRequest,
    GenerationResult,
    LoglikRequest,
    LoglikResult,
    Message,
    ModelIdentity,
    OnResults,
    move_trailing_space,
)
from hakari.backends.hub import cached_commit
from hakari.backends.serving import ServingOptions
from hakari.backends.vllm.engine import LocalEngine, start_local
from hakari.backends.vllm.options import (
    INSTALL_HINT,
    check_dtype,
    check_engine_args,
    engine_revision,
    llm_kwargs,
    lora_rank,
    parse_spec,
)
from hakari.backends.vllm.ray_engines import RayEngines
from hakari.backends.weights import folder_revision
from hakari.errors import HakariInputError, ModelLoadError


def start_engines(kwargs: dict[str, Any], opts: ServingOptions) -> LocalEngine | RayEngines:
    """One engine in this process, or one Ray actor per data-parallel rank
    (`RAY_ADDRESS` joins a running cluster)."""
    if opts.data_parallel_size > 1:
        return RayEngines.start(kwargs, opts)
    return start_local(kwargs)


class VLLMBackend:
    """The `Backend` protocol on one or more vLLM engines (data-parallel ranks)."""

    def __init__(
        self,
        engines: Any,
        tokenizer: Any,
        *,
        name: str,
        revision: str,
        dtype: str,
        prompt_format: str = "auto",
        lora: AdapterRef | None = None,
    ) -> None:
        # `LocalEngine` or `RayEngines`; a list of one engine: this process's engine
        self.engines = engines if hasattr(engines, "run") else LocalEngine(*engines)
        self.tokenizer = tokenizer
        self.supports_chat = bool(getattr(tokenizer, "chat_template", None))
        if prompt_format == "chat" and not self.supports_chat:
            raise ModelLoadError(
                f"prompt format 'chat' asked for, but {name} has no chat template",
                field="prompt_format",
            )
        self.use_chat = self.supports_chat and prompt_format != "completion"
        self.lora = lora
        self._lora_arg = (lora.path.name, 1, str(lora.path)) if lora is not None else None
        self.identity = ModelIdentity(
            backend="vllm",
            name=name + (f"+adapter:{lora.path}" if lora is not None else ""),
            revision=revision + (f"+adapter-{lora.sha256[:16]}" if lora is not None else ""),
            dtype=dtype,
            prompt_format="chat" if self.use_chat else "completion",
        )
        self.max_length = int(getattr(tokenizer, "model_max_length", 0) or 0)

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        dtype: str | None = None,
        prompt_format: str = "auto",
        trust_remote_code: bool = False,
        options: ServingOptions | None = None,
        lora: AdapterRef | None = None,
    ) -> VLLMBackend:
        opts = options or ServingOptions()
        opts.check()
        source, revision = parse_spec(spec)
        folder = Path(source).expanduser()
        local = folder.is_dir()
        if local and revision is not None:
            raise ModelLoadError(f"{spec}: a local folder takes no @revision", field="model")
        asked_dtype = check_dtype(dtype)
        max_lora_rank = lora_rank(lora)
        try:
            import vllm  # noqa: F401
        except ImportError:
            raise ModelLoadError(INSTALL_HINT, field="model") from None
        engine_args = check_engine_args(opts.engine_args)
        model = str(folder.resolve()) if local else source
        kwargs = (
            llm_kwargs(model, revision, asked_dtype, trust_remote_code, opts, max_lora_rank)
            | engine_args
        )
        engines = start_engines(kwargs, opts)
        try:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(
                model, revision=revision, trust_remote_code=trust_remote_code
            )
        except BaseException:
            engines.close()
            raise
        if local:
            identity_revision = folder_revision(folder)
        else:  # the snapshot vLLM and the tokenizer loaded from the Hugging Face cache
            identity_revision = cached_commit(model, revision) or revision or ""
        return cls(
            engines,
            tokenizer,
            name=model,
            revision=identity_revision + engine_revision(engine_args),
            dtype=engines.dtype(),
            prompt_format=prompt_format,
            lora=lora,
        )

    # -- prompts -------------------------------------------------------------------------

    def _is_chat(self, request: GenerationRequest | LoglikRequest) -> bool:
        return bool(request.messages) and self.use_chat

    def render_prompt(self, request: GenerationRequest | LoglikRequest) -> str:
        if request.messages and self._is_chat(request):
            return self._render_chat(request.messages)
        return request.prompt

    def _render_chat(self, messages: tuple[Message, ...]) -> str:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        return str(
            self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        )

    def _encode(self, request: GenerationRequest | LoglikRequest) -> list[int]:
        text = self.render_prompt(request)
        ids = self.tokenizer(text, add_special_tokens=not self._is_chat(request))["input_ids"]
        return list(ids)

    # -- generation ----------------------------------------------------------------------

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        """One call for all requests, dealt between the engines; each engine's answers
        go to `on_results` as that engine finishes (its re-asks included)."""
        items = [(self._encode(r), r) for r in requests]
        done = None if on_results is None else _forward(on_results)
        return list(self.engines.run("answer", items, self._lora_arg, done))

    # -- log-likelihood ------------------------------------------------------------------

    def loglik(
        self,
        requests: Sequence[LoglikRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[LoglikResult] | None = None,
    ) -> list[LoglikResult]:
        """Sum log-probs of each continuation, tokenized as the transformers backend does
        (trailing whitespace of the context moves to the continuation; the
        model reads tokenize(context), then the tokens of tokenize(context + continuation)
        past len(tokenize(context)); an empty context gets the BOS token)."""
        # one item a request: its continuations' (ids, n_ctx), scored on one engine
        groups: list[list[tuple[list[int], int]]] = []
        # a prompt's context is the same for each of its continuations: tokenized once
        encode = lru_cache(maxsize=256)(self._token_ids)
        for request in requests:
            context = self.render_prompt(request)
            add_special = not self._is_chat(request)
            groups.append(
                [self._pair(context, c, add_special, encode) for c in request.continuations if c]
            )

        def result(request: LoglikRequest, scores: list[tuple[float, int]]) -> LoglikResult:
            """An empty continuation scores 0 over 0 tokens."""
            found = iter(scores)
            values = [next(found) if c else (0.0, 0) for c in request.continuations]
            return LoglikResult(tuple(v[0] for v in values), tuple(v[1] for v in values))

        def finished(positions: list[int], scored: list[Any]) -> None:
            if on_results is not None:
                on_results(
                    [(i, result(requests[i], s)) for i, s in zip(positions, scored, strict=True)]
                )

        scored = self.engines.run("score_groups", groups, self._lora_arg, finished)
        return [result(r, s) for r, s in zip(requests, scored, strict=True)]

    def _token_ids(self, text: str, add_special: bool) -> tuple[int, ...]:
        return tuple(self.tokenizer(text, add_special_tokens=add_special)["input_ids"])

    def _pair(
        self,
        context: str,
        continuation: str,
        add_special: bool,
        encode: Callable[[str, bool], tuple[int, ...]],
    ) -> tuple[list[int], int]:
        context, continuation = move_trailing_space(context, continuation)
        ctx = list(encode(context, add_special))
        whole = list(self._token_ids(context + continuation, add_special))
        if not ctx:
            bos = self.tokenizer.bos_token_id
            if bos is None:
                raise HakariInputError("an empty context needs a BOS token", field="prompt")
            whole, ctx = [int(bos), *whole], [int(bos)]
        # lm-evaluation-harness's pair (as the transformers backend): the context's own
        # tokens, then the whole text's tokens past them
        return [*ctx, *whole[len(ctx) :]], len(ctx)

    def serving_record(self) -> dict[str, Any]:
        """The engines that answered, for results.json: each one's node, dtype, memory
        and how many prompts it answered, and how prompts were dealt."""
        return dict(self.engines.record())

    def close(self) -> None:
        if self.engines is not None:
            engines, self.engines = self.engines, None
            engines.close()


def _forward(on_results: OnResults[GenerationResult]) -> Any:
    def done(positions: list[int], results: list[GenerationResult]) -> None:
        on_results(list(zip(positions, results, strict=True)))

    return done
