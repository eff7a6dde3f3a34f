"""llm-jp-eval's preprocessing of a jaster set (the `data.jaster` block,
`tasks/jasterspec.py`): files → samples (`input`, `output`) → splits, and the few-shot
text its prompt shows.

What llm-jp-eval v1.3.0 does, and so what this does: each processor reads its pool of
rows in file order, seeds Python's `random` with 42 right before `random.shuffle` (here
`random.Random(42).shuffle`, the same draws), and slices at `int(len * fraction)`. The
input text is not normalised (only outputs and golds are NFKC'd, when scored). A
few-shot example is `"\\n\\n### 入力:\\n{input}\\n\\n### 応答:\\n{output}"`, the first N
samples of the train split (`utils.get_few_shot_samples`); the eval rows carry them as
`shots_N` so a template is plain text. One difference: llm-jp-eval passes the few-shot
text through langchain's `PromptTemplate`, where a `{` or `}` in an example would be
read as a placeholder; here every text is shown as it is (none of the sets' examples
used by default holds a brace).

The built splits are kept (a few per process) keyed by the block and the files' sizes
and times, since a run reads a split more than once (checks, counts, passes).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from hakari.errors import HakariInputError
from hakari.tasks.jasterspec import JasterPool, JasterSource
from hakari.tasks.readers import READERS, Row

SEED = 42  # llm-jp-eval's random.seed(42)
# The largest shipped set file is 3.2 MB (JSeM's Conjunction.xml); a file past this is not
# a set's, and is refused before it is read (a sparse file of zeros costs no disk).
SET_FILE_LIMIT = 256 << 20
SHOT_FORMAT = "\n\n### 入力:\n{input}\n\n### 応答:\n{output}"
Sample = tuple[str, str]  # (input, output)


def jaster_rows(
    source: JasterSource,
    split: str,
    *,
    eval_split: str,
    resolve: Callable[[str], Path],
) -> list[Row]:
    """The rows of `split`: `input`, `output`, and on the eval split `instruction` and
    `shots_N` for every N of `source.shots` (all of them: `max_items` is the default
    limit of a run, `tasks/data.iter_rows`)."""
    if split not in source.split_names():
        raise HakariInputError(
            f"split {split!r} is not cut by any pool (splits: {sorted(source.split_names())})",
            field="data.jaster.pools",
        )
    paths = tuple(tuple(resolve(f) for f in pool.files) for pool in source.pools)
    splits = _built(source.model_dump_json(), paths, _stamps(paths))
    samples = splits[split]
    if split != eval_split:
        return [{"input": i, "output": o} for i, o in samples]
    shots = _shot_texts(source, splits, paths)
    return [
        {"input": i, "output": o, "instruction": source.instruction, **shots} for i, o in samples
    ]


def shot_text(samples: list[Sample]) -> str:
    return "".join(SHOT_FORMAT.format(input=i, output=o) for i, o in samples)


def _shot_texts(
    source: JasterSource, splits: dict[str, list[Sample]], paths: tuple[tuple[Path, ...], ...]
) -> dict[str, str]:
    most = max(source.shots, default=0)
    if most == 0:  # 0-shot only (a set whose few-shot source is not shipped): no split read
        return {f"shots_{n}": "" for n in source.shots}
    if source.shots_split not in splits:
        raise HakariInputError(
            f"shots_split {source.shots_split!r} is not a split of the set",
            field="data.jaster.shots_split",
        )
    examples = splits[source.shots_split]
    if len(examples) < most:
        raise HakariInputError(
            f"the {source.shots_split!r} split has {len(examples)} items, fewer than the "
            f"{most} few-shot examples asked for (shots: {source.shots})",
            file=", ".join(
                str(files[0])
                for pool, files in zip(source.pools, paths, strict=True)
                if source.shots_split in pool.splits
            ),
            field="data.jaster.shots",
        )
    return {f"shots_{n}": shot_text(examples[:n]) for n in source.shots}


def _stamps(paths: tuple[tuple[Path, ...], ...]) -> tuple[tuple[int, int], ...]:
    out = []
    for path in (p for pool in paths for p in pool):
        try:
            stat = path.stat()
        except OSError:
            raise HakariInputError(
                "data file not found (a jaster set is read from --data-dir, the folder that"
                " holds jaster/; docs/japanese-leaderboards.md says where each set comes from)",
                file=str(path),
            ) from None
        if stat.st_size > SET_FILE_LIMIT:
            raise HakariInputError(
                f"{stat.st_size:,} bytes, larger than the {SET_FILE_LIMIT >> 20} MiB a jaster "
                "set file can be (the largest shipped is 3.2 MB)",
                file=str(path),
            )
        out.append((stat.st_size, stat.st_mtime_ns))
    return tuple(out)


@lru_cache(maxsize=8)
def _built(
    source_json: str, paths: tuple[tuple[Path, ...], ...], _stamps: tuple[tuple[int, int], ...]
) -> dict[str, list[Sample]]:
    source = JasterSource.model_validate_json(source_json)
    out: dict[str, list[Sample]] = {}
    for pool, files in zip(source.pools, paths, strict=True):
        samples = [
            _sample(source, row, where, path) for path, where, row in _pool_rows(pool, files)
        ]
        if pool.shuffle:
            random.Random(SEED).shuffle(samples)
        start = 0
        for name, end_fraction in pool.splits.items():
            end = len(samples) if end_fraction == 1.0 else int(len(samples) * end_fraction)
            out[name] = samples[start:end]
            start = end
    return out


def _pool_rows(pool: JasterPool, files: tuple[Path, ...]) -> list[tuple[Path, str, Row]]:
    read = READERS[pool.reader]
    out = []
    for path in files:
        rows = list(read(path))
        if not rows:
            raise HakariInputError(
                f"holds no rows (an empty file, or no item the {pool.reader} reader knows)",
                file=str(path),
            )
        out += [(path, where, row) for where, row in rows if _kept(pool, row)]
    return out


def _kept(pool: JasterPool, row: Row) -> bool:
    keep = all(_value(row, f) in values for f, values in pool.keep.items())
    return keep and not any(_value(row, f) in values for f, values in pool.drop.items())


def _value(row: Row, name: str) -> Any:
    value = row.get(name)
    return value.strip() if isinstance(value, str) else value


def _sample(source: JasterSource, row: Row, where: str, path: Path) -> Sample:
    output = row.get(source.output)
    if output is None or output == "":
        raise HakariInputError(
            f"{where} has no answer (field {source.output!r} is missing or empty)",
            file=str(path),
            field="data.jaster.output",
        )
    try:
        text = source.input.format_map({k: v for k, v in row.items() if v is not None})
    except KeyError as exc:
        raise HakariInputError(
            f"{where} has no text in field {exc.args[0]!r} (fields: {', '.join(sorted(row))})",
            file=str(path),
            field="data.jaster.input",
        ) from None
    return text, str(output)
