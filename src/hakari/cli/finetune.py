"""`hakari finetune`: LoRA/QLoRA adapters on task data (and training-size sweeps), or on
IFT data mixtures with `--mixture`. Everything the user gave is checked, and every
example built, before the first model loads; bad input is one line and exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from hakari.backends.base import check_prompt_format
from hakari.cli.common import console, fail, split_csv
from hakari.cli.options import CacheDirOption, DataDirOption, DeviceOption
from hakari.errors import HakariInputError
from hakari.finetune.config import (
    MIXTURE_N_TARGET,
    MIXTURE_RESAMPLES,
    MIXTURE_TEST_RATIO,
    MIXTURE_VALIDATION_RATIO,
    TrainSettings,
    with_overrides,
)


def _say(text: str) -> None:
    console.print(text, soft_wrap=True)


def _ints(text: str, field: str) -> list[int]:
    try:
        return [int(x) for x in split_csv(text)]
    except ValueError:
        raise HakariInputError(
            f"{text!r} is not a comma-separated list of numbers", field=field
        ) from None


def finetune(
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
    seed: Annotated[
        int, typer.Option("--seed", help="Sampling and training seed (Table 7: 42).")
    ] = 42,
    qlora: Annotated[
        bool,
        typer.Option("--qlora", help="4-bit NF4 QLoRA (Table 7); CUDA only, plain LoRA on CPU."),
    ] = False,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Stop after N optimizer steps.")
    ] = None,
    epochs: Annotated[float | None, typer.Option("--epochs", help="Epochs (Table 7: 1).")] = None,
    learning_rate: Annotated[float | None, typer.Option("--learning-rate", "--lr")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size")] = None,
    grad_accum: Annotated[int | None, typer.Option("--grad-accum")] = None,
    warmup_steps: Annotated[int | None, typer.Option("--warmup-steps")] = None,
    lora_r: Annotated[int | None, typer.Option("--lora-r")] = None,
    lora_alpha: Annotated[int | None, typer.Option("--lora-alpha")] = None,
    lora_dropout: Annotated[float | None, typer.Option("--lora-dropout")] = None,
    target_modules: Annotated[
        str | None,
        typer.Option(
            "--target-modules", help="e.g. q_proj,v_proj (default: peft's for the architecture)."
        ),
    ] = None,
    max_length: Annotated[
        int | None, typer.Option("--max-length", help="Longer examples are dropped.")
    ] = None,
    optim: Annotated[
        str | None, typer.Option("--optim", help="A transformers optimizer name.")
    ] = None,
    eval_steps: Annotated[
        int | None,
        typer.Option("--eval-steps", help="With --mixture: validation loss every N steps."),
    ] = None,
    save_steps: Annotated[
        int | None, typer.Option("--save-steps", help="Checkpoint every N steps.")
    ] = None,
    prompt_format: Annotated[
        str, typer.Option("--prompt-format", help="auto, chat or completion (as for `hakari run`).")
    ] = "auto",
    device: DeviceOption = "auto",
    data_dir: DataDirOption = None,
    cache_dir: CacheDirOption = None,
    keep_checkpoints: Annotated[
        bool, typer.Option("--keep-checkpoints", help="Keep checkpoints after training.")
    ] = False,
    mixture: Annotated[
        Path | None,
        typer.Option("--mixture", help="Base instruction mixture (JSONL: prompt, response)."),
    ] = None,
    target: Annotated[
        str | None, typer.Option("--target", help="With --mixture: the target task.")
    ] = None,
    n_target: Annotated[
        str, typer.Option("--n-target", help="With --mixture: target samples added.")
    ] = ",".join(map(str, MIXTURE_N_TARGET)),
    resamples: Annotated[
        int, typer.Option("--resamples", help="With --mixture: resamples of the target samples.")
    ] = MIXTURE_RESAMPLES,
    validation_ratio: Annotated[
        float, typer.Option("--validation-ratio", help="With --mixture: hash-split share.")
    ] = MIXTURE_VALIDATION_RATIO,
    test_ratio: Annotated[
        float, typer.Option("--test-ratio", help="With --mixture: hash-split share.")
    ] = MIXTURE_TEST_RATIO,
    eval_limit: Annotated[
        int | None,
        typer.Option("--eval-limit", help="With --mixture: evaluate on the first N instances."),
    ] = None,
    decoding: Annotated[
        str, typer.Option("--decoding", help="With --mixture: decodings of the evaluation.")
    ] = "greedy",
) -> None:
    """Train LoRA adapters (seed 000's Table 7 setting; seed 003's with --mixture).

    Evaluate an adapter with `hakari run --model SPEC+adapter:DIR`."""
    overrides = _overrides(
        max_steps=max_steps, epochs=epochs, learning_rate=learning_rate, batch_size=batch_size,
        gradient_accumulation=grad_accum, warmup_steps=warmup_steps, max_length=max_length,
        optimizer=optim, save_steps=save_steps, eval_steps=eval_steps, seed=seed, qlora=qlora,
        lora_r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
        target_modules=target_modules,
    )  # fmt: skip
    try:
        check_prompt_format(prompt_format)
        if output is None:
            raise HakariInputError("an output folder is required", field="--output")
        from hakari.backends.registry import check_spec

        check_spec(model, device=device)
        if "+adapter:" in model:
            raise HakariInputError(
                "train on a base model, not on SPEC+adapter:DIR", field="--model"
            )
        template_sel: str | list[str] = "all" if templates == "all" else split_csv(templates)
        if mixture is not None:
            _run_mixture(
                model, mixture, target, tasks, n_target, resamples, seed, template_sel,
                validation_ratio, test_ratio, output, prompt_format, device, cache_dir,
                data_dir, overrides, eval_limit, decoding, keep_checkpoints,
            )  # fmt: skip
            return
        if target is not None:
            raise HakariInputError("--target goes with --mixture", field="--target")
        if not tasks:
            raise HakariInputError("give --tasks (or --mixture with --target)", field="--tasks")
        _run_tasks(
            model, split_csv(tasks), template_sel, train_size, upsample_to, seed, overrides,
            output, prompt_format, device, cache_dir, data_dir, keep_checkpoints,
        )  # fmt: skip
    except HakariInputError as exc:
        fail(exc)


def _overrides(**given: Any) -> dict[str, Any]:
    """TrainSettings fields the user set (None: the paper's default stays); LoRA fields
    under "lora"."""
    lora = {
        "r": given.pop("lora_r"),
        "alpha": given.pop("lora_alpha"),
        "dropout": given.pop("lora_dropout"),
        "target_modules": tuple(split_csv(given.pop("target_modules"))) or None,
    }
    out = {k: v for k, v in given.items() if v is not None and v is not False}
    lora = {k: v for k, v in lora.items() if v is not None}
    if lora:
        out["lora"] = lora
    return out


def _run_tasks(
    model: str, task_names: list[str], templates: str | list[str], train_size: str,
    upsample_to: int | None, seed: int, overrides: dict[str, Any], output: Path,
    prompt_format: str, device: str, cache_dir: Path | None, data_dir: Path | None,
    keep_checkpoints: bool,
) -> None:  # fmt: skip
    from hakari.finetune.config import check_settings
    from hakari.finetune.sweep import load_task_data, plan_sweep, run_jobs

    settings = with_overrides(TrainSettings(), overrides)
    check_settings(settings)  # the options first, then the task data (plan_sweep again)
    jobs = plan_sweep(
        model=model,
        tasks=load_task_data(task_names, data_dir, templates),
        templates=templates,
        sizes_text=train_size,
        upsample_to=upsample_to,
        seed=seed,
        settings=settings,
        output=output,
        prompt_format=prompt_format,
        device=device,
        cache_dir=cache_dir,
        keep_checkpoints=keep_checkpoints,
    )
    summaries = run_jobs(jobs, output, say=_say)
    table = Table(title="fine-tuning", title_justify="left")
    for col in ("adapter", "examples", "steps", "loss before", "loss after", "s", "ex/s"):
        table.add_column(col)
    for s in summaries:
        table.add_row(
            s.output, str(s.examples), str(s.steps), _num(s.loss_before),
            _num(s.loss_after), f"{s.train_seconds:.1f}", _num(s.examples_per_second),
        )  # fmt: skip
    console.print(table)
    first = summaries[0].output
    chosen = "" if templates == "all" else f" --templates {','.join(templates)}"
    _say(
        f"evaluate: hakari run --model {model}+adapter:{first} --tasks {','.join(task_names)}"
        + chosen
    )


def _run_mixture(
    model: str, mixture: Path, target: str | None, tasks: str | None, n_target: str,
    resamples: int, seed: int, templates: str | list[str], validation_ratio: float,
    test_ratio: float, output: Path, prompt_format: str, device: str,
    cache_dir: Path | None, data_dir: Path | None, overrides: dict[str, Any],
    eval_limit: int | None, decoding: str, keep_checkpoints: bool,
) -> None:  # fmt: skip
    from hakari.finetune.mixture import MixtureSpec, plan_mixture, run_mixture

    if target is None:
        raise HakariInputError("--mixture needs --target TASK", field="--target")
    if tasks:
        raise HakariInputError("--tasks does not go with --mixture (use --target)", field="--tasks")
    spec = MixtureSpec(
        model=model,
        mixture=mixture,
        target=target,
        n_target=_ints(n_target, "--n-target"),
        resamples=resamples,
        seed=seed,
        templates=templates,
        validation_ratio=validation_ratio,
        test_ratio=test_ratio,
        output=output,
        prompt_format=prompt_format,
        device=device,
        cache_dir=cache_dir,
        data_dir=data_dir,
        overrides=overrides,
        eval_limit=eval_limit,
        decodings=tuple(split_csv(decoding)),
        keep_checkpoints=keep_checkpoints,
    )
    jobs = plan_mixture(spec)
    rows = run_mixture(spec, jobs, say=_say)
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
