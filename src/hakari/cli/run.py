"""`hakari run`: evaluate models on tasks across all their templates (a thin layer over
`hakari.evaluate`, which validates everything before the first model loads).

The options come in groups (`cli.options.grouped`) that mirror `EvalOptions`' three:
`Rows`, `Statistics` and `GridPlan` (with `--templates` and `--decoding`) make its
`PlanOptions`, `Loading` and `Serving` its `LoadOptions`, `Display` its `OutputOptions`.
Every default is read from those records (`runner.settings`, `backends.options`,
`backends.serving`: light modules), never written here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hakari.backends.base import check_prompt_format
from hakari.backends.options import LoadOptions
from hakari.backends.serving import ServingOptions
from hakari.cli.common import (
    SERVING,
    console,
    err_console,
    fail,
    print_error,
    quiet_libraries,
    recorded_argv,
    split_csv,
)
from hakari.cli.options import (
    CacheDirOption,
    DataDirOption,
    DeviceOption,
    NoCacheOption,
    grouped,
    option_group,
)
from hakari.errors import HakariInputError
from hakari.results.vocab import ALL_ITEMS, Limit
from hakari.runner.options import DEFAULT_DECODINGS, DEFAULT_MODEL, DEFAULT_TASKS
from hakari.runner.settings import OutputOptions, PlanOptions

if TYPE_CHECKING:
    from hakari.reports.live import RunView

# the API's defaults, the only ones: each option below reads its default from these
PLAN, LOAD, SERVE = PlanOptions(), LoadOptions(), ServingOptions()


def limit_text(value: str) -> str:
    """`--limit`'s value, checked where typer checks every option's type (a bad one is
    its one line): a whole number or "all", kept as text (`limit_option`)."""
    text = str(value).strip()
    if text != ALL_ITEMS and not text.lstrip("+-").isdecimal():
        raise typer.BadParameter(f"{text!r:.40} is not a whole number or 'all'")
    return text


@option_group
class Rows:
    """Which instances of each task (`PlanOptions`)."""

    limit: Annotated[
        str | None,
        typer.Option(
            "--limit",
            parser=limit_text,
            help="First N instances of each task, or 'all' (every one: past a jaster set's "
            "default of its first 100).",
        ),
    ] = None  # PLAN.limit; the text becomes a `Limit` in limit_option
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample",
            help="A random N instances of each task (seeded by --seed, the same for every "
            "model, decoding and template); not with --limit.",
        ),
    ] = PLAN.sample
    seed: Annotated[int, typer.Option("--seed", help="Seed of --sample and of the bootstrap.")] = (
        PLAN.seed
    )
    data_dir: DataDirOption = None  # PLAN.data_dir: typer shows a Path default as text


@option_group
class Statistics:
    """How the numbers are made (`PlanOptions`)."""

    alpha: Annotated[float, typer.Option("--alpha", help="Sharpe score alpha.")] = PLAN.alpha
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap replicates (0: none).")] = (
        PLAN.n_boot
    )
    qa_mode: Annotated[
        str,
        typer.Option(
            "--qa-mode",
            help="SQuAD/JSQuAD answers: first-line (default; golds NFKC too) or paper "
            "(Appendix B: whole output, golds as they are).",
        ),
    ] = PLAN.qa_mode


@option_group
class GridPlan:
    """Part of each task's template × instance grid, estimated (`PlanOptions`)."""

    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            help="Run part of each task's template × instance grid and estimate every "
            "number from it: a multiple of one template's run (2x), a fraction of the grid "
            "(0.1) or a cell count (5000). A budget that covers a task's grid (or a grid "
            "too small to estimate) runs it in full, nothing estimated.",
        ),
    ] = None
    target_ci: Annotated[
        float | None,
        typer.Option(
            "--target-ci",
            help="Run cells in rounds until every Sharpe interval's half-width is at most "
            "this (or the grid, or --budget, is spent).",
        ),
    ] = PLAN.target_ci
    until_decided: Annotated[
        bool,
        typer.Option(
            "--until-decided",
            help="With several models: run cells in rounds until every pair of models "
            "differs after the multiple-comparison correction (or the grid is spent). "
            "Rounds keep every model loaded (each is loaded once).",
        ),
    ] = PLAN.until_decided


def limit_option(text: str | None) -> Limit:
    """`--limit`'s checked text (`limit_text`) as `PlanOptions.limit`: "all" or a number
    (its range is checked with every option, `runner.preflight`)."""
    return text if text is None or text == ALL_ITEMS else int(text)


