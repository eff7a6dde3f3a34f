"""results.json's `config`: made here, once, from the run's options and its plan.

What the run was asked (the options as given, `argv` included), what it decided before
any model ran (each task's answer limits, the rows `--sample` drew, the tasks a budgeted
run ran in full) and when it started. Nothing patches it afterwards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from hakari.backends import registry
from hakari.backends.cpu import busy_at_start, default_threads, wait_policy
from hakari.results import GenerationBudget, PromptFormat, RunConfig, TemplateBudget
from hakari.runner.plan import Plan
from hakari.runner.requests import task_prompt_format
from hakari.runner.sampling import sampled_rows
from hakari.runner.settings import EvalOptions, PlanOptions
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates


def run_config(
    models: Sequence[str],
    tasks: Sequence[Task],
    options: EvalOptions,
    plan: Plan,
) -> RunConfig:
    """The run's configuration as recorded in results.json (`options` checked by
    `preflight.check_options`; `plan` settled: `Plan.in_full` known). `threads` where
    a model computes with torch in this process."""
    load, asked = options.load, options.plan
    config = RunConfig(
        models=list(models),
        tasks=[t.name for t in tasks],
        task_files={t.name: str(t.path) for t in tasks},
        decodings=list(asked.decoding_list),
        templates=asked.templates if isinstance(asked.templates, str) else list(asked.templates),
        limit=asked.limit,
        sample=asked.sample,
        seed=asked.seed,
        sampled_rows=_sampled_rows(tasks, asked),
        alpha=asked.alpha,
        std="population (ddof=0) across templates",
        em_f1="SQuAD v1.1 (en) / JGLUE JSQuAD char-level (ja) scorers, "
        + ("golds NFKC like outputs" if asked.qa_mode == "first-line" else "golds as they are"),
        qa_mode=asked.qa_mode,
        generation_budgets={t.name: answer_limits(t, asked) for t in tasks},
        batch_size=load.batch_size,
        prompt_format=load.prompt_format,
        dtype=load.dtype,
        device=load.device,
        n_boot=asked.n_boot,
        data_dir=str(asked.data_path) if asked.data_path else None,
        serving=asdict(load.serving),
        argv=list(options.output.argv) if options.output.argv is not None else None,
        started=datetime.now().isoformat(timespec="seconds"),
    )
    own_formats = _task_prompt_formats(tasks, load.prompt_format)
    if own_formats:  # written only where a task has one
        config.task_prompt_formats = own_formats
    if any(registry.uses_torch_threads(spec) for spec in models):
        config.threads = load.threads or default_threads()
        config.omp_wait_policy = wait_policy()
        config.cpu_busy_at_start = busy_at_start()
    if plan.budgeted:
        config.budget = str(plan.grid_budget) if plan.grid_budget else None
        config.target_ci = plan.target_ci
        config.until_decided = plan.until_decided
        config.run_in_full = dict(plan.in_full) or None
    return config


def _sampled_rows(tasks: Sequence[Task], plan: PlanOptions) -> dict[str, list[int]] | None:
    """Per task, the split positions `--sample` chose (None without --sample)."""
    if plan.sample is None:
        return None
    return {t.name: sampled_rows(t, plan.sample, plan.seed, data_dir=plan.data_path) for t in tasks}


def _task_prompt_formats(
    tasks: Sequence[Task], run_format: PromptFormat
) -> dict[str, PromptFormat] | None:
    """Per task, the prompt format its file gave it where it overrode the run's (None
    where no task did)."""
    own = {t.name: task_prompt_format(t.spec, run_format) for t in tasks}
    return {name: f for name, f in own.items() if f != run_format} or None


def answer_limits(task: Task, plan: PlanOptions) -> GenerationBudget:
    """The length limits of the task's answers (results.json's `generation_budgets`; not
    the grid's cell budget, `plan.Plan.grid_budget`): the answer's characters (after
    leading whitespace) and the token cap; greedy stops at the task's stop string
    (`TaskSpec.greedy_stop`) only after the first non-whitespace character, constrained
    where the regex ends. Templates with a
    budget of their own are listed under `templates`."""
    per_template = {
        t.id: TemplateBudget(
            max_new_chars=task.spec.max_chars_for(t), max_new_tokens=task.spec.max_tokens_for(t)
        )
        for t in select_templates(task.spec, plan.templates)
    }
    # the most common budget (counted by value: a prompt space has thousands of templates)
    counts = Counter((b.max_new_chars, b.max_new_tokens) for b in per_template.values())
    chars, tokens = counts.most_common(1)[0][0]
    common = TemplateBudget(max_new_chars=chars, max_new_tokens=tokens)
    own = {tid: b for tid, b in per_template.items() if b != common}
    limits = GenerationBudget(
        max_new_chars=common.max_new_chars,
        max_new_tokens=common.max_new_tokens,
        greedy_stop=list(task.spec.greedy_stop),
    )
    if own:
        limits.templates = own
    return limits
