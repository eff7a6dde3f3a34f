"""Loading a transformers model and tokenizer, and the facts the backend reads off them
(dtype, device, EOS ids, context length).

Kept apart from generation so that other ways of building the model (adapters on a
base model, a quantised load) add a loader here without touching the decoding loop.
Every failure is a `ModelLoadError` with one clear message.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from hakari.errors import ModelLoadError

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}
# Rows of a batch when the run does not say (`--batch-size`). A decode step reads every
# weight once however many rows it holds, so on a CPU 32 rows of a small model cost little
# more than 8 (SmolLM2-135M: 3× the rows a second, benchmarks/bench_default_run.py); big
# models on a CPU keep 8 so that their KV cache stays small.
DEFAULT_BATCH_SIZE = 32
CPU_BIG_MODEL_BATCH_SIZE = 8
CPU_BIG_MODEL_PARAMS = 1_000_000_000
# Batches whose live rows decode together (`decode.DecodePool`), and the bound on their
# key/value cache: on a CPU a fixed 3 GiB; on a CUDA device a share of the memory free
# when generation starts (the stacking of a batch into the pool briefly holds both).
DECODE_BATCHES = 4
CPU_DECODE_CACHE_BYTES = 3 << 30
CUDA_DECODE_CACHE_SHARE = 0.4


def default_batch_size(device_type: str, n_params: int) -> int:
    if device_type == "cpu" and n_params >= CPU_BIG_MODEL_PARAMS:
        return CPU_BIG_MODEL_BATCH_SIZE
    return DEFAULT_BATCH_SIZE


def decode_pool_limits(device: torch.device, batch_size: int) -> tuple[int, int | None]:
    """The rows of several batches decoded together (`decode.DecodePool`) and the bytes
    their key/value cache may take (None: no bound but the rows'). A step's fixed cost
    (on a CPU reading the weights, on a GPU launching the kernels of every layer) is
    shared by up to `DECODE_BATCHES` batches' rows: on a CPU within
    `CPU_DECODE_CACHE_BYTES` (the default run: 4 batches, 0.82x the time of one, 1.3 GB
    more resident memory), on CUDA within `CUDA_DECODE_CACHE_SHARE` of the free memory.
    Other accelerators decode one batch at a time. A batch alone is never refused."""
    if device.type == "cpu":
        return batch_size * DECODE_BATCHES, CPU_DECODE_CACHE_BYTES
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return batch_size * DECODE_BATCHES, int(free * CUDA_DECODE_CACHE_SHARE)
    return batch_size, None


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


def load_pretrained(
    source: str | Path,
    *,
    name: str,
    revision: str | None,
    dtype: str,
    device: str,
    trust_remote_code: bool,
    local_files_only: bool,
    threads: int | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Model (on `device`, in `dtype`) and tokenizer from a local folder or a hub id;
    torch's CPU threads set to `threads` first (None: left as they are)."""
    torch_dtype = DTYPES[resolve_dtype(dtype)]
    dev = resolve_device(device)
    if threads is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)  # process-wide: every later model too
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
    return model, tokenizer


def find_eos_token_ids(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase
) -> frozenset[int]:
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


def context_length(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> int:
    limits = [getattr(model.config, "max_position_embeddings", None), tokenizer.model_max_length]
    usable = [int(x) for x in limits if isinstance(x, int) and 0 < x < 10**8]
    return min(usable) if usable else 2048
