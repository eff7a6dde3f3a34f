"""Fine-tuning: LoRA/QLoRA adapters on task data (seed 000's setting, training-size
sweeps, single-template training) and on IFT data mixtures (seed 003), handed to the
evaluation as `SPEC+adapter:DIR`.

Light to import: torch, transformers and peft load only when training starts; the task
machinery (`data.py`) only when examples are built.
"""

from hakari.finetune.config import LoraSettings, TrainSettings, mixture_settings

__all__ = ["LoraSettings", "TrainSettings", "mixture_settings"]
