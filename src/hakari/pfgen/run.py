"""pfgen-bench's commands as functions without a console (the `hakari pfgen` commands and
any Python caller): every input is read and checked first, so a bad file is reported in a
second rather than after the n-gram tables are built or a model loaded; then the work.
`score_trials`: the tables (built once per data version), the scores and the summaries;
`prepare_generation` + `run_generation`: a model's trials; `build_reference`: a
reference answer set; `leaderboard_entries`: the entries a leaderboard ranks. The CLI
(`hakari.cli.pfgen`) parses the options and shows progress and the results."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hakari._util import checks
from hakari._util.atomic import check_output, check_output_folder
from hakari._util.infiles import read_input_text
from hakari.backends.cache import ResponseCache, checked_cache_dir
from hakari.errors import HakariInputError
from hakari.pfgen import tables
from hakari.pfgen.data import Example, question_texts, resolve_data_dir
from hakari.pfgen.report import summarize
from hakari.pfgen.scoring import float_sum_for, score_files
from hakari.pfgen.tables import TableSet
from hakari.pfgen.trials import check_complete, check_questions, estimated_trials, read_trials
from hakari.pfgen.uncertainty import check_bootstrap

if TYPE_CHECKING:
    from hakari.backends.base import Backend
    from hakari.pfgen.generate import GenerationReport, GenerationSettings
    from hakari.pfgen.leaderboard import Entry
    from hakari.pfgen.reference_build import ReferenceSet

Update = Callable[[int, int], None]
# description -> a context that yields the function to call with (done, total)
Progress = Callable[[str], AbstractContextManager[Update]]


@contextmanager
def no_progress(_description: str) -> Iterator[Update]:
    yield lambda _done, _total: None


def open_checked_tables(
    data_dir: Path, cache_dir: Path | None, progress: Progress = no_progress
) -> TableSet:
    """The n-gram tables of `data_dir` (built and cached on first use)."""
    cache_dir = checked_cache_dir(cache_dir)
    with progress("building n-gram tables (once per data version)") as update:
        return tables.open_tables(data_dir, cache_dir, on_build=lambda d, n, _name: update(d, n))


def score_trials(
    paths: list[Path],
    data_dir: Path,
    cache_dir: Path | None,
    *,
    python_sum: str,
    resamples: int,
    seed: int,
    allow_partial: bool,
    progress: Progress = no_progress,
) -> list[dict[str, Any]]:
    """One summary per trials file (`hakari.pfgen.report.summarize`)."""
    checks.choice(python_sum, "--python-sum", ("3.11", "3.12"))
    check_bootstrap(resamples, seed)
    float_sum = float_sum_for(python_sum)
    checked_cache_dir(cache_dir)
    files = [read_trials(p) for p in paths]
    questions = question_texts(resolve_data_dir(data_dir))
    for trials in files:
        check_questions(trials, set(questions))
        check_complete(trials, questions, allow_partial)
        check_bootstrap(resamples, seed, estimated_trials(trials))
    tables = open_checked_tables(data_dir, cache_dir, progress)
    with progress("scoring") as update:
        scored = score_files(
            files, tables, on_question=update, float_sum=float_sum, allow_partial=allow_partial
        )
    return [
        summarize(
            s,
            tables.fingerprint,
            float_sum=float_sum,
            python_sum=python_sum,
            resamples=resamples,
            seed=seed,
            questions_total=len(tables.questions),
        )
        for s in scored
    ]


def data_dir_or_fetched(data_dir: Path | None, cache_dir: Path | None) -> Path:
    """`data_dir`, else the data folder `hakari pfgen fetch-data` downloaded."""
    if data_dir is not None:
        return data_dir
    from hakari.pfgen.fetch import default_data_dir

    found = default_data_dir(cache_dir)
    if found is None:
        raise HakariInputError(
            "no pfgen-bench data: pass --data-dir or run `hakari pfgen fetch-data`",
            field="--data-dir",
        )
    return found


@dataclass
class PreparedGeneration:
    """Everything checked and loaded for `run_generation`: it owns the backend and the
    cache (closed when the generation ends)."""

    settings: GenerationSettings
    pool: list[Example]
    questions: list[str]
    backend: Backend
    cache: ResponseCache
    batch_size: int | None
    run_dir: Path  # <output root>/<model>/<config hash>


def prepare_generation(
    settings: GenerationSettings,
    *,
    data_dir: Path | None,
    cache_dir: Path | None,
    output_dir: Path,
    batch_size: int | None,
    dtype: str | None,
    device: str,
    progress: Progress = no_progress,
) -> PreparedGeneration:
    """The settings, the output folder, the data and the model spec checked (in that
    order), the n-gram tables opened, then the cache and the model loaded."""
    from hakari.backends.registry import check_spec, load_backend
    from hakari.pfgen.data import load_examples
    from hakari.pfgen.generate import config_hash

    settings.check()
    checks.optional_integer(batch_size, "--batch-size", low=1)
    check_output_folder(output_dir, "--output-dir")
    folder = resolve_data_dir(data_dir_or_fetched(data_dir, cache_dir))
    check_output_folder(output_dir, "--output-dir", inputs=[folder])
    pool = load_examples(folder)
    settings.check_data(pool, question_texts(folder))
    tables = open_checked_tables(folder, cache_dir, progress)
    questions = [q.question for q in tables.questions]
    check_spec(settings.model, dtype=dtype, device=device)
    cache = ResponseCache.in_dir(cache_dir)  # a bad cache is found before the model loads
    try:
        backend = load_backend(settings.model, dtype=dtype, device=device)
    except BaseException:
        cache.close()
        raise
    run_dir = output_dir / settings.model.replace(":", "_") / config_hash(settings)
    return PreparedGeneration(settings, pool, questions, backend, cache, batch_size, run_dir)


def run_generation(
    job: PreparedGeneration, progress: Progress = no_progress
) -> tuple[Path, GenerationReport]:
    """Every trial's answers (through the response cache), written to the run folder;
    the trials file's path and what it took."""
    from hakari.pfgen.generate import generate_trials, write_run

    try:
        with progress(f"generating {job.settings.num_trials} trials") as update:
            report = generate_trials(
                job.backend,
                job.pool,
                job.questions,
                job.settings,
                cache=job.cache,
                batch_size=job.batch_size,
                on_progress=update,
            )
    finally:
        job.backend.close()
        job.cache.close()
    return write_run(job.run_dir, job.settings, report.rows), report


