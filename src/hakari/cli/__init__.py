"""The `hakari` command line: a thin layer over `hakari.evaluate` and friends."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from hakari.errors import HakariInputError

_invoked_args: list[str] = []  # the command line of this invocation, after "hakari"


def _recorded_argv() -> list[str]:
    """The command as typed, for results.json: API keys, bearer tokens and URL passwords
    replaced by ***."""
    from hakari.backends.openai.spec import redact_secrets

    return ["hakari", *(redact_secrets(a) for a in _invoked_args)]


class _OneLineUsageErrors(TyperGroup):
    """Bad option values (`--alpha abc`, `--batch-size 0`), unknown options and missing
    arguments end like every other bad input: one `error:` line on stderr naming the
    option, exit code 2, instead of click's usage box. Help stays help. (typer ≥ 0.29
    carries its own copy of click: its exceptions live in `typer._click`.)"""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        global _invoked_args
        _invoked_args = list(args) if args is not None else sys.argv[1:]
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError as exc:
            exc.show()  # `hakari` or `hakari tasks` alone: the help text
            sys.exit(0)
        except UsageError as exc:
            command = exc.ctx.command_path if exc.ctx is not None else "hakari"
            _print_error(f"{exc.format_message()} (see: {command} --help)")
            sys.exit(2)
        except ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except typer.Abort:
            err_console.print("Aborted.")
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    help="hakari (秤): fair, variance-aware evaluation of LLMs across instruction templates.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=_OneLineUsageErrors,
)
tasks_app = typer.Typer(help="List, show and export tasks.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
models_app = typer.Typer(
    help="The models hakari can load without a download.", no_args_is_help=True
)
app.add_typer(models_app, name="models")

# Everything printed here may hold user or model text (task names, regexes, model specs,
# file names, outputs): no console reads markup, styled parts are `Text` objects.
console = Console(markup=False)
err_console = Console(stderr=True, markup=False, highlight=False)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _print_error(message: str, notes: list[str] | None = None) -> None:
    err_console.print(Text.assemble(("error: ", "bold red"), _one_line(message)), soft_wrap=True)
    for note in notes or []:
        err_console.print(Text(_one_line(note)), soft_wrap=True)


SERVING = "Servers and vLLM"  # help panel of the serving options


def _fail(exc: HakariInputError) -> NoReturn:
    """Bad input: one line on stderr (plus what was saved, if a run got that far), exit 2."""
    _print_error(str(exc), getattr(exc, "__notes__", None))
    raise typer.Exit(code=2)


def _split_csv(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


@app.command()
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
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 8,
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
    dtype: Annotated[str, typer.Option("--dtype", help="float32, bfloat16, float16.")] = "float32",
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
) -> None:
    """Evaluate models on tasks across all their templates (default: the demo suite)."""
    from hakari.backends.serving import ServingOptions
    from hakari.reports.terminal import print_report
    from hakari.runner import DEFAULT_MODEL, DEFAULT_TASKS, evaluate
    from hakari.runner.rundir import RUNS_ROOT

    if prompt_format not in ("completion", "chat", "auto"):
        _fail(HakariInputError("must be completion, chat or auto", field="--prompt-format"))
    task_list = _split_csv([tasks]) if tasks else list(DEFAULT_TASKS)
    template_sel: str | list[str] = "all" if templates == "all" else _split_csv([templates])
    try:
        results = evaluate(
            models=model or [DEFAULT_MODEL],
            tasks=task_list,
            decodings=_split_csv([decoding]),
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
            prompt_format=prompt_format,  # type: ignore[arg-type]
            data_dir=data_dir,
            dtype=dtype,
            device=device,
            n_boot=n_boot,
            progress=True,
            qa_mode=qa_mode,  # type: ignore[arg-type]
            argv=_recorded_argv(),
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
            ),
        )
    except HakariInputError as exc:
        _fail(exc)
    except KeyboardInterrupt as exc:
        _print_error("interrupted", getattr(exc, "__notes__", None))
        raise typer.Exit(code=130) from None
    print_report(results, console)
    out_dir = Path(results.output_dir or ".")
    console.print(f"results: {out_dir / 'results.json'}  samples: {out_dir / 'samples.jsonl'}")


@app.command()
def report(
    inputs: Annotated[
        list[Path],
        typer.Argument(help="Run folders, results.json files or `hakari meta --json` files."),
    ],
    markdown: Annotated[bool, typer.Option("--markdown", help="Print Markdown.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write one self-contained HTML page here.")
    ] = None,
    csv_dir: Annotated[
        Path | None, typer.Option("--csv", help="Write summary/templates/alpha-sweep CSVs here.")
    ] = None,
    samples: Annotated[
        int, typer.Option("--samples", min=0, help="HTML: first N instances per template.")
    ] = 3,
    title: Annotated[str, typer.Option("--title", help="HTML: page title.")] = "hakari report",
) -> None:
    """Show finished runs again without any model: tables, Markdown, HTML, CSV."""
    from hakari.reports.command import report_command

    try:
        report_command(
            inputs,
            markdown=markdown,
            html=html,
            csv_dir=csv_dir,
            samples=samples,
            title=title,
            console=console,
        )
    except HakariInputError as exc:
        _fail(exc)


@tasks_app.command("list")
def tasks_list(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the built-in tasks."""
    from hakari.tasks.loader import builtin_task_paths, load_task, task_summary

    summaries = [task_summary(load_task(path)) for path in builtin_task_paths().values()]
    if as_json:
        print(json.dumps(summaries, ensure_ascii=False, indent=2))
        return
    table = Table(title="built-in tasks", title_justify="left")
    for col in ("name", "language", "templates", "answer", "metrics"):
        table.add_column(col)
    for s in summaries:
        table.add_row(
            s["name"],
            s["language"],
            str(s["n_templates"]),
            s["answer_type"],
            ", ".join(s["metrics"]),
        )
    console.print(table)


