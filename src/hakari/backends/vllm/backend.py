"""`VLLMBackend`: the `Backend` protocol on one or more vLLM engines (data-parallel
ranks): prompts tokenized as the transformers backend does, the stop rule by re-asking,
log-likelihoods from prompt logprobs, the identity."""

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
from hakari.backends.serving import (
    ServingOptions,
    final_results,
    first_stops,
    reask_stops,
    to_reask,
)
from hakari.backends.vllm.engine import Raw, sampling_kwargs, start_engines
from hakari.backends.vllm.options import (
    INSTALL_HINT,
    check_dtype,
    check_engine_args,
    engine_revision,
    llm_kwargs,
    lora_rank,
    parse_spec,
)
from hakari.backends.weights import folder_revision
from hakari.errors import HakariInputError, ModelLoadError


class VLLMBackend:
    """The `Backend` protocol on one or more vLLM engines (data-parallel ranks)."""

    def __init__(
        self,
        engines: Sequence[Any],
        tokenizer: Any,
        *,
        name: str,
        revision: str,
        dtype: str,
        prompt_format: str = "auto",
        lora: AdapterRef | None = None,
        remote: bool = False,
    ) -> None:
        self.engines = list(engines)
        self.tokenizer = tokenizer
        self.remote = remote  # engines are Ray actor handles
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
        engines, remote = start_engines(kwargs, opts.data_parallel_size)
        if remote:
            import ray

            engine_dtype = str(ray.get(engines[0].dtype.remote()))
        else:
            engine_dtype = engines[0].dtype()
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(
            model, revision=revision, trust_remote_code=trust_remote_code
        )
        if local:
            identity_revision = folder_revision(folder)
        else:  # the snapshot vLLM and the tokenizer loaded from the Hugging Face cache
            identity_revision = cached_commit(model, revision) or revision or ""
        return cls(
            engines,
            tokenizer,
            name=model,
            revision=identity_revision + engine_revision(engine_args),
            dtype=engine_dtype,
            prompt_format=prompt_format,
            lora=lora,
            remote=remote,
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
        prompts = [self._encode(r) for r in requests]
        raws = self._run_generate(prompts, list(requests), [first_stops(r) for r in requests])
        again = to_reask(requests, raws)
        if again:
            second = self._run_generate(
                [prompts[i] for i in again],
                [requests[i] for i in again],
                [reask_stops(requests[i]) or () for i in again],
            )
            for i, raw in zip(again, second, strict=True):
                raws[i] = raw
        results = final_results(requests, raws)
        if on_results is not None:
            on_results(list(enumerate(results)))
        return results

    def _run_generate(
        self,
        prompts: list[list[int]],
        requests: list[GenerationRequest],
        stops: list[tuple[str, ...]],
    ) -> list[Raw]:
        settings = [sampling_kwargs(r, s) for r, s in zip(requests, stops, strict=True)]
        regexes = [r.regex for r in requests]
        return self._dispatch("generate", [prompts, settings, regexes])

    def _dispatch(self, method: str, columns: list[list[Any]]) -> list[Any]:
        """Call `method` on the engines with each column dealt out round-robin across
        data-parallel ranks; results come back in the original order."""
        n_engines = len(self.engines)
        if n_engines == 1 and not self.remote:
            return list(getattr(self.engines[0], method)(*columns, self._lora_arg))
        size = len(columns[0])
        shards = [list(range(rank, size, n_engines)) for rank in range(n_engines)]
        calls = []
        for engine, shard in zip(self.engines, shards, strict=True):
            args = [[column[i] for i in shard] for column in columns]
            if self.remote:
                calls.append(getattr(engine, method).remote(*args, self._lora_arg))
            else:
                calls.append(getattr(engine, method)(*args, self._lora_arg))
        if self.remote:
            import ray

            calls = ray.get(calls)
        out: list[Any] = [None] * size
        for shard, values in zip(shards, calls, strict=True):
            for i, value in zip(shard, values, strict=True):
                out[i] = value
        return out

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
        rows: list[tuple[list[int], int]] = []
        owners: list[tuple[int, int]] = []
        values: list[list[tuple[float, int]]] = [
            [(0.0, 0)] * len(r.continuations) for r in requests
        ]
        # a prompt's context is the same for each of its continuations: tokenized once
        encode = lru_cache(maxsize=256)(self._token_ids)
        for i, request in enumerate(requests):
            context = self.render_prompt(request)
            add_special = not self._is_chat(request)
            for j, continuation in enumerate(request.continuations):
                if continuation:
                    rows.append(self._pair(context, continuation, add_special, encode))
                    owners.append((i, j))
        if rows:
            for (i, j), value in zip(owners, self._dispatch("score", [rows]), strict=True):
                values[i][j] = value
        results = [LoglikResult(tuple(v[0] for v in vs), tuple(v[1] for v in vs)) for vs in values]
        if on_results is not None:
            on_results(list(enumerate(results)))
        return results

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

    def close(self) -> None:
        if self.remote:
            import ray

            for engine in self.engines:
                ray.kill(engine)
        else:
            for engine in self.engines:
                engine.shutdown()
        self.engines = []
