"""IFT data mixtures (seed 003, §3 and Appendix A.5): N real target-task samples added to
a base instruction mixture, several resamples, each adapter evaluated on the target.

* Every base example and every target instance is put in train, validation or test by
  the hash of its content (`data.hash_split`), so a test item never reaches training
  whatever N or the resample.
* For resample r, the target's training instances are permuted with seed `seed + r`;
  N takes the first N (nested: the 25 contain the 10), each rendered with one template
  drawn with the same seed. N = 0 is the base mixture alone, trained once.
* Validation (early stopping) is the base mixture's validation part plus up to 100 of
  the target's validation instances (the paper's "100 samples to serve as a validation
  split").
* The schedule is `config.mixture_settings`; each adapter is then evaluated with
  `hakari.evaluate` on the target task's evaluation split, through the same pipeline and
  cache as any model.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hakari._util import checks
from hakari._util.atomic import write_json_atomic
from hakari.backends.base import check_prompt_format
from hakari.errors import HakariInputError
from hakari.finetune.config import (
    TrainSettings,
    check_settings,
    mixture_settings,
    resolve_runtime,
    with_overrides,
)
from hakari.finetune.data import (
    Example,
    example_bytes,
    example_key,
    hash_split,
    load_training_tasks,
    nested_sample,
    read_mixture,
    row_key,
    task_examples,
    train_rows,
)
from hakari.finetune.model import check_target_modules
from hakari.finetune.trainer import Say, TrainJob, job_config, prepare_output, train_adapter
from hakari.runner import evaluate
from hakari.runner.options import parse_decodings
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates

if TYPE_CHECKING:
    from hakari.results import EvalResults

MIXTURE_FILE = "mixture.json"
TARGET_VALIDATION_CAP = 100


@dataclass(frozen=True)
class MixtureSpec:
    model: str
    mixture: Path
    target: str
    n_target: Sequence[int]
    resamples: int
    seed: int
    templates: str | Sequence[str]
    validation_ratio: float
    test_ratio: float
    output: Path
    prompt_format: str = "auto"
    device: str = "auto"
    cache_dir: Path | None = None
    data_dir: Path | None = None
    overrides: dict[str, Any] | None = None  # TrainSettings fields given on the command line
    eval_limit: int | None = None
    decodings: Sequence[str] = ("greedy",)
    keep_checkpoints: bool = False


@dataclass(frozen=True)
class MixtureJob:
    n_target: int
    resample: int
    job: TrainJob


@dataclass(frozen=True)
class _Parts:
    base_train: list[Example]
    validation: list[Example]
    target_train: list[int]  # row indices
    base_counts: dict[str, int]
    target_counts: dict[str, int]


def plan_mixture(spec: MixtureSpec) -> list[MixtureJob]:
    """Every mixture to train, built and checked before any model loads."""
    checks.integer(spec.resamples, "--resamples", low=1)
    for n in spec.n_target:
        checks.integer(n, "--n-target", low=0)
    checks.seed(spec.seed, high=2**32 - 1)
    checks.number(spec.validation_ratio, "--validation-ratio", low=0.0, high=1.0, high_open=True)
    checks.number(spec.test_ratio, "--test-ratio", low=0.0, high=1.0, high_open=True)
    if spec.validation_ratio + spec.test_ratio >= 1:
        raise HakariInputError("validation + test ratios must be below 1", field="--test-ratio")
    checks.optional_integer(spec.eval_limit, "--eval-limit", low=1)
    # the evaluation's options, found now rather than after the first adapter trained
    parse_decodings(list(spec.decodings))
    check_prompt_format(spec.prompt_format)
    settings = _settings(spec, 1)  # the schedule's numbers depend on the size, not their ranges
    check_settings(settings)
    check_target_modules(spec.model, settings.lora.target_modules)
    loaded = load_training_tasks([spec.target], spec.templates, spec.data_dir)
    if len(loaded) != 1:
        raise HakariInputError(
            f"--target names one task; {spec.target} is a family of {len(loaded)} "
            f"(give {spec.target}:MEMBER)",
            field="--target",
        )
    task = loaded[0]
    select_templates(task.spec, spec.templates)
    base = read_mixture(spec.mixture)
    rows = train_rows(task, data_dir=spec.data_dir)
    parts = _split(spec, task, base, rows)
    too_many = [n for n in spec.n_target if n > len(parts.target_train)]
    if too_many:
        raise HakariInputError(
            f"{max(too_many)} is more than the {len(parts.target_train)} training instances "
            f"of {task.name} in the train part of the hash split",
            field="--n-target",
        )
    _check_jobs_memory(spec, task, rows, parts)
    jobs = []
    for resample in range(spec.resamples):
        seed = spec.seed + resample
        order = nested_sample(len(parts.target_train), len(parts.target_train), seed)
        chooser = random.Random(seed)
        template_ids = [t.id for t in select_templates(task.spec, spec.templates)]
        picks = [chooser.choice(template_ids) for _ in order]
        for n in spec.n_target:
            if n == 0 and resample > 0:
                continue  # nothing to resample: the base mixture alone is trained once
            target = []
            for pos in range(n):
                index = parts.target_train[order[pos]]
                target.extend(task_examples(task, rows, [index], [picks[pos]]))
            train = parts.base_train + target
            settings = _settings(spec, len(train))
            data = {
                "kind": "mixture",
                "mixture": str(spec.mixture),
                "target": task.name,
                "n_target": n,
                "resample": resample,
                "sampling_seed": seed,
                "hash_split": {
                    "validation_ratio": spec.validation_ratio,
                    "test_ratio": spec.test_ratio,
                    "base": parts.base_counts,
                    "target": parts.target_counts,
                },
            }
            job = TrainJob(
                model=spec.model,
                output=spec.output / f"n{n}-r{resample}",
                examples=train,
                validation=parts.validation,
                settings=settings,
                prompt_format=spec.prompt_format,
                device=spec.device,
                cache_dir=spec.cache_dir,
                data=data,
                keep_checkpoints=spec.keep_checkpoints,
            )
            jobs.append(MixtureJob(n, resample, job))
    return jobs


def _check_jobs_memory(spec: MixtureSpec, task: Task, rows: list[Any], parts: _Parts) -> None:
    """All jobs are planned (their example lists built) before the first one trains: each
    lists the base mixture's train part (shared examples, one reference each) and its own
    target examples, for every resample and N."""
    n_jobs = spec.resamples * len(spec.n_target)
    target_each = example_bytes(task_examples(task, rows, [0], "all")[:1]) if rows else 0
    per_job = 8 * len(parts.base_train) + max(spec.n_target, default=0) * target_each
    checks.fits_in_memory(n_jobs * per_job, "--resamples", spec.resamples, "the planned mixtures")


def _split(spec: MixtureSpec, task: Task, base: list[Example], rows: list[Any]) -> _Parts:
    ratios = (spec.validation_ratio, spec.test_ratio)
    base_parts: dict[str, list[Example]] = {"train": [], "validation": [], "test": []}
    for ex in base:
        base_parts[hash_split(example_key(ex), *ratios)].append(ex)
    target_parts: dict[str, list[int]] = {"train": [], "validation": [], "test": []}
    for i, row in enumerate(rows):
        target_parts[hash_split(row_key(task.name, row), *ratios)].append(i)
    if not base_parts["train"]:
        raise HakariInputError(
            "no row of the mixture falls in the train part of the hash split",
            file=str(spec.mixture),
        )
    val_ids = target_parts["validation"][:TARGET_VALIDATION_CAP]
    first_template = select_templates(task.spec, spec.templates)[0].id
    target_val = task_examples(task, rows, val_ids, [first_template])
    return _Parts(
        base_train=base_parts["train"],
        validation=base_parts["validation"] + target_val,
        target_train=target_parts["train"],
        base_counts={k: len(v) for k, v in base_parts.items()},
        target_counts={k: len(v) for k, v in target_parts.items()},
    )


def _settings(spec: MixtureSpec, n_examples: int) -> TrainSettings:
    return with_overrides(mixture_settings(n_examples), spec.overrides)


def run_mixture(spec: MixtureSpec, jobs: Sequence[MixtureJob], *, say: Say = print) -> list[dict]:
    """Train every mixture (finished ones skipped) and evaluate each adapter on the
    target task; `mixture.json` holds one row per adapter, rewritten after each."""
    for mj in jobs:
        prepare_output(mj.job, job_config(mj.job, resolve_runtime(mj.job.settings, mj.job.device)))
    rows: list[dict[str, Any]] = []
    for i, mj in enumerate(jobs, 1):
        say(
            f"[{i}/{len(jobs)}] n_target={mj.n_target} resample={mj.resample}: "
            f"{len(mj.job.examples)} examples, {mj.job.settings.max_steps} steps at most"
        )
        summary = train_adapter(mj.job, say=say)
        results = evaluate(
            models=[f"{spec.model}+adapter:{mj.job.output}"],
            tasks=[spec.target],
            decodings=list(spec.decodings),
            templates=spec.templates,
            limit=spec.eval_limit,
            output_dir=mj.job.output / "eval",
            cache_dir=spec.cache_dir,
            prompt_format=spec.prompt_format,
            data_dir=spec.data_dir,
            device=spec.device,
            n_boot=0,
        )
        rows.append(
            {
                "n_target": mj.n_target,
                "resample": mj.resample,
                "adapter": str(mj.job.output),
                "training": asdict(summary),
                "scores": _scores(results),
            }
        )
        write_json_atomic(
            spec.output / MIXTURE_FILE, {"target": spec.target, "runs": rows}, trailing_newline=True
        )
    return rows


def _scores(results: EvalResults) -> dict[str, dict[str, float]]:
    """decoding → metric → mean across templates (and std, Sharpe)."""
    model = next(iter(results.models.values()))
    task = next(iter(model.tasks.values()))
    out: dict[str, dict[str, float]] = {}
    for decoding, dec in task.decodings.items():
        for metric, agg in dec.aggregate.items():
            out[f"{decoding}/{metric}"] = {"mean": agg.mean, "std": agg.std, "sharpe": agg.sharpe}
    return out
