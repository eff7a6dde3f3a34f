"""A LoRA adapter on the transformers backend: peft loads it onto the base model and
merges it into the weights, so generation runs at the base model's speed (merged LoRA
is the same function as base + adapter, up to float rounding).

The identity keeps the base model's name and revision and adds the adapter's content
hash, so cache keys and results.json tell a fine-tuned model from its base.
"""

from __future__ import annotations

from hakari.backends.adapters import AdapterRef
from hakari.backends.hf.backend import HFBackend
from hakari.errors import ModelLoadError


def with_adapter(base: HFBackend, adapter: AdapterRef, *, prompt_format: str) -> HFBackend:
    """A new backend: `base`'s model with `adapter` merged in (`base` is consumed)."""
    try:
        from peft import PeftModel
    except ImportError:
        raise ModelLoadError(
            "adapters need peft: pip install 'hakari[finetune]'", field="--model"
        ) from None
    try:
        merged = PeftModel.from_pretrained(base.model, str(adapter.path)).merge_and_unload()
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        raise ModelLoadError(
            f"cannot apply adapter {adapter.path} to {base.identity.name}: {exc}", field="--model"
        ) from exc
    return HFBackend(
        merged,
        base.tokenizer,
        name=f"{base.identity.name}+adapter",
        revision=f"{base.identity.revision}+adapter-{adapter.short_hash}",
        prompt_format=prompt_format,
    )
