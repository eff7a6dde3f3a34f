"""What a run is asked to do: the decodings, the defaults and the options every stage reads.

Kept apart from the pipeline so that the CLI, the report and tests can name decodings and
defaults without importing the engine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, cast

from hakari._util.checks import did_you_mean
from hakari.backends import registry
from hakari.backends.base import Backend, PromptFormat
from hakari.backends.cpu import default_threads
from hakari.backends.serving import ServingOptions
from hakari.errors import HakariInputError
from hakari.results import GenerationBudget, RunConfig, TemplateBudget
from hakari.runner.sampling import sampled_rows
from hakari.tasks.extract import DEFAULT_QA_MODE, QAMode
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates

Decoding = Literal["greedy", "constrained", "loglik"]
DECODINGS: tuple[Decoding, ...] = ("greedy", "constrained", "loglik")
DEFAULT_MODEL = "smollm2-135m"
DEFAULT_TASKS = ("demo_sentiment_en", "demo_sentiment_ja")
DEFAULT_DECODINGS: tuple[Decoding, ...] = ("greedy", "constrained")


def skip_reason(decoding: Decoding, answer_type: str) -> str | None:
    """Why `decoding` does not apply to a task with this answer type (results.json's
    `skipped`), or None when it does."""
    if decoding == "loglik" and answer_type != "label":
        return "loglik applies to label tasks only"
    return None


CHUNK_ROWS = 64  # instances per streamed chunk (× templates = prompts per chunk)

BackendFactory = Callable[[str], Backend]
"""Model spec → a loaded backend. `evaluate(..., backend_factory=...)` takes one to plug
in any `hakari.backends.base.Backend`; it is called once per model, after validation."""

ProgressHook = Callable[[str, int, int, bool], Any]
"""(label, total, advanced, cached): `advanced` more answers of the pass `label` (of
`total`); `cached`: they were read from the response cache (instant, so no measure of
the pace). A caller's `on_progress` may take the first three only
(`progress.caller_hook`)."""
StatusHook = Callable[[str], Any]
"""What the run does now, in words, for the steps without a progress bar (reading a
task's rows, loading a model)."""


@dataclass
class RunOptions:
    templates: str | Sequence[str] = "all"
    limit: int | None = None
    sample: int | None = None  # a seeded random subset of instances (see `sampling`)
    alpha: float = 1.0
    batch_size: int | None = None  # None: the backend's own (`Backend.generate`)
    cache_dir: Path | None = None
    use_cache: bool = True
    prompt_format: PromptFormat = "auto"
    data_dir: Path | None = None
    dtype: str | None = None  # None: each backend's default (fp32 in-process, vLLM's auto)
    device: str = "auto"
    threads: int | None = None  # torch's CPU threads of in-process models; None: the rule
    n_boot: int = 1000
    seed: int = 0
    progress: bool = True
    qa_mode: QAMode = DEFAULT_QA_MODE
    serving: ServingOptions = field(default_factory=ServingOptions)
    argv: Sequence[str] | None = None  # the command line, secrets scrubbed (CLI runs only)


def parse_decodings(value: str | Sequence[str]) -> list[Decoding]:
    names = value.split(",") if isinstance(value, str) else list(value)
    out: list[Decoding] = []
    for name in (n.strip() for n in names):
        if name == "all":
            return list(DECODINGS)
        if name not in DECODINGS:
            raise HakariInputError(
                f"unknown decoding {name!r}{did_you_mean(name, (*DECODINGS, 'all'))} "
                "(choose from greedy, constrained, loglik, all)",
                field="--decoding",
            )
        out.append(cast(Decoding, name))
    return out


def run_config(
    models: Sequence[str], tasks: Sequence[Task], decodings: Sequence[str], opts: RunOptions
) -> RunConfig:
    """The run's configuration as recorded in results.json (`threads` where a model
    computes with torch in this process)."""
    config = RunConfig(
        models=list(models),
        tasks=[t.name for t in tasks],
        task_files={t.name: str(t.path) for t in tasks},
        decodings=list(decodings),
        templates=opts.templates if isinstance(opts.templates, str) else list(opts.templates),
        limit=opts.limit,
        sample=opts.sample,
        seed=opts.seed,
        sampled_rows=_sampled_rows(tasks, opts),
        alpha=opts.alpha,
        std="population (ddof=0) across templates",
        em_f1="SQuAD v1.1 (en) / JGLUE JSQuAD char-level (ja) scorers, "
        + ("golds NFKC like outputs" if opts.qa_mode == "first-line" else "golds as they are"),
        qa_mode=opts.qa_mode,
        generation_budgets={t.name: answer_limits(t, opts) for t in tasks},
        batch_size=opts.batch_size,
        prompt_format=opts.prompt_format,
        dtype=opts.dtype,
        device=opts.device,
        n_boot=opts.n_boot,
        data_dir=str(opts.data_dir) if opts.data_dir else None,
        serving=asdict(opts.serving),
        argv=list(opts.argv) if opts.argv is not None else None,
        started=datetime.now().isoformat(timespec="seconds"),
    )
    if any(registry.uses_torch_threads(spec) for spec in models):
        config.threads = opts.threads or default_threads()
    return config


def _sampled_rows(tasks: Sequence[Task], opts: RunOptions) -> dict[str, list[int]] | None:
    """Per task, the split positions `--sample` chose (None without --sample)."""
    if opts.sample is None:
        return None
    return {t.name: sampled_rows(t, opts.sample, opts.seed, data_dir=opts.data_dir) for t in tasks}


def answer_limits(task: Task, opts: RunOptions) -> GenerationBudget:
    """The length limits of the task's answers (results.json's `generation_budgets`; not
    the grid's cell budget, `plan.Plan.grid_budget`): the answer's characters (after
    leading whitespace) and the token cap; greedy stops at a newline only after the
    first non-whitespace character, constrained where the regex ends. Templates with a
    budget of their own are listed under `templates`."""
    per_template = {
        t.id: TemplateBudget(
            max_new_chars=task.spec.max_chars_for(t), max_new_tokens=task.spec.max_tokens_for(t)
        )
        for t in select_templates(task.spec, opts.templates)
    }
    # the most common budget (counted by value: a prompt space has thousands of templates)
    counts = Counter((b.max_new_chars, b.max_new_tokens) for b in per_template.values())
    chars, tokens = counts.most_common(1)[0][0]
    common = TemplateBudget(max_new_chars=chars, max_new_tokens=tokens)
    own = {tid: b for tid, b in per_template.items() if b != common}
    limits = GenerationBudget(
        max_new_chars=common.max_new_chars,
        max_new_tokens=common.max_new_tokens,
        greedy_stop=["\n"],
    )
    if own:
        limits.templates = own
    return limits
