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
  with the smallest honest budget.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hakari._util import checks
from hakari.aggregate import bootstrap_bytes
from hakari.aggregate.budget.floor import grid_verdict
from hakari.backends import registry
from hakari.backends.serving import engine_options_given
from hakari.errors import HakariInputError
from hakari.runner.baselines import Baseline, task_baseline
from hakari.runner.collect import task_instances
from hakari.runner.options import Decoding, RunOptions, skip_reason
from hakari.runner.requests import request_needs
from hakari.runner.sampling import check_sampling
from hakari.tasks.chance import instance_guess_rate
from hakari.tasks.data import get_path, resolve_split_file
from hakari.tasks.duplicates import DuplicateRows
from hakari.tasks.extract import QA_MODES, gold_answer
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

if TYPE_CHECKING:
    from hakari.runner.plan import Plan

log = logging.getLogger(__name__)


def check_options(opts: RunOptions) -> None:
    checks.choice(opts.qa_mode, "--qa-mode", QA_MODES)
    checks.flag(opts.use_cache, "--no-cache")
    checks.optional_integer(opts.limit, "--limit", low=1)
    check_sampling(opts.sample, opts.limit, opts.seed)
    checks.number(opts.alpha, "--alpha", low=0.0)  # Sharpe: mean / (alpha · std + 1)
    checks.bootstrap_replicates(opts.n_boot, "--n-boot")  # 0: no bootstrap
    if opts.batch_size is not None:  # None: the backend chooses
        checks.integer(opts.batch_size, "--batch-size", low=1)
    opts.serving.check()
    if opts.data_dir is not None and not opts.data_dir.is_dir():
        # named at once, not after the hub was asked (and retried) for every task
        what = "is not a folder" if opts.data_dir.exists() else "does not exist"
        raise HakariInputError(f"{opts.data_dir} {what}", field="--data-dir")


def check_bootstrap_memory(
    tasks: Sequence[Task], baselines: dict[str, Baseline], n_models: int, opts: RunOptions,
    decodings: Sequence[Decoding],
) -> None:  # fmt: skip
    """`--n-boot` against the memory the bootstraps will hold: every model's replicates of
    every metric are kept for the paired comparisons (`aggregate.bootstrap_bytes`)."""
    if opts.n_boot == 0:
        return
    kept = widest = 0
    for task in tasks:
        if baselines[task.name][0] < 2:
            continue  # no bootstrap on one instance
        n_templates = len(select_templates(task.spec, opts.templates))
        kept += n_models * len(decodings) * len(task.spec.metrics) * n_templates
        widest = max(widest, n_templates)
    needed = bootstrap_bytes(opts.n_boot, kept_templates=kept, widest=widest)
    checks.fits_in_memory(needed, "--n-boot", opts.n_boot, "the bootstrap replicates")


def check_models(
    models: Sequence[str],
    opts: RunOptions,
    decodings: Sequence[Decoding],
    *,
    builtin_loader: bool,
) -> None:
    """Every spec resolves (with the built-in loader; a custom `backend_factory` owns its
    specs) and can serve the decodings the run will ask of it (`running_decodings`) in
    the prompt format asked for; none repeats (results are keyed by spec)."""
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
        _check_engine_options(models, opts)
        for spec in models:
            registry.check_spec(
                spec,
                dtype=opts.dtype,
                device=opts.device,
                prompt_format=opts.prompt_format,
                serving=opts.serving,
                needs=request_needs(decodings),
            )
            if opts.prompt_format == "chat" and registry.has_chat_template(spec) is False:
                raise HakariInputError(
                    f"--prompt-format chat: model {spec!r} has no chat template; use auto "
                    "(chat where a model has a template) or completion",
                    field="--prompt-format",
                )


def check_context(
    models: Sequence[str], tasks: Sequence[Task], opts: RunOptions, decodings: Sequence[Decoding]
) -> None:
    """A task's answer budget leaves room for a prompt in each model's context, where
    it is known before the model loads (`registry.context_length`)."""
    generating = [d for d in decodings if d != "loglik"]
    for model in models:
        context = registry.context_length(model, opts.serving)
        for task in tasks:
            spec = task.spec
            if context is None or all(skip_reason(d, spec.answer_type) for d in generating):
                continue
            tokens = max(spec.max_tokens_for(t) for t in select_templates(spec, opts.templates))
            if tokens >= context:
                raise HakariInputError(
                    f"max_new_tokens {tokens} leaves no room for a prompt in the {context:,}-"
                    f"token context of {model} (give the answer fewer tokens, or run "
                    "--decoding loglik)",
                    file=str(task.path),
                    field="max_new_tokens",
                )


