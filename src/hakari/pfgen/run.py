"""pfgen-bench's scoring as one function without a console (`hakari pfgen score` and any
Python caller): every input is read and checked first, so a bad file is reported in a
second rather than after the n-gram tables are built; then the tables (built once per
data version), the scores and the summaries. The CLI (`hakari.cli.pfgen`) parses the
options and shows progress and the results."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from hakari._util import checks
from hakari.backends.cache import checked_cache_dir
from hakari.pfgen.data import question_texts, resolve_data_dir
from hakari.pfgen.report import summarize
from hakari.pfgen.scoring import float_sum_for, score_files
from hakari.pfgen.tables import TableSet, open_tables
from hakari.pfgen.trials import check_complete, check_questions, estimated_trials, read_trials
from hakari.pfgen.uncertainty import check_bootstrap

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
        return open_tables(data_dir, cache_dir, on_build=lambda d, n, _name: update(d, n))


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
