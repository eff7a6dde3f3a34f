"""`hakari pfgen ...`: the pfgen-bench commands (mounted by the main CLI).

torch and transformers are imported only by `generate`, so `score` starts fast.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from hakari.cli.common import err_console, fail, write_output
from hakari.cli.options import CacheDirOption
from hakari.errors import HakariInputError

app = typer.Typer(
    help="pfgen-bench: Japanese open-ended generation benchmark.", no_args_is_help=True
)
console = err_console  # progress and notes; the tables go to `out`
out = Console(width=None if sys.stdout.isatty() else 160, markup=False)
SCORE_COLUMNS = (
    "model",
    "trials",
    "score",
    "±std (ref)",
    "true std",
    "95% CI",
    "F",
    "T",
    "H",
    "length",
)
LEADERBOARD_COLUMNS = (
    "#",
    "model",
    "mode",
    "temp",
    "trials",
    "score",
    "95% CI",
    "F",
    "T",
    "H",
    "length",
    "flags",
)

DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="pfgen-bench checkout or its data/ folder (default: the one fetch-data downloaded)",
    ),
]
AllowPartialOption = Annotated[
    bool,
    typer.Option(
        "--allow-partial",
        help="score files that answer only some of the questions (labelled partial)",
    ),
]


def _data_dir(data_dir: Path | None, cache_dir: Path | None) -> Path:
    from hakari.pfgen.run import data_dir_or_fetched

    return data_dir_or_fetched(data_dir, cache_dir)


@contextmanager
def _progress(description: str) -> Iterator[Callable[[int, int], None]]:
    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


@contextmanager
def _building(description: str) -> Iterator[Callable[[int, int], None]]:
    """The tables' progress bar, and the build said in words too (the bar is for
    terminals only: a log had 87 s of silence on the first call)."""
    started: list[float] = []
    building = description.startswith("building")  # the scoring bar is said as before
    with _progress(description) as update:

        def said(done: int, total: int) -> None:
            if building and not started:
                started.append(time.perf_counter())
                console.print(
                    f"building the n-gram tables of {total} questions (once per pfgen-bench "
                    "data version; a minute or two on a laptop CPU) …",
                    soft_wrap=True,
                )
            update(done, total)

        yield said
    if started:
        console.print(f"n-gram tables built in {time.perf_counter() - started[0]:.0f} s")


def _fmt(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _score_table(summaries: list[dict[str, Any]]) -> Table:
    table = Table(title="pfgen-bench")
    for name in SCORE_COLUMNS:
        table.add_column(name, justify="left" if name == "model" else "right", no_wrap=True)
    for s in summaries:
        u = s["uncertainty"]
        ci = f"[{u['ci_low']:.4f}, {u['ci_high']:.4f}]" if u["ci_low"] is not None else "–"
        table.add_row(
            s["model"],
            str(s["num_trials"]),
            f"{s['score']:.4f}",
            f"{s['score_std']:.4f}",
            _fmt(u["trial_std"]),
            ci,
            f"{s['fluency']:.3f}",
            f"{s['truthfulness']:.3f}",
            f"{s['helpfulness']:.3f}",
            f"{s['length']:.1f}",
        )
    return table


@app.command()
def score(
    trials: Annotated[list[Path], typer.Argument(help="trials files (.jsonl or .jsonl.xz)")],
    data_dir: DataDirOption = None,
    cache_dir: CacheDirOption = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="write the results (per question too) here")
    ] = None,
    python_sum: Annotated[
        str,
        typer.Option(help="float sum() semantics to reproduce: 3.11 (sequential) or 3.12"),
    ] = "3.11",
    bootstrap: Annotated[int, typer.Option(help="bootstrap resamples for the CI (≥ 1)")] = 10_000,
    seed: Annotated[int, typer.Option(help="bootstrap seed (≥ 0)")] = 0,
    allow_partial: AllowPartialOption = False,
) -> None:
    """Score trials files exactly as the reference scorer, plus honest uncertainty."""
    from hakari._util.atomic import check_output

    try:
        json_out = check_output(json_path, "--json", inputs=trials) if json_path else None
        from hakari.pfgen.run import score_trials

        summaries = score_trials(
            trials,
            _data_dir(data_dir, cache_dir),
            cache_dir,
            python_sum=python_sum,
            resamples=bootstrap,
            seed=seed,
            allow_partial=allow_partial,
            progress=_building,
        )
    except HakariInputError as exc:
        fail(exc)
    out.print(_score_table(summaries))
    out.print(
        "±std (ref) is the reference's pseudo-trial std (kept for parity); "
        "true std and the CI come from the real trials."
    )
    for s in summaries:
        block = s.get("partial")
        if block:
            out.print(
                f"partial: {block['questions_answered']} of {block['questions_total']} questions "
                f"answered by {s['file']}; its score is not comparable with complete ones"
            )
    if json_out is not None:
        payload: Any = summaries[0] if len(summaries) == 1 else summaries
        try:
            write_output(json_out, json.dumps(payload, ensure_ascii=False, indent=2))
        except HakariInputError as exc:
            fail(exc)


@app.command()
def generate(
    model: Annotated[str, typer.Option("--model", help="model spec for hakari.backends.registry")],
    data_dir: DataDirOption = None,
    cache_dir: CacheDirOption = None,
    mode: Annotated[str, typer.Option(help="completion, qa or chat")] = "completion",
    num_trials: Annotated[int, typer.Option(help="trials (50 questions each)")] = 100,
    temperature: Annotated[float, typer.Option()] = 1.0,
    top_p: Annotated[float, typer.Option()] = 0.98,
    top_k: Annotated[int, typer.Option(help="0 disables top-k")] = 0,
    num_examples: Annotated[int, typer.Option(help="few-shot examples")] = 20,
    prefix: Annotated[str, typer.Option(help="prompt prefix (backslash escapes allowed)")] = "",
    seed: Annotated[str, typer.Option(help="the reference's seed string")] = "",
    batch_size: Annotated[int | None, typer.Option()] = None,
    dtype: Annotated[
        str | None, typer.Option(help="Default: float32 in-process, vLLM's own on vllm:.")
    ] = None,
    device: Annotated[str, typer.Option()] = "auto",
    output_dir: Annotated[
        Path, typer.Option(help="results root; the run goes to <root>/<model>/<config hash>/")
    ] = Path("pfgen-results"),
) -> None:
    """Generate N trials of answers with the reference's prompts and settings."""
    from hakari.pfgen.generate import GenerationSettings
    from hakari.pfgen.prompts import Mode
    from hakari.pfgen.run import prepare_generation, run_generation

    try:
        settings = GenerationSettings(
            model=model,
            mode=cast(Mode, mode),
            num_trials=num_trials,
            temperature=temperature,
            top_p=top_p,
            top_k=top_k,
            num_examples=num_examples,
            prefix=prefix,
            seed=seed,
        )
        job = prepare_generation(
            settings,
            data_dir=data_dir,
            cache_dir=cache_dir,
            output_dir=output_dir,
            batch_size=batch_size,
            dtype=dtype,
            device=device,
            progress=_building,
        )
    except HakariInputError as exc:
        fail(exc)
    path, report = run_generation(job, progress=_progress)
    console.print(
        f"{len(report.rows)} answers ({report.generated} generated now, "
        f"{report.retried} retried) -> {path}"
    )
    if report.gave_up:
        console.print(
            Text.assemble(
                ("warning: ", "yellow"),
                f"{len(report.gave_up)} answers still empty after 10 rounds; kept as empty "
                "answers (they score 0)",
            )
        )


