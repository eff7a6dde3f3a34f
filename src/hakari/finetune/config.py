"""Training settings, each default in one place with the paper it comes from.

Two settings exist:

* `TrainSettings()` / `LoraSettings()` — seed 000 (Sakai et al., 2024), Appendix B,
  **Table 7**: QLoRA (4-bit NF4, double quantisation, float16 compute), LoRA r 64
  ("bottleneck_r"), alpha 16, dropout 0.1, paged AdamW 8-bit, batch size 8, one epoch,
  linear schedule, learning rate 5e-5, seed 42; "other parameters were set to their
  default values" (so no warmup, and peft's default target modules for the architecture).
* `mixture_settings()` / `MIXTURE_LORA` — seed 003 (IFTEval), Appendix A.5 and its code:
  LoRA r 8, alpha 16, dropout 0.05, batch 128 by gradient accumulation, at most 400 steps
  or one epoch, learning rate 5e-4 with linear decay, warmup 100, early stopping on the
  validation loss.

Where the hardware cannot do the paper's setting (QLoRA, 8-bit paged optimiser and fp16
need CUDA), `resolve_runtime` says what is used instead, and `config.json` records both.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from hakari._util import checks
from hakari.errors import HakariInputError


@dataclass(frozen=True)
class LoraSettings:
    r: int = 64  # Table 7: bottleneck_r 64
    alpha: int = 16  # Table 7: lora_alpha 16
    dropout: float = 0.1  # Table 7: lora_dropout 0.1
    # Table 7 names none: "other parameters were set to their default values", i.e.
    # peft's per-architecture default (q_proj, v_proj for Llama/Gemma/SmolLM2).
    target_modules: tuple[str, ...] | None = None


@dataclass(frozen=True)
class QuantSettings:
    """Table 7's bitsandbytes quantisation (QLoRA); used only with --qlora on CUDA."""

    load_in_4bit: bool = True  # Table 7: load_in_4bit True
    bnb_4bit_use_double_quant: bool = True  # Table 7: bnb_4bit_use_double_quant True
    bnb_4bit_quant_type: str = "nf4"  # Table 7: bnb_4bit_quant_type nf4
    bnb_4bit_compute_dtype: str = "float16"  # Table 7: bnb_4bit_compute_dtype float16


@dataclass(frozen=True)
class TrainSettings:
    learning_rate: float = 5e-5  # Table 7: learning_rate 5e-5
    lr_scheduler: str = "linear"  # Table 7: lr_scheduler_type Linear
    epochs: float = 1.0  # Table 7: epoch 1
    batch_size: int = 8  # Table 7: batch size 8
    gradient_accumulation: int = 1  # Table 7: (default) — the batch of 8 is one step
    seed: int = 42  # Table 7: seed 42
    optimizer: str = "paged_adamw_8bit"  # Table 7: optimizer paged_adamw_8bit (CUDA only)
    dtype: str = "float16"  # Table 7: torch_dtype float16 (CUDA only; CPU trains float32)
    warmup_steps: int = 0  # Table 7: not set, so the default 0
    # Table 7 gives none; trl's SFTConfig default. Longer examples are dropped (counted
    # in config.json), never cut: a cut example would lose its answer.
    max_length: int = 1024
    max_steps: int | None = None  # None: `epochs` decides
    qlora: bool = False  # --qlora: Table 7's 4-bit NF4 (needs CUDA + bitsandbytes)
    lora: LoraSettings = field(default_factory=LoraSettings)
    quant: QuantSettings = field(default_factory=QuantSettings)
    # Checkpoints (resumability) and logging: hakari's, not the paper's.
    save_steps: int = 50
    logging_steps: int = 1
    # Early stopping on validation loss (seed 003 only): None = no validation.
    eval_steps: int | None = None
    early_stopping_patience: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# seed 003 (IFTEval) Appendix A.5; the code (model_training/finetune.py): r 8, alpha 16,
# dropout 0.05, target modules q/k/v/o for Llama; adamw_torch.
MIXTURE_LORA = LoraSettings(r=8, alpha=16, dropout=0.05)
MIXTURE_BATCH = 128  # A.5: "128 batch size, achieved through gradient accumulation"
MIXTURE_MICRO_BATCH = 8  # per step on the device; 128 / 8 = 16 accumulation steps
MIXTURE_MAX_STEPS = 400  # A.5: "400 steps ... or one epoch (whichever is lowest)"
MIXTURE_LR = 5e-4  # A.5: "5e-4 learning rate with linear decay" (code default 3e-4)
MIXTURE_WARMUP = 100  # A.5: "a warmup of 100 steps" (code: min(100, max(4, n / batch)))
MIXTURE_PATIENCE = 1  # the code's EarlyStoppingCallback(early_stopping_patience=1)
MIXTURE_N_TARGET = (0, 10, 25, 50, 100, 200, 500, 1000)  # A.5 / C: N real target samples
MIXTURE_RESAMPLES = 4  # "repeat the sampling process 4 times"
# The hash split's shares; the paper names none, the code takes them from a config file.
MIXTURE_VALIDATION_RATIO = 0.1
MIXTURE_TEST_RATIO = 0.1


