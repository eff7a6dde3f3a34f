"""Train one LoRA adapter into a folder, resumably.

transformers' `Trainer` with a peft model (as seed 003's code does), fed examples this
package has already tokenised and masked (`encode.py`). What the Trainer brings: the
paper's optimisers and schedules by name, gradient accumulation, checkpoints with
optimizer/scheduler/RNG state and the data position (so a resumed run continues the
same run), evaluation with early stopping. trl's `SFTTrainer` is this Trainer plus
dataset formatting; hakari does the formatting itself so the prompt tokens are exactly
the ones the evaluation feeds the model (see README, "Fine-tuning").

The output folder holds:

* `finetune_config.json` — the exact config (settings, what this machine used instead,
  data selection and digest, base model identity, library versions), written first;
* `train_log.jsonl` — one line per logged step (loss, learning rate, grad norm) and per
  evaluation (eval_loss), appended as training goes;
* `checkpoints/checkpoint-N/` — the Trainer's checkpoints while training runs;
* `adapter_config.json`, `adapter_model.safetensors` — the adapter (peft), moved into
  place when training ends;
* `train_summary.json` — written last and atomically: its presence means "done".

Running the same command again on a folder without `train_summary.json` resumes from the
newest complete checkpoint (one whose `trainer_state.json`, saved last, exists); on a
done folder it does nothing; a different config in the folder is an error.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from hakari._util.atomic import staged_files, write_json_atomic, write_text_atomic
from hakari._util.jsonl import read_jsonl_lenient
from hakari.errors import HakariInputError
from hakari.finetune.config import Runtime, TrainSettings, resolve_runtime
from hakari.finetune.data import Example, examples_digest
from hakari.finetune.encode import ExampleEncoder
from hakari.finetune.model import load_for_training

CONFIG_FILE = "finetune_config.json"
LOG_FILE = "train_log.jsonl"
SUMMARY_FILE = "train_summary.json"
CHECKPOINTS = "checkpoints"
# Keys of finetune_config.json that may differ between a run and its resumption.
_VOLATILE = ("versions", "created")

Say = Callable[[str], None]


@dataclass(frozen=True)
class TrainJob:
    model: str  # a local model spec (packaged or hf:)
    output: Path
    examples: Sequence[Example]
    settings: TrainSettings
    validation: Sequence[Example] = ()
    prompt_format: str = "auto"
    device: str = "auto"
    cache_dir: Path | None = None
    data: dict[str, Any] = field(default_factory=dict)  # how the examples were chosen
    keep_checkpoints: bool = False
    probe_examples: int = 32  # loss before/after training on this many training examples


@dataclass(frozen=True)
class TrainSummary:
    output: str
    status: str  # "trained" or "already trained"
    steps: int
    examples: int
    dropped_too_long: int
    resumed_from_step: int | None
    loss_before: float | None  # mean answer-token loss on the probe examples
    loss_after: float | None
    first_step_loss: float | None
    last_step_loss: float | None
    best_eval_loss: float | None
    stopped_early: bool
    train_seconds: float
    examples_per_second: float | None
    notes: list[str]


def job_config(job: TrainJob, runtime: Runtime) -> dict[str, Any]:
    config = {
        "model": job.model,
        "prompt_format": job.prompt_format,
        "settings": job.settings.to_dict(),
        "runtime": asdict(runtime),
        "data": {
            **job.data,
            "examples": len(job.examples),
            "examples_sha256": examples_digest(job.examples),
            "validation_examples": len(job.validation),
            "validation_sha256": examples_digest(job.validation) if job.validation else None,
        },
        "versions": _versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    return dict(json.loads(json.dumps(config)))  # tuples as lists, as stored


def prepare_output(job: TrainJob, config: dict[str, Any]) -> TrainSummary | None:
    """Check the folder against `config` before any model loads. Returns the stored
    summary when this exact run is already done; raises when the folder holds another."""
    out = job.output
    if out.exists() and not out.is_dir():
        raise HakariInputError(f"{out} exists and is not a folder", field="--output")
    stored_path = out / CONFIG_FILE
    if stored_path.is_file():
        stored = json.loads(stored_path.read_text(encoding="utf-8"))
        if _stable(stored) != _stable(config):
            new, old = _stable(config), _stable(stored)
            diff = sorted(k for k in new.keys() | old.keys() if new.get(k) != old.get(k))
            raise HakariInputError(
                f"{out} holds a different fine-tuning run (differs in: {', '.join(diff)}); "
                "choose another --output or delete it",
                field="--output",
            )
        summary = out / SUMMARY_FILE
        if summary.is_file():
            data = json.loads(summary.read_text(encoding="utf-8"))
            data["status"] = "already trained"
            return TrainSummary(**data)
    elif out.is_dir() and any(out.iterdir()):
        raise HakariInputError(
            f"{out} is not empty and holds no hakari fine-tuning run", field="--output"
        )
    return None


def train_adapter(job: TrainJob, *, say: Say = print) -> TrainSummary:
    runtime = resolve_runtime(job.settings, job.device)
    config = job_config(job, runtime)
    done = prepare_output(job, config)
    if done is not None:
        say(f"{job.output}: already trained ({done.steps} steps), nothing to do")
        return done
    if not job.examples:
        raise HakariInputError("no training examples", field="--train-size")
    for note in runtime.notes:
        say(f"note: {note}")
    job.output.mkdir(parents=True, exist_ok=True)
    write_json_atomic(job.output / CONFIG_FILE, config, trailing_newline=True)
    return _train(job, runtime)


def _train(job: TrainJob, runtime: Runtime) -> TrainSummary:
    import torch
    from transformers import DataCollatorForSeq2Seq, EarlyStoppingCallback, Trainer

    settings = job.settings
    model, tokenizer = load_for_training(job.model, settings, runtime, cache_dir=job.cache_dir)
    encoder = ExampleEncoder(tokenizer, job.prompt_format, settings.max_length)
    train_set, dropped = encoder.encode_all(job.examples)
    if not train_set:
        raise HakariInputError(
            f"every example is longer than max_length {settings.max_length} tokens",
            field="--max-length",
        )
    val_set, _ = encoder.encode_all(job.validation)
    collator = DataCollatorForSeq2Seq(
        tokenizer, padding=True, label_pad_token_id=-100, return_tensors="pt"
    )
    probe = [e.as_features() for e in train_set[: job.probe_examples]]
    ckpt_dir = job.output / CHECKPOINTS
    resume = last_complete_checkpoint(ckpt_dir)
    resumed_step = checkpoint_step(resume) if resume else None
    loss_before = _stored_loss_before(job.output)
    if loss_before is None and probe:
        loss_before = mean_answer_loss(model, collator, probe, settings.batch_size)
        _append_log(job.output, {"loss_before": loss_before, "probe_examples": len(probe)})
    truncate_log(job.output, resumed_step or 0)

    args = training_arguments(settings, runtime, ckpt_dir, has_validation=bool(val_set))
    callbacks: list[Any] = [LossLogCallback(job.output)]
    if val_set and settings.early_stopping_patience:
        callbacks.append(EarlyStoppingCallback(settings.early_stopping_patience))
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=[e.as_features() for e in train_set],
        eval_dataset=[e.as_features() for e in val_set] or None,
        data_collator=collator,
        callbacks=callbacks,
    )
    started = time.monotonic()
    result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    seconds = time.monotonic() - started
    model.eval()
    with torch.no_grad():
        loss_after = (
            mean_answer_loss(model, collator, probe, settings.batch_size) if probe else None
        )
    save_adapter(model, job.output)
    steps = trainer.state.global_step
    log = read_log(job.output)
    step_losses = [r["loss"] for r in log if "loss" in r and "step" in r]
    evals = [r["eval_loss"] for r in log if "eval_loss" in r]
    max_steps = trainer.state.max_steps
    summary = TrainSummary(
        output=str(job.output),
        status="trained",
        steps=steps,
        examples=len(train_set),
        dropped_too_long=dropped,
        resumed_from_step=resumed_step,
        loss_before=loss_before,
        loss_after=loss_after,
        first_step_loss=step_losses[0] if step_losses else None,
        last_step_loss=step_losses[-1] if step_losses else None,
        best_eval_loss=min(evals) if evals else None,
        stopped_early=bool(val_set) and steps < max_steps,
        train_seconds=round(seconds, 3),
        examples_per_second=_rate(result.metrics.get("train_samples_per_second")),
        notes=list(runtime.notes),
    )
    write_json_atomic(job.output / SUMMARY_FILE, asdict(summary), trailing_newline=True)
    if not job.keep_checkpoints:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return summary


def training_arguments(
    settings: TrainSettings, runtime: Runtime, ckpt_dir: Path, *, has_validation: bool
) -> Any:
    from transformers import TrainingArguments

    evaluate = has_validation and settings.eval_steps is not None
    return TrainingArguments(
        output_dir=str(ckpt_dir),
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation,
        learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler,
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps if settings.max_steps is not None else -1,
        warmup_steps=settings.warmup_steps,
        optim=runtime.optimizer,
        seed=settings.seed,
        data_seed=settings.seed,
        fp16=runtime.device == "cuda" and runtime.dtype == "float16",
        bf16=runtime.device == "cuda" and runtime.dtype == "bfloat16",
        use_cpu=runtime.device == "cpu",
        logging_steps=settings.logging_steps,
        save_strategy="steps",
        save_steps=settings.save_steps,
        save_total_limit=2,
        eval_strategy="steps" if evaluate else "no",
        eval_steps=settings.eval_steps if evaluate else None,
        load_best_model_at_end=evaluate,
        metric_for_best_model="eval_loss" if evaluate else None,
        greater_is_better=False if evaluate else None,
        prediction_loss_only=True,
        remove_unused_columns=False,
        report_to=[],
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


class LossLogCallback(TrainerCallback):
    """Appends each log record (loss per step, eval_loss per evaluation) to
    train_log.jsonl as it happens, so a killed run keeps its curve."""

    def __init__(self, output: Path) -> None:
        self.output = output

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        if not logs:
            return
        keep = ("loss", "eval_loss", "learning_rate", "grad_norm", "epoch")
        record = {"step": state.global_step}
        record.update({k: float(v) for k, v in logs.items() if k in keep})
        if "loss" in record or "eval_loss" in record:
            _append_log(self.output, record)


def mean_answer_loss(
    model: Any, collator: Any, features: list[dict[str, list[int]]], batch_size: int
) -> float:
    """Mean cross-entropy per answer token over `features` (eval mode, no dropout)."""
    import torch

    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    device = next(model.parameters()).device
    with torch.no_grad():
        for start in range(0, len(features), batch_size):
            batch = collator(features[start : start + batch_size])
            batch = {k: v.to(device) for k, v in batch.items()}
            logits = model(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
            ).logits
            labels = batch["labels"][:, 1:]
            logp = torch.nn.functional.cross_entropy(
                logits[:, :-1].float().reshape(-1, logits.shape[-1]),
                labels.reshape(-1),
                ignore_index=-100,
                reduction="sum",
            )
            total += float(logp)
            tokens += int((labels != -100).sum())
    if was_training:
        model.train()
    return total / max(tokens, 1)


def save_adapter(model: Any, output: Path) -> None:
    """peft's save_pretrained into a temporary folder, then each file moved into place."""
    with staged_files(output) as staging:
        model.save_pretrained(staging)


