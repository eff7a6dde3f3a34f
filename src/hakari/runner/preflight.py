"""Everything a run can check before the first model loads, so that bad input costs
seconds, not a model load or an hour of generation, and ends as one `HakariInputError`
(CLI: one line, exit code 2) naming the file, row, template, field or option.

* options: numbers in range (`--alpha` finite and ≥ 0, `--limit`, `--sample`, `--n-boot`,
  the serving options, ...) through `hakari._util.checks`, and `--n-boot` against the
  memory its bootstraps will hold (once the rows are counted);
* models: every `--model` spec resolved without loading weights, no duplicates; a
  server that cannot serve a decoding the run asks for (log-likelihood through a chat
  endpoint, a regex field it rejects or ignores, ...) is refused before any prompt; an
  answer budget that leaves no room for a prompt in a model's known context;
* tasks: no two with the same name, templates selected, regexes usable as constraints,
  every answer key reachable by its template's regex;
* rows: every row the run will use (not just the first), streamed once: the target
  field and each field a selected template reads exist and are not null, the gold is a
  label (or a number), every prompt renders; the same pass gives the shared baselines;
* budgets: a budgeted run on a grid too small to estimate honestly
  (`aggregate.budget.floor`) says so in one line and runs the full grid, or is refused
  with the smallest honest budget (`plan.check_budget_floor`);
* engines: vLLM engines a run keeps open together fit the device's memory together.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from hakari._util import checks
from hakari.aggregate import bootstrap_bytes
from hakari.backends import registry
from hakari.backends.base import MAX_BATCH_SIZE
from hakari.backends.cpu import check_threads
from hakari.backends.options import LoadOptions
from hakari.backends.serving import ServingOptions, engine_options_given
from hakari.errors import HakariInputError
from hakari.results.vocab import ALL_ITEMS, QA_MODES
from hakari.runner.baselines import Baseline, task_baseline
from hakari.runner.options import Decoding, skip_reason
from hakari.runner.requests import request_needs
from hakari.runner.sampling import check_sampling, task_instances
from hakari.runner.settings import EvalOptions, PlanOptions
from hakari.tasks.chance import instance_guess_rate
from hakari.tasks.data import get_path, resolve_split_file
from hakari.tasks.duplicates import DuplicateRows
from hakari.tasks.extract import gold_answer
from hakari.tasks.loader import (
    Task,
    check_answer_keys,
    check_constraints,
    check_rendered_answers,
    check_row_field,
    check_task_data,
    gold_problem,
    rendered_regex,
)
from hakari.tasks.prompts import render, select_templates
from hakari.tasks.spec import INSTANCE_REF, Template

log = logging.getLogger(__name__)


def check_options(options: EvalOptions) -> None:
    """Every option's type and range, one line naming it (the same from the CLI and from
    `evaluate`)."""
    load, plan = options.load, options.plan
    if not isinstance(load.serving, ServingOptions):
        raise HakariInputError("must be a ServingOptions", field="serving")
    checks.folder(load.cache_dir, "--cache-dir")
    check_threads(load.threads)  # None: the rule of `backends.cpu`
    checks.choice(plan.qa_mode, "--qa-mode", QA_MODES)
    checks.flag(load.use_cache, "--no-cache")
    if plan.limit != ALL_ITEMS:  # "all": every instance, past a jaster set's first 100
        checks.optional_integer(plan.limit, "--limit", low=1)
    check_sampling(plan.sample, plan.limit, plan.seed)
    checks.number(plan.alpha, "--alpha", low=0.0)  # Sharpe: mean / (alpha · std + 1)
    checks.bootstrap_replicates(plan.n_boot, "--n-boot")  # 0: no bootstrap
    if load.batch_size is not None:  # None: the backend chooses
        checks.integer(load.batch_size, "--batch-size", low=1, high=MAX_BATCH_SIZE)
    load.serving.check()
    data_dir = plan.data_path
    if data_dir is not None and not data_dir.is_dir():
        # named at once, not after the hub was asked (and retried) for every task
        what = "is not a folder" if data_dir.exists() else "does not exist"
        raise HakariInputError(f"{data_dir} {what}", field="--data-dir")


def check_bootstrap_memory(
    tasks: Sequence[Task], baselines: dict[str, Baseline], n_models: int, plan: PlanOptions,
) -> None:  # fmt: skip
    """`--n-boot` against the memory the bootstraps will hold: every model's replicates of
    every metric are kept for the paired comparisons (`aggregate.bootstrap_bytes`)."""
    if plan.n_boot == 0:
        return
    decodings = plan.decoding_list
    kept = widest = 0
    for task in tasks:
        if baselines[task.name][0] < 2:
            continue  # no bootstrap on one instance
        n_templates = len(select_templates(task.spec, plan.templates))
        kept += n_models * len(decodings) * len(task.spec.metrics) * n_templates
        widest = max(widest, n_templates)
    needed = bootstrap_bytes(plan.n_boot, kept_templates=kept, widest=widest)
    checks.fits_in_memory(needed, "--n-boot", plan.n_boot, "the bootstrap replicates")


def check_models(
    models: Sequence[str], load: LoadOptions, decodings: Sequence[Decoding], *, builtin_loader: bool
) -> None:
    """Every spec resolves (with the built-in loader; a custom `backend_factory` owns its
    specs) and can serve the decodings the run will ask of it (`running_decodings`); none
    repeats (results are keyed by spec). Prompt formats: `check_formats_before_loading`."""
    if not models:
        raise HakariInputError("no model given", field="--model")
    seen: dict[str, str] = {}
    for spec in models:
        key = registry.model_key(spec) if builtin_loader else spec
        if key in seen:
            also = "" if seen[key] == spec else f" (as {seen[key]!r} too)"
            raise HakariInputError(f"model {spec!r} is given twice{also}", field="--model")
        seen[key] = spec
    if builtin_loader:
        _check_engine_options(models, load)
        for spec in models:
            registry.check_spec(spec, load, needs=request_needs(decodings))


def check_context(models: Sequence[str], tasks: Sequence[Task], options: EvalOptions) -> None:
    """A task's answer budget leaves room for a prompt in each model's context, where
    it is known before the model loads (`registry.context_length`)."""
    generating = [d for d in options.plan.decoding_list if d != "loglik"]
    for model in models:
        context = registry.context_length(model, options.load.serving)
        for task in tasks:
            spec = task.spec
            if context is None or all(skip_reason(d, spec.answer_type) for d in generating):
                continue
            templates = select_templates(spec, options.plan.templates)
            tokens = max(spec.max_tokens_for(t) for t in templates)
            if tokens >= context:
                raise HakariInputError(
                    f"max_new_tokens {tokens} leaves no room for a prompt in the {context:,}-"
                    f"token context of {model} (give the answer fewer tokens, or run "
                    "--decoding loglik)",
                    file=str(task.path),
                    field="max_new_tokens",
                )


def _check_engine_options(models: Sequence[str], load: LoadOptions) -> None:
    """vLLM's engine options apply to `vllm:` models only: given to a run without one,
    they would be recorded in config.serving and change nothing."""
    given = engine_options_given(load.serving)
    if given and not any(registry.spec_form(m)[0].name == "vllm" for m in models):
        raise HakariInputError(
            f"{given[0]} applies to vllm: models only, and no --model is one (an openai: "
            "server takes its engine options where it is started)",
            field=given[0],
        )


def engines_together(models: Sequence[str], load: LoadOptions, keep_open: bool) -> int:
    """The vLLM engines a run holds at once (every `vllm:` model's when its plan keeps the
    models open across rounds, `loop.Backends`; else one), checked to fit together: a
    `--gpu-memory-utilization` given for each must leave room for the others."""
    vllm = sum(registry.spec_form(m)[0].name == "vllm" for m in models)
    engines = max(1, vllm if keep_open else min(vllm, 1))
    share = load.serving.gpu_memory_utilization
    if share is not None and share * engines > 1:
        raise HakariInputError(
            f"{share:g} of the device's memory for each of the {engines} vLLM engines this "
            "run keeps open together (its rounds keep every model loaded) is more than the "
            f"whole: give at most {1 / engines:.2f}, or leave it out (then split evenly)",
            field="--gpu-memory-utilization",
        )
    return engines


def running_decodings(tasks: Sequence[Task], decodings: Sequence[Decoding]) -> list[Decoding]:
    """The decodings some task will run (`skip_reason`: loglik scores label tasks only);
    none is refused: the run would load every model to score nothing."""
    kinds = [t.spec.answer_type for t in tasks]
    running = [d for d in decodings if any(skip_reason(d, kind) is None for kind in kinds)]
    if tasks and not running:
        why = f"{skip_reason(decodings[0], kinds[0])} ({tasks[0].name}'s answers are {kinds[0]})"
        raise HakariInputError(f"no task can run it: {why}", field="--decoding")
    return running


def check_tasks(tasks: Sequence[Task], plan: PlanOptions, decodings: Sequence[Decoding]) -> None:
    """Static checks of every task (no row beyond the first few is read)."""
    if not tasks:
        raise HakariInputError("no task given", field="--tasks")
    if not decodings:
        raise HakariInputError("no decoding given", field="--decoding")
    names: dict[str, Task] = {}
    for task in tasks:
        if task.name in names:
            raise HakariInputError(
                f"two tasks are named {task.name!r} (also {names[task.name].path}); "
                "results are keyed by task name",
                file=str(task.path),
                field="name",
            )
        names[task.name] = task
    constrained = "constrained" in decodings
    for task in tasks:
        check_task_data(task, data_dir=plan.data_path)
        templates = select_templates(task.spec, plan.templates)
        if not templates:
            raise HakariInputError("no template selected", field="--templates")
        if constrained:
            check_constraints(task)
        check_answer_keys(task, templates, constrained=constrained)


def scan_rows(task: Task, plan: PlanOptions, decodings: Sequence[Decoding]) -> Baseline:
    """Check every row the run will use against the selected templates (one streamed
    pass, no prompt kept) and return the instance count and the chance rates."""
    spec = task.spec
    templates = select_templates(spec, plan.templates)
    fields = _fields_read(task, templates)
    source = data_source(task, plan)
    constrained = "constrained" in decodings
    golds: list[Any] = []
    positions: list[int] = []
    guess_rates: list[float] = []  # each instance's 1/k_i
    filled_regexes = {t.id for t in templates if INSTANCE_REF.search(t.regex)}
    repeats = DuplicateRows(spec, list(fields))
    for index, row in task_instances(task, plan):
        where: dict[str, Any] = {"file": source, "row": index}
        for name, template_id in fields.items():
            check_row_field(task, row, name, template_id, where)
        repeats.add(index, row)
        value = get_path(row, spec.field_path(spec.target))
        try:
            golds.append(gold_answer(spec, value))
        except (ValueError, TypeError) as exc:
            raise HakariInputError(
                gold_problem(task, value, exc), field="target", **where
            ) from None
        guess_rates.append(instance_guess_rate(spec, row))
        positions.append(index)
        for template in templates:
            try:
                rendered = render(spec, template, row, index)
            except (ValueError, TypeError, IndexError, KeyError) as exc:
                raise HakariInputError(
                    f"the prompt cannot be filled: {exc}", template=template.id, **where
                ) from None
            if template.id in filled_regexes:  # its {{field}} values can make it too big
                rendered_regex(task, template.id, rendered.regex, index)
            if len(golds) == 1 and template.instance_refs():  # the first evaluated row
                check_rendered_answers(
                    task,
                    template.id,
                    rendered.regex,
                    rendered.answers,
                    index,
                    constrained=constrained,
                )
    if not golds:
        raise HakariInputError("no instances to evaluate", file=source, field="data")
    baseline = task_baseline(task, golds, plan, guess_rates, positions)
    repeated = repeats.note(source)
    if repeated is not None:
        log.warning("%s: %s", task.name, repeated)
        baseline = baseline._replace(notes=(*baseline.notes, repeated))
    return baseline


def data_source(task: Task, plan: PlanOptions) -> str:
    """The file (or hub dataset) the evaluated rows come from, for messages."""
    data = task.spec.data
    if data.instances is not None:
        return f"{task.path} (inline instances)"
    if data.jaster is not None:
        return f"{task.path} (jaster {data.eval_split} split)"
    split = data.splits[data.eval_split]
    data_dir = plan.data_path
    local = resolve_split_file(split, data_dir=data_dir, task_dir=task.task_dir)
    use_local = local is not None and (
        split.hub_split is None or (data_dir is not None and local.is_file())
    )
    if use_local:
        return str(local)
    hub = data.hub
    return f"hub {hub.path} ({hub.name or 'default'}, {split.hub_split})" if hub else str(task.path)


def _fields_read(task: Task, templates: Sequence[Template]) -> dict[str, str | None]:
    """Field name → the first template that reads it (None: the target)."""
    fields: dict[str, str | None] = {task.spec.target: None}
    for template in templates:
        for name in (*template.placeholders(), *sorted(template.instance_refs())):
            fields.setdefault(name, template.id)
    return fields