def plan_options(
    templates: str,
    decoding: str,
    rows: Rows,
    stats: Statistics,
    grid: GridPlan,
    *,
    vary_format: bool = False,
) -> PlanOptions:
    """The `PlanOptions` of `hakari run`'s plan groups."""
    return PlanOptions(
        decodings=split_csv(decoding),
        templates="all" if templates == "all" else split_csv(templates),
        limit=limit_option(rows.limit),
        sample=rows.sample,
        seed=rows.seed,
        alpha=stats.alpha,
        n_boot=stats.n_boot,
        qa_mode=stats.qa_mode,  # type: ignore[arg-type]  # checked by evaluate
        data_dir=rows.data_dir,
        grid_budget=grid.budget,
        target_ci=grid.target_ci,
        until_decided=grid.until_decided,
        vary_prompt_format=vary_format,
    )


@option_group
class Loading:
    """How models are loaded and asked (`LoadOptions`)."""

    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            help="Distinct prompts per batch of an in-process model (a prompt's greedy and "
            "constrained requests share one; default: the backend's own, 32 for models "
            "under 1B parameters; on a CPU or CUDA the answers still running of up to "
            "four batches decode together).",
        ),
    ] = LOAD.batch_size
    no_cache: NoCacheOption = not LOAD.use_cache
    cache_dir: CacheDirOption = None  # LOAD.cache_dir
    prompt_format: Annotated[
        str,
        typer.Option(
            "--prompt-format",
            help=(
                "completion, chat or auto (a model's chat template where it has one; a "
                "task whose protocol is plain text, a jaster set, as its file says)."
            ),
        ),
    ] = LOAD.prompt_format
    vary_prompt_format: Annotated[
        bool,
        typer.Option(
            "--vary-prompt-format",
            help="Give each task's prompt space the dimension prompt_format (completion: "
            "plain text, chat: the model's chat template), so the spread over templates "
            "and its dimensions include it; with space:N or generated ids.",
        ),
    ] = PLAN.vary_prompt_format  # a PlanOptions field, shown beside --prompt-format
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="float32, bfloat16, float16; vllm: also auto. Default: float32 in-process "
            "(transformers), vLLM's own choice (auto) on vllm:.",
        ),
    ] = LOAD.dtype
    device: DeviceOption = LOAD.device
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="CPU threads of an in-process (transformers) model's compute (default: "
            "the CPUs this process may use; recorded in results.json's config).",
        ),
    ] = LOAD.threads

    def options(self, serving: Serving) -> LoadOptions:
        return LoadOptions(
            batch_size=self.batch_size,
            cache_dir=self.cache_dir,
            use_cache=not self.no_cache,
            prompt_format=check_prompt_format(self.prompt_format),
            dtype=self.dtype,
            device=self.device,
            threads=self.threads,
            serving=serving.options(),
        )


def _serving(help: str, *names: str) -> Any:
    """A typer option of the serving panel (`hakari run --help` groups them)."""
    return typer.Option(*names, help=help, rich_help_panel=SERVING)


@option_group
class Serving:
    """The serving backends' options (`openai:`, `vllm:`; `LoadOptions.serving`)."""

    concurrency: Annotated[int, _serving("openai: requests in flight per replica.")] = (
        SERVE.concurrency
    )
    request_timeout: Annotated[float, _serving("openai: seconds per request.")] = (
        SERVE.request_timeout
    )
    max_attempts: Annotated[int, _serving("openai: tries per request.")] = SERVE.max_attempts
    prompts_per_request: Annotated[
        int,
        _serving(
            "openai: completion prompts per request (vLLM, SGLang: 8-32; transformers serve: 1)."
        ),
    ] = SERVE.prompts_per_request
    regex_field: Annotated[str, _serving("openai: body field of the regex (SGLang: regex).")] = (
        SERVE.regex_field
    )
    tensor_parallel_size: Annotated[int, _serving("vllm: GPUs per model copy.")] = (
        SERVE.tensor_parallel_size
    )
    data_parallel_size: Annotated[int, _serving("vllm: model copies (Ray actors).")] = (
        SERVE.data_parallel_size
    )
    distributed_executor_backend: Annotated[
        str | None, _serving("vllm: mp or ray (several nodes).")
    ] = SERVE.distributed_executor_backend
    gpu_memory_utilization: Annotated[
        float | None,
        _serving(
            "vllm: share of the device's memory, each engine's (default: vLLM's on a GPU, "
            "what is free on a CPU; split evenly between the engines a run of rounds keeps "
            "open together)."
        ),
    ] = SERVE.gpu_memory_utilization
    max_model_len: Annotated[int | None, _serving("vllm: context length.")] = SERVE.max_model_len
    enforce_eager: Annotated[
        bool, _serving("vllm: no compiled graphs (a CPU engine starts in ~1 min instead of 4-5).")
    ] = SERVE.enforce_eager
    engine_arg: Annotated[
        list[str] | None,
        _serving(
            "vllm: KEY=VALUE, any field of vLLM's EngineArgs (repeatable), e.g. "
            "kv_cache_memory_bytes=2000000000.",
            "--engine-arg",
        ),
    ] = None

    def options(self) -> ServingOptions:
        fields = {k: v for k, v in vars(self).items() if k != "engine_arg"}
        return ServingOptions(**fields, engine_args=tuple(self.engine_arg or ()))


