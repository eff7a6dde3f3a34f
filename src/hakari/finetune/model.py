"""The base model for training, with a fresh LoRA adapter on it.

The spec resolves as for evaluation (`hakari.backends.weights.resolve_source`: packaged models
from their converted folder, `hf:` folders and hub ids), so training and evaluation
load the same weights. With QLoRA (CUDA only) the base is loaded in 4-bit NF4 through
bitsandbytes, Table 7's settings, and prepared for k-bit training as peft recommends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hakari.backends.weights import resolve_source
from hakari.errors import ModelLoadError
from hakari.finetune.config import Runtime, TrainSettings


def load_for_training(
    spec: str, settings: TrainSettings, runtime: Runtime, *, cache_dir: Path | None
) -> tuple[Any, Any]:
    """(peft model with a new LoRA adapter, tokenizer padding on the right)."""
    import torch
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

    src = resolve_source(spec, cache_dir=cache_dir)
    set_seed(settings.seed)  # the adapter's initial weights, like everything else, seeded
    kwargs: dict[str, Any] = {
        "revision": src.revision,
        "local_files_only": src.local_files_only,
    }
    dtype = getattr(torch, runtime.dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(src.source, **kwargs)
        if runtime.qlora:
            model = AutoModelForCausalLM.from_pretrained(
                src.source,
                quantization_config=_bnb_config(settings),
                dtype=dtype,
                device_map={"": 0},
                **kwargs,
            )
            model = prepare_model_for_kbit_training(model)
        else:
            model = AutoModelForCausalLM.from_pretrained(src.source, dtype=dtype, **kwargs)
            model.to(runtime.device)  # type: ignore[arg-type]
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot load model {spec!r} from {src.source}: {exc}") from exc
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token  # padding is masked out of attention and loss
    tokenizer.padding_side = "right"
    model.config.use_cache = False  # no KV cache while training
    lora = settings.lora
    config = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules) if lora.target_modules else None,
        bias="none",
        task_type="CAUSAL_LM",
    )
    try:
        peft_model = get_peft_model(model, config)
    except ValueError as exc:  # e.g. target modules not in this architecture
        raise ModelLoadError(f"cannot add a LoRA adapter to {spec!r}: {exc}") from exc
    return peft_model, tokenizer


def _bnb_config(settings: TrainSettings) -> Any:
    import torch
    from transformers import BitsAndBytesConfig

    q = settings.quant
    return BitsAndBytesConfig(
        load_in_4bit=q.load_in_4bit,
        bnb_4bit_use_double_quant=q.bnb_4bit_use_double_quant,
        bnb_4bit_quant_type=q.bnb_4bit_quant_type,
        bnb_4bit_compute_dtype=getattr(torch, q.bnb_4bit_compute_dtype),
    )
