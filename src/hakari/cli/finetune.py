"""`hakari finetune`: LoRA/QLoRA adapters on task data (and training-size sweeps), or on
IFT data mixtures with `--mixture`. Everything the user gave is checked, and every
example built, before the first model loads; bad input is one line and exit code 2.
The work is `hakari.finetune.run`'s; this module parses the options and prints.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from hakari.cli.common import console, fail, split_csv
from hakari.cli.options import (
    CacheDirOption,
    DataDirOption,
    DeviceOption,
    grouped,
    option_group,
)
from hakari.errors import HakariInputError
from hakari.finetune.config import (
    MIXTURE_N_TARGET,
    MIXTURE_RESAMPLES,
    MIXTURE_TEST_RATIO,
    MIXTURE_VALIDATION_RATIO,
)

if TYPE_CHECKING:
    from hakari.finetune.trainer import TrainSummary


def _say(text: str) -> None:
    console.print(text, soft_wrap=True)


@option_group
class TrainingOptions:
    """The seed and the training settings (Table 7's unless given)."""

    seed: Annotated[
        int, typer.Option("--seed", help="Sampling and training seed (Table 7: 42).")
    ] = 42
    qlora: Annotated[
        bool,
        typer.Option("--qlora", help="4-bit NF4 QLoRA (Table 7); CUDA only, plain LoRA on CPU."),
    ] = False
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Stop after N optimizer steps.")
    ] = None
    epochs: Annotated[float | None, typer.Option("--epochs", help="Epochs (Table 7: 1).")] = None
    learning_rate: Annotated[float | None, typer.Option("--learning-rate", "--lr")] = None
    batch_size: Annotated[int | None, typer.Option("--batch-size")] = None
    grad_accum: Annotated[int | None, typer.Option("--grad-accum")] = None
    warmup_steps: Annotated[int | None, typer.Option("--warmup-steps")] = None
    lora_r: Annotated[int | None, typer.Option("--lora-r")] = None
    lora_alpha: Annotated[int | None, typer.Option("--lora-alpha")] = None
    lora_dropout: Annotated[float | None, typer.Option("--lora-dropout")] = None
    target_modules: Annotated[
        str | None,
        typer.Option(
            "--target-modules", help="e.g. q_proj,v_proj (default: peft's for the architecture)."
        ),
    ] = None
    max_length: Annotated[
        int | None, typer.Option("--max-length", help="Longer examples are dropped.")
    ] = None
    optim: Annotated[str | None, typer.Option("--optim", help="A transformers optimizer name.")] = (
        None
    )
    eval_steps: Annotated[
        int | None,
        typer.Option("--eval-steps", help="With --mixture: validation loss every N steps."),
    ] = None
    save_steps: Annotated[
        int | None, typer.Option("--save-steps", help="Checkpoint every N steps.")
    ] = None

    def overrides(self) -> dict[str, Any]:
        """The `TrainSettings` fields given (`finetune.run.settings_overrides`)."""
        from hakari.finetune.run import settings_overrides

        given = dataclasses.asdict(self)  # type: ignore[call-overload]
        given["gradient_accumulation"] = given.pop("grad_accum")
        given["optimizer"] = given.pop("optim")
        given["target_modules"] = tuple(split_csv(given["target_modules"]))
        return settings_overrides(given)


@option_group
class MixtureOptions:
    """`--mixture` and the options that go with it."""

    mixture: Annotated[
        Path | None,
        typer.Option("--mixture", help="Base instruction mixture (JSONL: prompt, response)."),
    ] = None
    target: Annotated[
        str | None, typer.Option("--target", help="With --mixture: the target task.")
    ] = None
    n_target: Annotated[
        str, typer.Option("--n-target", help="With --mixture: target samples added.")
    ] = ",".join(map(str, MIXTURE_N_TARGET))
    resamples: Annotated[
        int, typer.Option("--resamples", help="With --mixture: resamples of the target samples.")
    ] = MIXTURE_RESAMPLES
    validation_ratio: Annotated[
        float, typer.Option("--validation-ratio", help="With --mixture: hash-split share.")
    ] = MIXTURE_VALIDATION_RATIO
    test_ratio: Annotated[
        float, typer.Option("--test-ratio", help="With --mixture: hash-split share.")
    ] = MIXTURE_TEST_RATIO
    eval_limit: Annotated[
        int | None,
        typer.Option("--eval-limit", help="With --mixture: evaluate on the first N instances."),
    ] = None
    decoding: Annotated[
        str, typer.Option("--decoding", help="With --mixture: decodings of the evaluation.")
    ] = "greedy"