@option_group
class Display:
    """Where the results go and what the run prints (`OutputOptions`, and how the CLI
    shows the run)."""

    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Run directory (default: a new runs/<time>-<id>)."),
    ] = None
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print only the path of results.json (no progress, tables or verdict).",
        ),
    ] = False
    json_out: Annotated[
        bool,
        typer.Option("--json", help="Print results.json on stdout and nothing else (for scripts)."),
    ] = False
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Show the libraries' own progress bars and log messages (downloads, "
            "weight loading).",
        ),
    ] = False

    def options(self, view: RunView, on_progress: Callable[..., Any] | None) -> OutputOptions:
        from hakari.runner.rundir import RUNS_ROOT

        return OutputOptions(
            output_dir=self.output,
            new_run_under=RUNS_ROOT,
            progress=False,  # the view's bars (`on_progress`), or none
            on_progress=on_progress,
            argv=recorded_argv(),
            on_task_done=view.task_done,
            on_status=view.status,
        )


@contextmanager
def _display(view: RunView) -> Iterator[Callable[..., Any] | None]:
    """What a person at a terminal sees while the run goes: the progress bars, drawn on
    the console the tables print on (a write that bypasses a live display is overwritten
    by its next redraw), and a packaged model's first conversion as a status line.
    Yields the progress hook; None with --quiet and --json (no bars)."""
    if not view.shows_progress:
        yield None
        return
    from hakari.backends.packaged import log as conversion
    from hakari.runner.progress import progress_bars

    with progress_bars(True, console=view.out) as hook, view.live_bars():
        with _logged_as_status(conversion, view.status):
            yield hook


@contextmanager
def _logged_as_status(logger: logging.Logger, status: Callable[[str], Any]) -> Iterator[None]:
    """`logger`'s INFO records (a step a library announces) said as status lines."""

    class Said(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            status(record.getMessage())

    handler, level = Said(logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@grouped
def run(
    *,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help="Model spec, repeatable: smollm2-135m, gemma3-270m, hf:<path or hub id>[@rev], "
            "openai:<model>@<base url>[,<url>...], vllm:<path or hub id>[@rev].",
        ),
    ] = None,
    tasks: Annotated[
        str | None, typer.Option("--tasks", "-t", help="Task names or YAML paths, comma-separated.")
    ] = None,
    templates: Annotated[
        str,
        typer.Option(
            "--templates",
            help="'all', template ids (comma-separated), or space:N / space:all (a sample of "
            "a task's prompt space).",
        ),
    ] = str(PLAN.templates),
    decoding: Annotated[
        str, typer.Option("--decoding", help="greedy, constrained, loglik, all (comma-separated).")
    ] = ",".join(DEFAULT_DECODINGS),
    rows: Rows,
    statistics: Statistics,
    grid: GridPlan,
    loading: Loading,
    serving: Serving,
    display: Display,
) -> None:
    """Evaluate models on tasks across all their templates (default: the demo suite).

    Each task's table prints as soon as a model has finished it; the run ends with the
    summary, the verdict (several models) and where the files are."""
    from hakari.reports.live import RunView
    from hakari.runner import evaluate
    from hakari.runner.settings import EvalOptions

    quiet_libraries(verbose=display.verbose)
    view = RunView(
        console,
        err_console,
        mode="json" if display.json_out else "quiet" if display.quiet else "full",
    )

    try:
        with _display(view) as on_progress:
            options = EvalOptions(
                load=loading.options(serving),
                plan=plan_options(
                    templates,
                    decoding,
                    rows,
                    statistics,
                    grid,
                    vary_format=loading.vary_prompt_format,
                ),
                output=display.options(view, on_progress),
            )
            run_tasks = split_csv(tasks) if tasks else list(DEFAULT_TASKS)
            results = evaluate(model or [DEFAULT_MODEL], run_tasks, options)
    except HakariInputError as exc:
        fail(exc)
    except KeyboardInterrupt as exc:
        print_error("interrupted", getattr(exc, "__notes__", None))
        raise typer.Exit(code=130) from None
    view.finish(results)
