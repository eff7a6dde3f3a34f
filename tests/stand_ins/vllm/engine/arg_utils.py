"""`EngineArgs`: a dataclass whose fields are the engine's options (`LLM(**kwargs)` passes
every keyword it does not take itself into it). The fields of vLLM 0.33 that hakari or
its tests name; the real one has ~250."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class EngineArgs:
    model: str = "facebook/opt-125m"
    tokenizer: str | None = None
    tokenizer_mode: str = "auto"
    skip_tokenizer_init: bool = False
    trust_remote_code: bool = False
    revision: str | None = None
    tokenizer_revision: str | None = None
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    seed: int = 0
    max_model_len: int | None = None
    distributed_executor_backend: str | None = None
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    kv_cache_memory_bytes: int | None = None
    cpu_offload_gb: float = 0
    enforce_eager: bool = False
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enable_prefix_caching: bool | None = None
    enable_chunked_prefill: bool | None = None
    block_size: int | None = None
    max_logprobs: int = 20
    compilation_config: Any = None
    structured_outputs_config: Any = None
    enable_lora: bool = False
    max_loras: int = 1
    max_lora_rank: int = 16
    hf_overrides: Any = None