@app.command("build-reference")
def build_reference(
    answers: Annotated[list[Path], typer.Argument(help="generated trials files")],
    output_dir: Annotated[Path, typer.Option(help="where to write the new data folder")],
    data_dir: DataDirOption = None,
    cache_dir: CacheDirOption = None,
    ng_rules: Annotated[
        Path | None, typer.Option(help='JSON {"question": ["NG regex", ...], "*": [...]}')
    ] = None,
    source: Annotated[str, typer.Option(help="source letter for the new answers")] = "X",
    replace: Annotated[bool, typer.Option(help="drop the existing sources")] = False,
    target_length: Annotated[int, typer.Option()] = 100,
    pool: Annotated[int, typer.Option(help="answers kept closest to the target length")] = 30_000,
    k: Annotated[int, typer.Option("--k", help="reference answers per question")] = 1000,
) -> None:
    """Build a reference answer set (paper §3.2) from generated answers."""
    from hakari.pfgen.run import ReferenceOptions
    from hakari.pfgen.run import build_reference as build

    options = ReferenceOptions(ng_rules, source, replace, target_length, pool, k)
    try:
        reference = build(
            answers, output_dir, data_dir=data_dir, cache_dir=cache_dir, options=options
        )
    except HakariInputError as exc:
        fail(exc)
    table = Table(title="reference set")
    for name in ("question", "input", "after NG", "after rare 5-grams", "after length", "selected"):
        table.add_column(name)
    for c in reference.counts:
        steps = (c.input, c.after_ng, c.after_rare_ngrams, c.after_length, c.selected)
        table.add_row(c.question, *map(str, steps))
    out.print(table)
    console.print(f"wrote {output_dir}")


