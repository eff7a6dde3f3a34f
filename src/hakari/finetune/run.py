"""`hakari finetune` without a console (the command and any Python caller): every option
checked and every example built before the first model loads, then the adapters trained.
The CLI (`hakari.cli.finetune`) parses the options and prints the tables.

Light to import, like the package: the sweep and the mixture machinery load when called.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hakari.backends.base import check_prompt_format
from hakari.errors import HakariInputError
from hakari.finetune.config import TrainSettings, with_overrides
from hakari.finetune.trainer import Say, TrainSummary

Templates = str | list[str]


@dataclass(frozen=True)
class BaseModel:
    """What every fine-tuning needs: the base model, where adapters go, how prompts are
    formatted, and where things are."""

    model: str
    output: Path
    prompt_format: str = "auto"
    device: str = "auto"
    cache_dir: Path | None = None
    data_dir: Path | None = None
    keep_checkpoints: bool = False

    def fields(self) -> dict[str, Any]:
        """The fields by name, as the sweep's and the mixture's planners take them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def settings_overrides(given: dict[str, Any]) -> dict[str, Any]:
    """The `TrainSettings` fields the user set (None or False: the paper's default stays);
    `lora_r`, `lora_alpha`, `lora_dropout` and `target_modules` under "lora"."""
    given = dict(given)
    lora = {
        "r": given.pop("lora_r", None),
        "alpha": given.pop("lora_alpha", None),
        "dropout": given.pop("lora_dropout", None),
        "target_modules": given.pop("target_modules", None) or None,
    }
    out = {k: v for k, v in given.items() if v is not None and v is not False}
    lora = {k: v for k, v in lora.items() if v is not None}
    if lora:
        out["lora"] = lora
    return out


def check_base_model(model: str, output: Path | None, *, prompt_format: str, device: str) -> Path:
    """The output folder, once the prompt format, the output and the model spec (a base
    model, not `SPEC+adapter:DIR`) passed their checks."""
    check_prompt_format(prompt_format)
    if output is None:
        raise HakariInputError("an output folder is required", field="--output")
    from hakari.backends.registry import check_spec

    check_spec(model, device=device)
    if "+adapter:" in model:
        raise HakariInputError("train on a base model, not on SPEC+adapter:DIR", field="--model")
    return output


def finetune_tasks(
    base: BaseModel,
    task_names: Sequence[str],
    *,
    templates: Templates,
    train_size: str,
    upsample_to: int | None,
    seed: int,
    overrides: dict[str, Any],
    say: Say = print,
) -> list[TrainSummary]:
    """Adapters on the tasks' training splits: one, or a training-size sweep
    (`finetune.sweep`)."""
    from hakari.finetune.config import check_settings
    from hakari.finetune.sweep import load_task_data, plan_sweep, run_jobs

    settings = with_overrides(TrainSettings(), overrides)
    check_settings(settings)  # the options first, then the task data (plan_sweep again)
    where = base.fields()
    tasks = load_task_data(list(task_names), where.pop("data_dir"), templates)
    jobs = plan_sweep(
        tasks=tasks,
        templates=templates,
        sizes_text=train_size,
        upsample_to=upsample_to,
        seed=seed,
        settings=settings,
        **where,
    )
    return run_jobs(jobs, base.output, say=say)


@dataclass(frozen=True)
class MixtureAsk:
    """`--mixture` and the options that go with it, as given."""

    mixture: Path
    target: str | None
    n_target: str  # comma-separated counts
    resamples: int
    validation_ratio: float
    test_ratio: float
    eval_limit: int | None
    decodings: tuple[str, ...]


def finetune_mixture(
    base: BaseModel,
    ask: MixtureAsk,
    *,
    tasks: str | None,
    templates: Templates,
    seed: int,
    overrides: dict[str, Any],
    say: Say = print,
) -> list[dict[str, Any]]:
    """Adapters on the instruction mixture plus target samples, each evaluated on the
    target task (`finetune.mixture`): one row per adapter."""
    from hakari.finetune.mixture import MixtureSpec, plan_mixture, run_mixture

    if ask.target is None:
        raise HakariInputError("--mixture needs --target TASK", field="--target")
    if tasks:
        raise HakariInputError("--tasks does not go with --mixture (use --target)", field="--tasks")
    spec = MixtureSpec(
        mixture=ask.mixture,
        target=ask.target,
        n_target=_counts(ask.n_target, "--n-target"),
        resamples=ask.resamples,
        seed=seed,
        templates=templates,
        validation_ratio=ask.validation_ratio,
        test_ratio=ask.test_ratio,
        overrides=overrides,
        eval_limit=ask.eval_limit,
        decodings=ask.decodings,
        **base.fields(),
    )
    return run_mixture(spec, plan_mixture(spec), say=say)


def _counts(text: str, field: str) -> list[int]:
    try:
        return [int(x) for x in (part.strip() for part in text.split(",")) if x]
    except ValueError:
        raise HakariInputError(
            f"{text!r} is not a comma-separated list of numbers", field=field
        ) from None
