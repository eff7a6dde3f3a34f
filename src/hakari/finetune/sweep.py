"""Task fine-tuning and the training-size sweep (seed 000, Appendix D.4).

`plan_sweep` turns the command line into jobs before any model loads: for every size,
one adapter trained on the sampled instances once ("thin lines") and, with
`upsample_to`, one on the same instances repeated to that total ("thick lines"; a size
already that large is trained once). Instances are a prefix of one seeded permutation
per task, so sizes are nested. One job writes its adapter straight into the output
folder; several get a subfolder each (`size-10`, `size-10-up1000`) and a `sweep.json`
that lists them, rewritten after every job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hakari._util import checks
from hakari._util.atomic import write_json_atomic
from hakari.finetune.config import TrainSettings, check_settings, resolve_runtime
from hakari.finetune.data import (
    Example,
    example_bytes,
    load_training_tasks,
    nested_sample,
    parse_sizes,
    task_examples,
    train_rows,
    upsample,
)
from hakari.finetune.model import check_target_modules
from hakari.finetune.trainer import (
    Say,
    TrainJob,
    TrainSummary,
    job_config,
    prepare_output,
    train_adapter,
)
from hakari.tasks.data import Row
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates

SWEEP_FILE = "sweep.json"


@dataclass(frozen=True)
class TaskData:
    task: Task
    rows: list[Row]


@dataclass(frozen=True)
class PlannedJob:
    name: str  # subfolder name ("" when the job writes into the output folder itself)
    train_size: int
    upsample_to: int | None  # None: each instance once
    job: TrainJob


def load_task_data(
    names: Sequence[str], data_dir: Path | None, templates: str | Sequence[str] = "all"
) -> list[TaskData]:
    """The tasks (`load_training_tasks`: their templates as `--templates` asks) and their
    training rows."""
    tasks = load_training_tasks(names, templates, data_dir)
    return [TaskData(task, train_rows(task, data_dir=data_dir)) for task in tasks]


def plan_sweep(
    *,
    model: str,
    tasks: Sequence[TaskData],
    templates: str | Sequence[str],
    sizes_text: str,
    upsample_to: int | None,
    seed: int,
    settings: TrainSettings,
    output: Path,
    prompt_format: str,
    device: str,
    cache_dir: Path | None,
    keep_checkpoints: bool = False,
) -> list[PlannedJob]:
    """Every adapter to train, its examples built and checked (no model is loaded)."""
    check_settings(settings)
    check_target_modules(model, settings.lora.target_modules)
    checks.optional_integer(upsample_to, "--upsample-to", low=1)
    checks.seed(seed, high=2**32 - 1)
    for td in tasks:
        select_templates(td.task.spec, templates)
    available = min(len(td.rows) for td in tasks)
    sizes = parse_sizes(sizes_text, available)
    if upsample_to is not None and available:
        # every copy is an example of its own (one per template), built before training
        one_each = sum(
            example_bytes(task_examples(td.task, td.rows, [0], templates)) for td in tasks
        )
        checks.fits_in_memory(
            upsample_to * one_each, "--upsample-to", upsample_to, "the upsampled examples"
        )
    variants: list[tuple[int, int | None]] = []
    for size in sizes:
        variants.append((size, None))
        if upsample_to is not None and size < upsample_to:
            variants.append((size, upsample_to))
    single = len(variants) == 1
    jobs = []
    for size, total in variants:
        name = "" if single else f"size-{size}" + (f"-up{total}" if total else "")
        examples: list[Example] = []
        instances: dict[str, list[int]] = {}
        for td in tasks:
            picked = nested_sample(len(td.rows), size, seed)
            used = upsample(picked, total) if total else picked
            instances[td.task.name] = picked
            examples.extend(task_examples(td.task, td.rows, used, templates))
        data: dict[str, Any] = {
            "kind": "tasks",
            "tasks": [td.task.name for td in tasks],
            "templates": templates if isinstance(templates, str) else list(templates),
            "train_size": size,
            "upsample_to": total,
            "sampling_seed": seed,
            "instances": instances,
        }
        job = TrainJob(
            model=model,
            output=output / name if name else output,
            examples=examples,
            settings=settings,
            prompt_format=prompt_format,
            device=device,
            cache_dir=cache_dir,
            data=data,
            keep_checkpoints=keep_checkpoints,
        )
        jobs.append(PlannedJob(name, size, total, job))
    return jobs


def run_jobs(jobs: Sequence[PlannedJob], output: Path, *, say: Say = print) -> list[TrainSummary]:
    """Train the planned jobs in order (finished ones are skipped, a killed one resumes);
    with several jobs, `sweep.json` lists them after each."""
    # Every folder is checked before the first model loads.
    for planned in jobs:
        prepare_output(
            planned.job,
            job_config(planned.job, resolve_runtime(planned.job.settings, planned.job.device)),
        )
    done: list[TrainSummary] = []
    rows: list[dict[str, Any]] = []
    for i, planned in enumerate(jobs, 1):
        label = planned.name or str(planned.job.output)
        say(f"[{i}/{len(jobs)}] {label}: {len(planned.job.examples)} examples")
        summary = train_adapter(planned.job, say=say)
        done.append(summary)
        rows.append(
            {
                "name": planned.name,
                "train_size": planned.train_size,
                "upsample_to": planned.upsample_to,
                **asdict(summary),
            }
        )
        if len(jobs) > 1:
            write_json_atomic(output / SWEEP_FILE, {"jobs": rows}, trailing_newline=True)
    return done
