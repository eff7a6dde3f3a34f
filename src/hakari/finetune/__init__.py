"""Fine-tuning: LoRA/QLoRA adapters on task data (seed 000's setting, training-size
sweeps, single-template training) and on IFT data mixtures (seed 003), handed to the
evaluation as `SPEC+adapter:DIR`.

Light to import: torch, transformers and peft load only when training starts.
"""

from hakari.finetune.config import LoraSettings, TrainSettings, mixture_settings
from hakari.finetune.data import Example, hash_split, nested_sample, read_mixture, upsample

__all__ = [
    "Example",
    "LoraSettings",
    "TrainSettings",
    "hash_split",
    "mixture_settings",
    "nested_sample",
    "read_mixture",
    "upsample",
]
