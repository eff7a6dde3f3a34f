"""Fine-tuning: LoRA/QLoRA adapters on task data (seed 000's setting, training-size
sweeps, single-template training) and on IFT data mixtures (seed 003), handed to the
evaluation as `SPEC+adapter:DIR`.

Light to import: torch, transformers and peft load only when training starts; the task
machinery (`data.py`) only when examples are built.

Modules: `config.py` (training settings, each default with its paper), `encode.py` (examples
→ token ids, loss on the answer only), `model.py` (the base model with a fresh LoRA
adapter), `trainer.py` (one adapter trained into a folder, resumably), `sweep.py` (task
fine-tuning and the training-size sweep), `mixture.py` (IFT data mixtures), `run.py`
(`hakari finetune` without a console: every check first).
"""

from hakari.finetune.config import LoraSettings, TrainSettings, mixture_settings

__all__ = ["LoraSettings", "TrainSettings", "mixture_settings"]