@app.command("fetch-data")
def fetch_data_command(
    cache_dir: CacheDirOption = None,
    url: Annotated[
        str | None, typer.Option(help="archive URL or local .tar.gz (default: GitHub, pinned)")
    ] = None,
    force: Annotated[bool, typer.Option(help="download again")] = False,
) -> None:
    """Download pfgen-bench's data folder at the pinned commit into the cache."""
    from hakari.pfgen.fetch import PINNED_COMMIT, fetch_data

    try:
        path = fetch_data(cache_dir, url=url, force=force)
    except HakariInputError as exc:
        fail(exc)
    console.print(f"pfgen-bench data at commit {PINNED_COMMIT[:7]}: {path}")
    out.print(str(path))


@app.command()
def leaderboard(
    dirs: Annotated[list[Path], typer.Argument(help="folders of results or hakari summaries")],
    data_dir: DataDirOption = None,
    cache_dir: CacheDirOption = None,
    bootstrap: Annotated[int, typer.Option(help="bootstrap resamples for the CI (≥ 1)")] = 10_000,
    html: Annotated[
        Path | None, typer.Option("--html", help="also write a self-contained HTML page")
    ] = None,
    allow_partial: AllowPartialOption = False,
) -> None:
    """Rank models by score with CIs; flag differing temperatures and trial counts."""
    from hakari._util.atomic import check_output
    from hakari.pfgen import leaderboard as lb
    from hakari.pfgen.run import leaderboard_entries
    from hakari.pfgen.uncertainty import check_bootstrap

    try:
        check_bootstrap(bootstrap, 0)
        trials, results, summary_files = lb.find_inputs(dirs)
        read = [*trials, *results, *summary_files]
        html_out = check_output(html, "--html", inputs=read) if html is not None else None
        entries = leaderboard_entries(
            trials, results, summary_files, data_dir=data_dir, cache_dir=cache_dir,
            resamples=bootstrap, allow_partial=allow_partial, progress=_building,
        )  # fmt: skip
    except HakariInputError as exc:
        fail(exc)
    if not entries:
        fail(HakariInputError("no results found", file=", ".join(map(str, dirs))))
    ranked = lb.flag_and_rank(entries)
    table = Table(title="pfgen-bench leaderboard")
    for name in LEADERBOARD_COLUMNS:
        justify: Literal["left", "right"] = "left" if name in ("model", "flags") else "right"
        table.add_column(name, justify=justify, no_wrap=name != "model")
    for rank, e in enumerate(ranked, start=1):
        ci = f"[{e.ci_low:.4f}, {e.ci_high:.4f}]" if e.ci_low is not None else "–"
        table.add_row(
            str(rank),
            e.model,
            e.mode or "–",
            _fmt(e.temperature, 1),
            str(e.num_trials),
            f"{e.score:.4f}",
            ci,
            f"{e.fluency:.3f}",
            f"{e.truthfulness:.3f}",
            f"{e.helpfulness:.3f}",
            f"{e.length:.1f}",
            ", ".join(e.flags),
        )
    out.print(table)
    if any(e.flags for e in ranked):
        out.print(
            "flags: temperature or trial count differs from the most common one; partial: "
            "the score covers part of the question set."
        )
    if html_out is not None:
        from hakari.reports.pfgen import leaderboard_html

        try:
            write_output(html_out, leaderboard_html(ranked))
        except HakariInputError as exc:
            fail(exc)
        out.print(f"report: {html}", highlight=False, markup=False)


def main() -> None:  # pragma: no cover - for `python -m hakari.cli.pfgen`
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