def mixture_settings(n_train_examples: int, base: TrainSettings | None = None) -> TrainSettings:
    """Seed 003's schedule for a mixture of `n_train_examples`: 400 steps of 128 or one
    epoch, whichever is fewer; warmup and evaluation interval as the code derives them."""
    micro = MIXTURE_MICRO_BATCH
    accumulation = MIXTURE_BATCH // micro
    steps_per_epoch = max(1, -(-n_train_examples // MIXTURE_BATCH))
    steps = min(MIXTURE_MAX_STEPS, steps_per_epoch)
    # The code: warmup_steps=min(100, max(4, n // batch)); eval/save every
    # min(100, max(20, n // batch)) steps.
    warmup = min(MIXTURE_WARMUP, max(4, n_train_examples // MIXTURE_BATCH))
    interval = min(100, max(20, n_train_examples // MIXTURE_BATCH))
    start = base or TrainSettings()
    return replace(
        start,
        learning_rate=MIXTURE_LR,
        lr_scheduler="linear",
        batch_size=micro,
        gradient_accumulation=accumulation,
        optimizer="adamw_torch",
        warmup_steps=warmup,
        max_steps=steps,
        lora=MIXTURE_LORA,
        eval_steps=interval,
        save_steps=interval,
        early_stopping_patience=MIXTURE_PATIENCE,
    )


def check_settings(settings: TrainSettings) -> None:
    """Every training setting in range, named by its option, before any model loads (the
    Trainer and peft would find them only after the base model loaded, or never: a
    negative `--epochs` trained 0 steps and reported "trained")."""
    from transformers.trainer_utils import SchedulerType
    from transformers.training_args import OptimizerNames

    checks.number(settings.learning_rate, "--learning-rate", low=0.0, low_open=True)
    checks.number(settings.epochs, "--epochs", low=0.0, low_open=True)
    checks.integer(settings.batch_size, "--batch-size", low=1)
    checks.integer(settings.gradient_accumulation, "--grad-accum", low=1)
    checks.integer(settings.warmup_steps, "--warmup-steps", low=0)
    checks.integer(settings.max_length, "--max-length", low=8)
    checks.optional_integer(settings.max_steps, "--max-steps", low=1)
    checks.integer(settings.save_steps, "--save-steps", low=1)
    checks.integer(settings.logging_steps, "logging_steps", low=1)
    checks.optional_integer(settings.eval_steps, "--eval-steps", low=1)
    checks.optional_integer(settings.early_stopping_patience, "early_stopping_patience", low=1)
    checks.seed(settings.seed, high=2**32 - 1)  # numpy's legacy seeding, used by set_seed
    checks.choice(settings.optimizer, "--optim", [o.value for o in OptimizerNames])
    checks.choice(settings.lr_scheduler, "lr_scheduler", [s.value for s in SchedulerType])
    checks.choice(settings.dtype, "dtype", ("float16", "bfloat16", "float32"))
    lora = settings.lora
    checks.integer(lora.r, "--lora-r", low=1)
    checks.integer(lora.alpha, "--lora-alpha", low=1)
    checks.number(lora.dropout, "--lora-dropout", low=0.0, high=1.0, high_open=True)
    for name in lora.target_modules or ():
        if not name or not name.replace("_", "").replace(".", "").isalnum():
            raise HakariInputError(f"{name!r} is not a module name", field="--target-modules")


def with_overrides(settings: TrainSettings, overrides: dict[str, Any] | None) -> TrainSettings:
    """`settings` with the fields given on the command line; LoRA fields under "lora"."""
    given = dict(overrides or {})
    lora = given.pop("lora", None)
    out = replace(settings, **given)
    return replace(out, lora=replace(out.lora, **lora)) if lora else out


@dataclass(frozen=True)
class Runtime:
    """What this machine actually does with the settings asked for."""

    device: str  # "cpu" or "cuda"
    qlora: bool
    optimizer: str
    dtype: str
    notes: tuple[str, ...]


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def bitsandbytes_installed() -> bool:
    return importlib.util.find_spec("bitsandbytes") is not None


def resolve_runtime(settings: TrainSettings, device: str = "auto") -> Runtime:
    """The device, precision, optimiser and quantisation this machine can use for
    `settings` (checked first); every substitution is a note (printed and written to
    config.json)."""
    check_settings(settings)
    checks.choice(device, "--device", ("auto", "cpu", "cuda"))
    has_cuda = cuda_available()
    if device == "cuda" and not has_cuda:
        raise HakariInputError("--device cuda asked for, but CUDA is not available here")
    dev = "cuda" if (device in ("auto", "cuda") and has_cuda) else "cpu"
    notes: list[str] = []
    qlora = settings.qlora
    if qlora and dev == "cpu":
        notes.append("QLoRA (4-bit NF4, Table 7) needs CUDA: training plain LoRA in float32 on CPU")
        qlora = False
    if qlora and not bitsandbytes_installed():
        raise HakariInputError(
            "QLoRA needs bitsandbytes: pip install 'hakari[qlora]'", field="--qlora"
        )
    optimizer = settings.optimizer
    if "8bit" in optimizer and (dev == "cpu" or not bitsandbytes_installed()):
        why = "on CPU" if dev == "cpu" else "without bitsandbytes"
        notes.append(f"optimizer {optimizer} needs bitsandbytes on CUDA: adamw_torch {why}")
        optimizer = "adamw_torch"
    dtype = settings.dtype if dev == "cuda" else "float32"
    if dtype != settings.dtype:
        notes.append(f"dtype {settings.dtype} is for CUDA: float32 on CPU")
    return Runtime(device=dev, qlora=qlora, optimizer=optimizer, dtype=dtype, notes=tuple(notes))