@tasks_app.command("show")
def tasks_show(name: Annotated[str, typer.Argument(help="Task name or YAML path")]) -> None:
    """Show a task's templates, regexes and fallback."""
    from hakari.tasks.loader import load_task

    try:
        task = load_task(name)
    except HakariInputError as exc:
        _fail(exc)
    spec = task.spec
    console.print(Text.assemble((spec.name, "bold"), f" ({spec.language}) — {spec.description}"))
    console.print(f"file: {task.path}")
    console.print(
        f"answer type: {spec.answer_type}; labels: {spec.labels}; fallback: "
        f"{spec.fallback.kind} {spec.fallback_answer()!r}; metrics: {', '.join(spec.metrics)}"
    )
    table = Table(show_lines=True)
    table.add_column("id")
    table.add_column("prompt")
    table.add_column("regex")
    table.add_column("answers")
    for t in spec.templates:
        answers = ", ".join(f"{k}→{v}" for k, v in (t.answers or {}).items())
        table.add_row(Text(t.id), Text(t.prompt), Text(t.regex), Text(answers))
    console.print(table)


@tasks_app.command("export")
def tasks_export(
    name: Annotated[str, typer.Argument(help="Task name or YAML path")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output JSONL file")],
    split: Annotated[str, typer.Option("--split")] = "train",
    templates: Annotated[str, typer.Option("--templates")] = "all",
    data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None,
) -> None:
    """Write templates × instances (prompt, target) as JSONL, for fine-tuning."""
    from hakari.tasks.export import export_training_data
    from hakari.tasks.loader import load_task

    try:
        task = load_task(name)
        n = export_training_data(
            task,
            split=split,
            templates="all" if templates == "all" else _split_csv([templates]),
            output=output,
            data_dir=data_dir,
        )
    except HakariInputError as exc:
        _fail(exc)
    except OSError as exc:
        _fail(
            HakariInputError(
                f"cannot write: {exc.strerror or exc}", file=str(output), field="--output"
            )
        )
    console.print(f"wrote {n} rows to {output}")


@models_app.command("list")
def models_list() -> None:
    """The packaged small models (shipped inside PyPI packages) and the spec forms."""
    from hakari.backends.registry import list_packaged_models

    table = Table(title="packaged models", title_justify="left")
    for col in ("spec", "installed", "model", "install"):
        table.add_column(col)
    for model, installed in list_packaged_models():
        table.add_row(
            model.name, "yes" if installed else "no", model.description, model.pip_install
        )
    console.print(table)
    console.print("Any other causal LM: --model hf:<local folder> or hf:<hub id>[@revision]")


# Command groups that live in their own subpackage: (module with a typer `app`, command
# name, help). A new group (serving, a benchmark, fine-tuning, reports) adds one line here
# and keeps its commands in its own `cli.py`, importing heavy optional dependencies
# inside the commands so that `hakari --help` stays fast and works without them.
SUBCOMMANDS: list[tuple[str, str, str]] = [
    ("hakari.cli.pfgen", "pfgen", "pfgen-bench: Japanese generation benchmark."),
    (
        "hakari.cli.finetune",
        "finetune",
        "Train LoRA/QLoRA adapters; evaluate them with --model SPEC+adapter:DIR.",
    ),
]


def _mount_subcommands() -> None:
    import importlib

    for module_name, name, help_text in SUBCOMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                raise  # an import error inside the group is a bug: show it
            continue  # the group's subpackage is not there
        app.add_typer(module.app, name=name, help=help_text)


_mount_subcommands()


def _mount_ifteval() -> None:
    from hakari.cli.score import register  # score, analyze, meta

    register(app)


_mount_ifteval()


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover - `python -m hakari.cli`
    main()
