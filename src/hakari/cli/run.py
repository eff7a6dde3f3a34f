"""`hakari run`: evaluate models on tasks across all their templates (a thin layer over
`hakari.evaluate`, which validates everything before the first model loads)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hakari.backends.base import check_prompt_format
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
from hakari.errors import HakariInputError


def run(
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
        str, typer.Option("--templates", help="'all' or template ids, comma-separated.")
    ] = "all",
    decoding: Annotated[
        str, typer.Option("--decoding", help="greedy, constrained, loglik, all (comma-separated).")
    ] = "greedy,constrained",
    limit: Annotated[
        int | None, typer.Option("--limit", help="First N instances of each task.")
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample",
            help="A random N instances of each task (seeded by --seed, the same for every "
            "model, decoding and template); not with --limit.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --sample and of the bootstrap.")] = 0,
    alpha: Annotated[float, typer.Option("--alpha", help="Sharpe score alpha.")] = 1.0,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            help="Distinct prompts per batch of an in-process model (a prompt's greedy and "
            "constrained requests share one; default: the backend's own, 32 for models "
            "under 1B parameters).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Run directory (default: a new runs/<time>-<id>)."),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Bypass the response cache.")
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="Cache folder (else $HAKARI_CACHE_DIR, else user cache)."),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Folder with local copies of task data.")
    ] = None,
    prompt_format: Annotated[
        str, typer.Option("--prompt-format", help="completion, chat or auto.")
    ] = "auto",
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="float32, bfloat16, float16; vllm: also auto. Default: float32 in-process "
            "(transformers), vLLM's own choice (auto) on vllm:.",
        ),
    ] = None,
    device: Annotated[str, typer.Option("--device", help="cpu, cuda or auto.")] = "auto",
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap replicates (0: none).")] = 1000,
    qa_mode: Annotated[
        str,
        typer.Option(
            "--qa-mode",
            help="SQuAD/JSQuAD answers: first-line (default; golds NFKC too) or paper "
            "(Appendix B: whole output, golds as they are).",
        ),
    ] = "first-line",
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            help="Run part of each task's template × instance grid and estimate every "
            "number from it: a multiple of one template's run (2x), a fraction of the grid "
            "(0.1) or a cell count (5000).",
        ),
    ] = None,
    target_ci: Annotated[
        float | None,
        typer.Option(
            "--target-ci",
            help="Run cells in rounds until every Sharpe interval's half-width is at most "
            "this (or the grid, or --budget, is spent).",
        ),
    ] = None,
    until_decided: Annotated[
        bool,
        typer.Option(
            "--until-decided",
            help="With several models: run cells in rounds until every pair of models "
            "differs after the multiple-comparison correction (or the grid is spent).",
        ),
    ] = False,
    concurrency: Annotated[
        int, typer.Option(help="openai: requests in flight per replica.", rich_help_panel=SERVING)
    ] = 32,
    request_timeout: Annotated[
        float, typer.Option(help="openai: seconds per request.", rich_help_panel=SERVING)
    ] = 120.0,
    max_attempts: Annotated[
        int, typer.Option(help="openai: tries per request.", rich_help_panel=SERVING)
    ] = 8,
    prompts_per_request: Annotated[
        int,
        typer.Option(
            help="openai: completion prompts per request (vLLM, SGLang: 8-32; transformers "
            "serve: 1).",
            rich_help_panel=SERVING,
        ),
    ] = 1,
    regex_field: Annotated[
        str,
        typer.Option(
            help="openai: body field of the regex (SGLang: regex).", rich_help_panel=SERVING
        ),
    ] = "structured_outputs.regex",
    tensor_parallel_size: Annotated[
        int, typer.Option(help="vllm: GPUs per model copy.", rich_help_panel=SERVING)
    ] = 1,
    data_parallel_size: Annotated[
        int, typer.Option(help="vllm: model copies (Ray actors).", rich_help_panel=SERVING)
    ] = 1,
    distributed_executor_backend: Annotated[
        str | None, typer.Option(help="vllm: mp or ray (several nodes).", rich_help_panel=SERVING)
    ] = None,
    gpu_memory_utilization: Annotated[
        float, typer.Option(help="vllm: share of GPU memory.", rich_help_panel=SERVING)
    ] = 0.9,
    max_model_len: Annotated[
        int | None, typer.Option(help="vllm: context length.", rich_help_panel=SERVING)
    ] = None,
    enforce_eager: Annotated[
        bool,
        typer.Option(
            help="vllm: no compiled graphs (a CPU engine starts in ~1 min instead of 4-5).",
            rich_help_panel=SERVING,
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print only the path of results.json (no progress, tables or verdict).",
        ),
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="Print results.json on stdout and nothing else (for scripts)."),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Show the libraries' own progress bars and log messages (downloads, "
            "weight loading).",
        ),
    ] = False,
    engine_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--engine-arg",
            help="vllm: KEY=VALUE, any field of vLLM's EngineArgs (repeatable), e.g. "
            "kv_cache_memory_bytes=2000000000.",
            rich_help_panel=SERVING,
        ),
    ] = None,
) -> None:
    """Evaluate models on tasks across all their templates (default: the demo suite).

    Each task's table prints as soon as a model has finished it; the run ends with the
    summary, the verdict (several models) and where the files are."""
    from hakari.backends.serving import ServingOptions
    from hakari.reports.live import RunView
    from hakari.runner import DEFAULT_MODEL, DEFAULT_TASKS, evaluate
    from hakari.runner.rundir import RUNS_ROOT

    quiet_libraries(verbose=verbose)
    view = RunView(console, err_console, mode="json" if json_out else "quiet" if quiet else "full")

    try:
        chosen_format = check_prompt_format(prompt_format)
    except HakariInputError as exc:
        fail(exc)
    task_list = split_csv(tasks) if tasks else list(DEFAULT_TASKS)
    template_sel: str | list[str] = "all" if templates == "all" else split_csv(templates)
    try:
        results = evaluate(
            models=model or [DEFAULT_MODEL],
            tasks=task_list,
            decodings=split_csv(decoding),
            templates=template_sel,
            limit=limit,
            sample=sample,
            seed=seed,
            alpha=alpha,
            output_dir=output,
            new_run_under=RUNS_ROOT,
            batch_size=batch_size,
            cache_dir=cache_dir,
            use_cache=not no_cache,
            prompt_format=chosen_format,
            data_dir=data_dir,
            dtype=dtype,
            device=device,
            n_boot=n_boot,
            progress=view.shows_progress,
            on_task_done=view.task_done,
            on_status=view.status,
            qa_mode=qa_mode,  # type: ignore[arg-type]
            argv=recorded_argv(),
            budget=budget,
            target_ci=target_ci,
            until_decided=until_decided,
            serving=ServingOptions(
                concurrency=concurrency,
                request_timeout=request_timeout,
                max_attempts=max_attempts,
                prompts_per_request=prompts_per_request,
                regex_field=regex_field,
                tensor_parallel_size=tensor_parallel_size,
                data_parallel_size=data_parallel_size,
                distributed_executor_backend=distributed_executor_backend,
                gpu_memory_utilization=gpu_memory_utilization,
                max_model_len=max_model_len,
                enforce_eager=enforce_eager,
                engine_args=tuple(engine_arg or ()),
            ),
        )
    except HakariInputError as exc:
        fail(exc)
    except KeyboardInterrupt as exc:
        print_error("interrupted", getattr(exc, "__notes__", None))
        raise typer.Exit(code=130) from None
    view.finish(results)
