"""The base model for training, with a fresh LoRA adapter on it.

The spec resolves as for evaluation (`hakari.backends.weights.resolve_source`: packaged models
from their converted folder, `hf:` folders and hub ids), so training and evaluation
load the same weights. With QLoRA (CUDA only) the base is loaded in 4-bit NF4 through
bitsandbytes, Table 7's settings, and prepared for k-bit training as peft recommends.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hakari.backends.packaged import PACKAGED_MODELS
from hakari.backends.weights import resolve_source
from hakari.errors import HakariInputError, ModelLoadError
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


def check_target_modules(spec: str, modules: Sequence[str] | None) -> None:
    """Each `--target-modules` name must be a module of the base model (as peft matches
    them: the full name or its last parts), found from the architecture alone: the model is
    built on PyTorch's meta device from its config, no weight is read. peft would find a
    typo only after the base model loaded. A hub id whose config cannot be read here is
    left to peft."""
    wanted = [m for m in modules or () if m != "all-linear"]
    if not wanted:
        return
    found = _linear_modules(spec)
    if found is None:
        return
    unknown = [m for m in wanted if not any(n == m or n.endswith("." + m) for n in found)]
    if unknown:
        leaves = sorted({n.rsplit(".", 1)[-1] for n in found})
        raise HakariInputError(
            f"{', '.join(unknown)}: no such module in {spec}; its linear layers are "
            f"{', '.join(leaves)}",
            field="--target-modules",
        )


def _linear_modules(spec: str) -> list[str] | None:
    """The names of the base model's linear layers, from its config (None: unknown here)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    spec = spec.strip()
    try:
        if spec in PACKAGED_MODELS:
            config = AutoConfig.for_model(PACKAGED_MODELS[spec].model_type)
        else:
            src = resolve_source(spec)  # hf: folders and hub ids (no conversion, no weights)
            config = AutoConfig.from_pretrained(
                src.source, revision=src.revision, local_files_only=src.local_files_only
            )
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    except (OSError, ValueError, KeyError):
        return None
    return [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]


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
