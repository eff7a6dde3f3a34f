"""Everything a run can check before the first model loads, so that bad input costs
seconds, not a model load or an hour of generation, and ends as one `HakariInputError`
(CLI: one line, exit code 2) naming the file, row, template, field or option.

* options: numbers in range (`--alpha` finite and ≥ 0, `--limit`, `--sample`, `--n-boot`,
  the serving options, ...) through `hakari._util.checks`, and `--n-boot` against the
  memory its bootstraps will hold (once the rows are counted);
* models: every `--model` spec resolved without loading weights, no duplicates; a
  server that cannot serve a decoding the run asks for (log-likelihood through a chat
  endpoint, a regex field it rejects or ignores, ...) is refused before any prompt;
* tasks: no two with the same name, templates selected, regexes usable as constraints,
  every answer key reachable by its template's regex;
* rows: every row the run will use (not just the first), streamed once: the target
  field and each field a selected template reads exist and are not null, the gold is
  a label of the task (or a number), every prompt renders. The same pass counts the
  instances and computes the chance-rate baseline, which every model shares.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from hakari._util import checks
from hakari.aggregate import bootstrap_bytes
from hakari.backends import registry
from hakari.errors import HakariInputError
from hakari.results import TaskResult
from hakari.runner.collect import task_instances
from hakari.runner.options import Decoding, RunOptions, skip_reason
from hakari.runner.sampling import check_sampling
from hakari.tasks.chance import (
    chance_rates,
    majority_answer_rates,
    split_golds,
    uniform_guess_rates,
)
from hakari.tasks.data import Row, get_path, resolve_split_file
from hakari.tasks.extract import QA_MODES, gold_answer
from hakari.tasks.loader import (
    Task,
    check_answer_keys,
    check_constraints,
    check_rendered_answers,
    check_task_data,
    rendered_regex,
)
from hakari.tasks.prompts import render, select_templates
from hakari.tasks.spec import INSTANCE_REF, TaskSpec, Template


class Baseline(NamedTuple):
    """What the row scan learns of a task, shared by every model: the instances evaluated
    and the trivial baselines per metric (`hakari.tasks.chance`)."""

    n_rows: int
    chance: dict[str, float]  # the paper's fallback-only score
    uniform_guess: dict[str, float]
    majority_answer: dict[str, float]
    notes: tuple[str, ...] = ()

    def task_result(self, spec: TaskSpec) -> TaskResult:
        """The task's result before any decoding has run, its baselines filled in."""
        out = TaskResult.for_task(spec, self.n_rows, self.chance)
        if self.uniform_guess:
            out.uniform_guess = self.uniform_guess
        if self.majority_answer:
            out.majority_answer = self.majority_answer
        if self.notes:
            out.notes = list(self.notes)
        return out


def check_options(opts: RunOptions) -> None:
    checks.choice(opts.qa_mode, "--qa-mode", QA_MODES)
    checks.optional_integer(opts.limit, "--limit", low=1)
    check_sampling(opts.sample, opts.limit, opts.seed)
    checks.number(opts.alpha, "--alpha", low=0.0)  # Sharpe: mean / (alpha · std + 1)
    checks.integer(opts.n_boot, "--n-boot", low=0)  # 0: no bootstrap
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
    seen: set[str] = set()
    for spec in models:
        if spec in seen:
            raise HakariInputError(f"model {spec!r} is given twice", field="--model")
        seen.add(spec)
    if builtin_loader:
        for spec in models:
            registry.check_spec(
                spec,
                dtype=opts.dtype,
                device=opts.device,
                prompt_format=opts.prompt_format,
                serving=opts.serving,
                decodings=decodings,
            )
            if opts.prompt_format == "chat" and registry.has_chat_template(spec) is False:
                raise HakariInputError(
                    f"--prompt-format chat: model {spec!r} has no chat template; use auto "
                    "(chat where a model has a template) or completion",
                    field="--prompt-format",
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
    filled_regexes = {t.id for t in templates if INSTANCE_REF.search(t.regex)}
    for index, row in task_instances(task, opts):
        where: dict[str, Any] = {"file": source, "row": index}
        for name, template_id in fields.items():
            _check_value(task, row, name, template_id, where)
        value = get_path(row, spec.field_path(spec.target))
        try:
            golds.append(gold_answer(spec, value))
        except (ValueError, TypeError) as exc:
            raise HakariInputError(
                _gold_problem(task, value, exc), field="target", **where
            ) from None
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
    notes = (_label_mix_note(task, golds, opts),) if opts.limit is not None else ()
    return Baseline(
        len(golds),
        chance_rates(spec, golds),
        uniform_guess_rates(spec),
        majority_answer_rates(spec, golds),
        tuple(n for n in notes if n),
    )


LABEL_MIX_DISTANCE = 0.2  # total variation distance that makes --limit's label mix "far"


def _label_mix_note(task: Task, golds: list[Any], opts: RunOptions) -> str | None:
    """One line when the first --limit instances hold a label mix far from the split's
    (JGLUE's files are ordered by label): the numbers would describe another task."""
    spec = task.spec
    if spec.answer_type != "label" or not spec.labels:
        return None
    try:
        split = [gold_answer(spec, g) for g in split_golds(task, data_dir=opts.data_dir)]
    except (HakariInputError, ValueError, TypeError):
        return None  # rows past --limit are not the run's: a bad one there is no error
    if len(split) <= len(golds):
        return None
    share_run, share_all = Counter(golds), Counter(split)
    distance = 0.5 * sum(
        abs(share_run[x] / len(golds) - share_all[x] / len(split)) for x in spec.labels
    )
    if distance <= LABEL_MIX_DISTANCE:
        return None
    mix = ", ".join(f"{x} {share_run[x] / len(golds):.0%}" for x in spec.labels)
    whole = ", ".join(f"{x} {share_all[x] / len(split):.0%}" for x in spec.labels)
    return (
        f"--limit {opts.limit} takes the split's first rows: labels {mix} (whole split: "
        f"{whole}); --sample {opts.limit} draws a seeded random subset instead"
    )


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


def _check_value(
    task: Task, row: Row, name: str, template_id: str | None, where: dict[str, Any]
) -> None:
    spec = task.spec
    dotted = spec.field_path(name)
    role = "the target" if template_id is None else f"{{{name}}}"
    mapped = f" (mapped to {dotted!r})" if dotted != name else ""
    field = "target" if template_id is None else dotted
    try:
        value = get_path(row, dotted)
    except KeyError:
        raise HakariInputError(
            f"{role}{mapped} is not in this row (its fields: {', '.join(sorted(map(str, row)))})",
            template=template_id,
            field=field,
            **where,
        ) from None
    if value is None:
        raise HakariInputError(
            f"{role}{mapped} is null", template=template_id, field=field, **where
        )


def _gold_problem(task: Task, value: Any, exc: Exception) -> str:
    spec = task.spec
    if spec.answer_type == "label":
        return f"gold {value!r} is not one of the labels {spec.labels}"
    if spec.answer_type == "number":
        return f"gold {value!r} is not a number"
    return f"gold {value!r} is not a string or a list of strings ({exc})"
