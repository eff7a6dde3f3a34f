"""Which instances a run evaluates: all rows, the first `--limit`, or a seeded random
`--sample` without replacement.

The JGLUE files are ordered (JCoLA's chance rate is 0.900 on its first 20 rows, 0.839
overall), so `--limit` gives a biased subset; `--sample N --seed S` draws N row positions
uniformly without replacement with `numpy.random.default_rng(S)` from the split's row
count. The draw depends only on the split's size, N and S, so every model, decoding and
template sees the same instances, and a rerun with the same seed the same ones; the
chosen positions are recorded in results.json (`config.sampled_rows`). Rows are then
evaluated in file order. `--sample` and `--limit` together are an error: one takes the
first rows, the other a random subset, and "a sample of the first rows" would be neither.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from hakari._util import checks
from hakari.errors import HakariInputError
from hakari.results.vocab import Limit
from hakari.runner.settings import PlanOptions
from hakari.tasks.data import Row, iter_rows
from hakari.tasks.loader import Task


def check_sampling(sample: int | None, limit: Limit, seed: int) -> None:
    checks.seed(seed)
    if checks.optional_integer(sample, "--sample", low=1) is None:
        return
    if limit is not None:
        raise HakariInputError(
            "give --sample (a seeded random subset) or --limit (the first rows), not both",
            field="--sample",
        )


def sample_positions(n_rows: int, sample: int, seed: int) -> list[int]:
    """`sample` distinct positions in [0, n_rows), ascending, drawn by `default_rng(seed)`."""
    if sample > n_rows:
        raise ValueError(f"cannot sample {sample} of {n_rows} rows")
    chosen = np.random.default_rng(seed).choice(n_rows, size=sample, replace=False)
    return sorted(int(i) for i in chosen)


def sampled_rows(task: Task, sample: int, seed: int, *, data_dir: Path | None = None) -> list[int]:
    """The positions `--sample` picks in the task's evaluation split (one counting pass)."""
    n_rows = sum(1 for _ in iter_rows(task.spec, data_dir=data_dir, task_dir=task.task_dir))
    if sample > n_rows:
        raise HakariInputError(
            f"--sample {sample} but the task has only {n_rows} rows in split "
            f"{task.spec.data.eval_split!r}",
            file=str(task.path),
            field="--sample",
        )
    return sample_positions(n_rows, sample, seed)


def numbered_rows(
    task: Task,
    *,
    limit: Limit,
    sample: int | None,
    seed: int,
    data_dir: Path | None = None,
) -> Iterator[tuple[int, Row]]:
    """(position in the split, row) of every instance the run evaluates, in file order."""
    rows = iter_rows(task.spec, data_dir=data_dir, task_dir=task.task_dir, limit=limit)
    if sample is None:
        yield from enumerate(rows)
        return
    chosen = sampled_rows(task, sample, seed, data_dir=data_dir)
    wanted, last = set(chosen), chosen[-1]
    for position, row in enumerate(rows):
        if position in wanted:
            yield position, row
        if position >= last:
            return


def task_instances(task: Task, plan: PlanOptions) -> Iterator[tuple[int, Row]]:
    """(position in the split, row) of the instances a run evaluates: the same rows for
    every model and decoding (all, the first --limit, or a seeded --sample)."""
    return numbered_rows(
        task, limit=plan.limit, sample=plan.sample, seed=plan.seed, data_dir=plan.data_path
    )