def _check_engine_options(models: Sequence[str], opts: RunOptions) -> None:
    """vLLM's engine options apply to `vllm:` models only: given to a run without one,
    they would be recorded in config.serving and change nothing."""
    given = engine_options_given(opts.serving)
    if given and not any(registry.spec_form(m)[0].name == "vllm" for m in models):
        raise HakariInputError(
            f"{given[0]} applies to vllm: models only, and no --model is one (an openai: "
            "server takes its engine options where it is started)",
            field=given[0],
        )


def running_decodings(tasks: Sequence[Task], decodings: Sequence[Decoding]) -> list[Decoding]:
    """The decodings some task will run (`skip_reason`: loglik scores label tasks only)."""
    return [d for d in decodings if any(skip_reason(d, t.spec.answer_type) is None for t in tasks)]


def check_tasks(tasks: Sequence[Task], opts: RunOptions, decodings: Sequence[Decoding]) -> None:
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
        check_task_data(task, data_dir=opts.data_dir)
        templates = select_templates(task.spec, opts.templates)
        if not templates:
            raise HakariInputError("no template selected", field="--templates")
        if constrained:
            check_constraints(task)
        check_answer_keys(task, templates, constrained=constrained)


def scan_rows(task: Task, opts: RunOptions, decodings: Sequence[Decoding]) -> Baseline:
    """Check every row the run will use against the selected templates (one streamed
    pass, no prompt kept) and return the instance count and the chance rates."""
    spec = task.spec
    templates = select_templates(spec, opts.templates)
    fields = _fields_read(task, templates)
    source = data_source(task, opts)
    constrained = "constrained" in decodings
    golds: list[Any] = []
    positions: list[int] = []
    guess_rates: list[float] = []  # each instance's 1/k_i
    filled_regexes = {t.id for t in templates if INSTANCE_REF.search(t.regex)}
    repeats = DuplicateRows(spec, list(fields))
    for index, row in task_instances(task, opts):
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
    baseline = task_baseline(task, golds, opts, guess_rates, positions)
    repeated = repeats.note(source)
    if repeated is not None:
        log.warning("%s: %s", task.name, repeated)
        baseline = baseline._replace(notes=(*baseline.notes, repeated))
    return baseline


def data_source(task: Task, opts: RunOptions) -> str:
    """The file (or hub dataset) the evaluated rows come from, for messages."""
    data = task.spec.data
    if data.instances is not None:
        return f"{task.path} (inline instances)"
    split = data.splits[data.eval_split]
    local = resolve_split_file(split, data_dir=opts.data_dir, task_dir=task.task_dir)
    use_local = local is not None and (
        split.hub_split is None or (opts.data_dir is not None and local.is_file())
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


def check_budget_floor(
    tasks: Sequence[Task], baselines: dict[str, Baseline], plan: Plan, opts: RunOptions
) -> Plan:
    """The plan with the tasks whose grid is too small to estimate honestly from the
    budget (`aggregate.budget.floor.grid_verdict`) run in full, each said in one line; a
    `HakariInputError` naming `--budget` and the smallest honest budget when the grid is
    not cheap to run in full. A sequential run is judged on its first round."""
    full: set[str] = set(plan.in_full)
    for task in tasks:
        n_templates = len(select_templates(task.spec, opts.templates))
        n_instances = baselines[task.name][0]
        verdict = grid_verdict(n_templates, n_instances, plan.rounds(n_templates, n_instances)[0])
        if verdict.action == "refuse":
            raise HakariInputError(str(verdict.message), file=str(task.path), field="--budget")
        if verdict.action == "full":
            log.warning("%s: %s", task.name, verdict.message)
            full.add(task.name)
    return dataclasses.replace(plan, in_full=frozenset(full))