@grouped
def finetune(
    *,
    model: Annotated[
        str,
        typer.Option(
            "--model", "-m", help="Base model: smollm2-135m, gemma3-270m, hf:<path or hub id>."
        ),
    ] = "smollm2-135m",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Adapter folder (sweeps: one subfolder per adapter)."),
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks", "-t", help="Tasks whose training split to train on, comma-separated."
        ),
    ] = None,
    templates: Annotated[
        str,
        typer.Option(
            "--templates",
            help="'all', template ids (e.g. 0-0: single-template training, Figure 2), "
            "space:N or space:all (a task's prompt space, as for `hakari run`).",
        ),
    ] = "all",
    train_size: Annotated[
        str,
        typer.Option(
            "--train-size", help="Training instances, or a list for a sweep: 1,10,100,500,1000,all."
        ),
    ] = "all",
    upsample_to: Annotated[
        int | None,
        typer.Option(
            "--upsample-to",
            help="Also train each size repeated to this many instances (D.4: 1000).",
        ),
    ] = None,
    training: TrainingOptions,
    prompt_format: Annotated[
        str, typer.Option("--prompt-format", help="auto, chat or completion (as for `hakari run`).")
    ] = "auto",
    device: DeviceOption = "auto",
    data_dir: DataDirOption = None,
    cache_dir: CacheDirOption = None,
    keep_checkpoints: Annotated[
        bool, typer.Option("--keep-checkpoints", help="Keep checkpoints after training.")
    ] = False,
    mix: MixtureOptions,
) -> None:
    """Train LoRA adapters (seed 000's Table 7 setting; seed 003's with --mixture).

    Evaluate an adapter with `hakari run --model SPEC+adapter:DIR`."""
    from hakari.finetune import run as work

    overrides = training.overrides()
    try:
        folder = work.check_base_model(model, output, prompt_format=prompt_format, device=device)
        base = work.BaseModel(
            model, folder, prompt_format, device, cache_dir, data_dir, keep_checkpoints
        )
        template_sel: str | list[str] = "all" if templates == "all" else split_csv(templates)
        if mix.mixture is not None:
            ask = work.MixtureAsk(
                mix.mixture, mix.target, mix.n_target, mix.resamples, mix.validation_ratio,
                mix.test_ratio, mix.eval_limit, tuple(split_csv(mix.decoding)),
            )  # fmt: skip
            rows = work.finetune_mixture(
                base, ask, tasks=tasks, templates=template_sel, seed=training.seed,
                overrides=overrides, say=_say,
            )  # fmt: skip
            _print_mixtures(mix.target or "", rows)
            return
        if mix.target is not None:
            raise HakariInputError("--target goes with --mixture", field="--target")
        if not tasks:
            raise HakariInputError("give --tasks (or --mixture with --target)", field="--tasks")
        summaries = work.finetune_tasks(
            base, split_csv(tasks), templates=template_sel, train_size=train_size,
            upsample_to=upsample_to, seed=training.seed, overrides=overrides, say=_say,
        )  # fmt: skip
        _print_adapters(summaries)
        chosen = "" if templates == "all" else f" --templates {templates}"
        _say(
            f"evaluate: hakari run --model {model}+adapter:{summaries[0].output} "
            f"--tasks {','.join(split_csv(tasks))}{chosen}"
        )
    except HakariInputError as exc:
        fail(exc)


def _print_adapters(summaries: list[TrainSummary]) -> None:
    table = Table(title="fine-tuning", title_justify="left")
    for col in ("adapter", "examples", "steps", "loss before", "loss after", "s", "ex/s"):
        table.add_column(col)
    for s in summaries:
        table.add_row(
            s.output, str(s.examples), str(s.steps), _num(s.loss_before),
            _num(s.loss_after), f"{s.train_seconds:.1f}", _num(s.examples_per_second),
        )  # fmt: skip
    console.print(table)


def _print_mixtures(target: str, rows: list[dict[str, Any]]) -> None:
    table = Table(title=f"mixtures → {target}", title_justify="left")
    for col in ("n_target", "resample", "steps", "best eval loss", "scores (mean over templates)"):
        table.add_column(col)
    for r in rows:
        scores = ", ".join(f"{k} {v.get('mean', float('nan')):.3f}" for k, v in r["scores"].items())
        table.add_row(
            str(r["n_target"]), str(r["resample"]), str(r["training"]["steps"]),
            _num(r["training"]["best_eval_loss"]), scores,
        )  # fmt: skip
    console.print(table)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


# `hakari finetune [options]`: one command, mounted as a group whose callback it is.
app = typer.Typer(pretty_exceptions_enable=False)
app.callback(invoke_without_command=True)(finetune)