@dataclass(frozen=True)
class ReferenceOptions:
    """How `build_reference` selects (paper §3.2) and what it writes."""

    ng_rules: Path | None = None
    source: str = "X"
    replace: bool = False
    target_length: int = 100
    pool: int = 30_000
    k: int = 1000


def build_reference(
    answers: Sequence[Path],
    output_dir: Path,
    *,
    data_dir: Path | None,
    cache_dir: Path | None,
    options: ReferenceOptions,
) -> ReferenceSet:
    """A new data folder in `output_dir`: the data folder's questions with a reference
    answer set built from the generated `answers` files."""
    from hakari.pfgen.data import question_files
    from hakari.pfgen.reference_build import (
        build_reference_set,
        check_build_options,
        load_ng_rules,
        write_data_dir,
    )

    o = options
    check_build_options(target_length=o.target_length, pool=o.pool, k=o.k)
    check_output_folder(output_dir, "--output-dir")
    folder = resolve_data_dir(data_dir_or_fetched(data_dir, cache_dir))
    check_output_folder(output_dir, "--output-dir", inputs=[folder])
    read = [*question_files(folder), *answers, *([o.ng_rules] if o.ng_rules else [])]
    for path in [*question_files(folder), folder / "questions.jsonl"]:
        check_output(output_dir / path.name, "--output-dir", inputs=read, in_given_folder=True)
    known = {json.loads(read_input_text(p))["question"] for p in question_files(folder)}
    grouped: dict[str, list[str]] = {}
    for path in answers:
        trials = read_trials(path)
        check_questions(trials, known)
        for row in trials.rows:
            grouped.setdefault(row["question"], []).append(row["answer"])
    rules = load_ng_rules(o.ng_rules) if o.ng_rules is not None else None
    reference = build_reference_set(
        grouped, ng_rules=rules, target_length=o.target_length, pool=o.pool, k=o.k
    )
    write_data_dir(folder, output_dir, reference, o.source, o.replace)
    return reference


def leaderboard_entries(
    trials: list[Path],
    results: list[Path],
    summary_files: list[Path],
    *,
    data_dir: Path | None,
    cache_dir: Path | None,
    resamples: int,
    allow_partial: bool,
    progress: Progress = no_progress,
) -> list[Entry]:
    """The entries of hakari summaries, of reference result files, and of trials files
    (scored here) that `leaderboard.find_inputs` found."""
    from hakari.pfgen import leaderboard as lb

    entries = [
        lb.entry_from_summary(s, str(p)) for p in summary_files for s in lb.read_summaries(p)
    ]
    entries += [lb.entry_from_result(lb.read_result(p), str(p.parent)) for p in results]
    if trials:
        summaries = score_trials(
            trials,
            data_dir_or_fetched(data_dir, cache_dir),
            cache_dir,
            python_sum="3.11",
            resamples=resamples,
            seed=0,
            allow_partial=allow_partial,
            progress=progress,
        )
        entries += [lb.entry_from_summary(s, s["file"]) for s in summaries]
    return entries