def last_complete_checkpoint(folder: Path) -> Path | None:
    """The newest checkpoint whose trainer_state.json (written last) exists; partial
    ones (a kill during saving) are removed."""
    if not folder.is_dir():
        return None
    found = sorted(
        (p for p in folder.glob("checkpoint-*") if p.is_dir() and checkpoint_step(p) >= 0),
        key=checkpoint_step,
    )
    complete = [p for p in found if (p / "trainer_state.json").is_file()]
    for partial in set(found) - set(complete):
        shutil.rmtree(partial, ignore_errors=True)
    return complete[-1] if complete else None


def checkpoint_step(path: Path) -> int:
    try:
        return int(path.name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def read_log(output: Path) -> list[dict[str, Any]]:
    return read_jsonl_lenient(output / LOG_FILE)  # a line cut by a kill is skipped


def truncate_log(output: Path, step: int) -> None:
    """Keep the log lines up to `step` (the checkpoint resumed from): the steps after it
    are trained again and logged again."""
    rows = [r for r in read_log(output) if "step" not in r or r["step"] <= step]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    write_text_atomic(output / LOG_FILE, text)


def _stored_loss_before(output: Path) -> float | None:
    for row in read_log(output):
        if "loss_before" in row:
            return float(row["loss_before"])
    return None


def _append_log(output: Path, record: dict[str, Any]) -> None:
    with (output / LOG_FILE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def _stable(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in _VOLATILE}


def _rate(value: Any) -> float | None:
    return (
        round(float(value), 3) if isinstance(value, int | float) and math.isfinite(value) else None
    )


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "transformers", "peft", "accelerate", "bitsandbytes"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out
