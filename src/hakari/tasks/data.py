"""Loading a task's instances: inline rows, local files (JSON Lines, JSON, CSV,
SQuAD-style JSON) or a dataset on the Hugging Face hub through `datasets`.

Rows are streamed (iterators), so a large split never has to sit in memory as prompts;
`count_rows` is cheap for local files and uses the hub split's metadata otherwise.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any

from hakari._util.infiles import open_input, open_input_text, read_input_text
from hakari._util.jsonl import iter_jsonl
from hakari.errors import HakariInputError, one_line
from hakari.results.vocab import ALL_ITEMS, Limit
from hakari.tasks.choices import normalize_rows
from hakari.tasks.jaster import jaster_rows
from hakari.tasks.spec import DataSpec, SplitSource, TaskSpec

Row = dict[str, Any]


def resolve_split_file(
    split: SplitSource, *, data_dir: Path | None, task_dir: Path | None
) -> Path | None:
    if split.file is None:
        return None
    return resolve_data_file(split.file, data_dir=data_dir, task_dir=task_dir)


def resolve_data_file(file: str, *, data_dir: Path | None, task_dir: Path | None) -> Path:
    """A task's data file: absolute as it is, else under --data-dir, else beside the task."""
    path = Path(file).expanduser()
    if path.is_absolute():
        return path
    if data_dir is not None:
        return data_dir / path
    if task_dir is not None:
        return task_dir / path
    return path


def iter_rows(
    task: TaskSpec,
    *,
    split: str | None = None,
    data_dir: Path | None = None,
    task_dir: Path | None = None,
    limit: Limit = None,
    keep_shots: bool = False,
) -> Iterator[Row]:
    """The rows of one split, in file order (so `limit` is deterministic). A multiple-
    choice task's rows carry their choices and gold index (`tasks/choices.py`). Where a
    space takes its few-shot examples from the evaluated split, its first rows are the
    examples and are not evaluated (`keep_shots` keeps them: the examples' reader). A
    jaster set's eval split is read up to its `max_items` unless `limit` says otherwise
    (a number, or "all": every row)."""
    name = split or task.data.eval_split
    if limit is None and name == task.data.eval_split and task.data.jaster is not None:
        limit = task.data.jaster.max_items  # the leaderboards' first 100; --limit lifts it
    if limit == ALL_ITEMS:
        limit = None
    rows = _iter_split(task.data, name, data_dir, task_dir)
    if task.choices is not None:
        rows = normalize_rows(task.choices, rows, get_path)
    held = 0 if keep_shots else held_out_shots(task, name)
    if held or limit is not None:
        rows = islice(rows, held, None if limit is None else held + limit)
    return rows


def held_out_shots(task: TaskSpec, split: str) -> int:
    """How many first rows of `split` are few-shot examples, not evaluated: the most
    examples a template of the task's space shows, when they come from the eval split."""
    space = task.space
    if space is None or space.shots_split != split or split != task.data.eval_split:
        return 0
    return space.max_shots()


def _iter_split(
    data: DataSpec, split_name: str, data_dir: Path | None, task_dir: Path | None
) -> Iterator[Row]:
    if data.instances is not None and split_name == data.eval_split:
        yield from data.instances
        return
    if data.jaster is not None:
        yield from jaster_rows(
            data.jaster,
            split_name,
            eval_split=data.eval_split,
            resolve=lambda f: resolve_data_file(f, data_dir=data_dir, task_dir=task_dir),
        )
        return
    if split_name not in data.splits:
        raise HakariInputError(
            f"split {split_name!r} is not defined (known: {sorted(data.splits)})",
            field="data.splits",
        )
    split = data.splits[split_name]
    local = resolve_split_file(split, data_dir=data_dir, task_dir=task_dir)
    # With --data-dir a local copy wins over the hub, where the copy exists: a run that
    # mixes tasks with and without local copies still reaches the hub for the others.
    use_local = local is not None and (
        split.hub_split is None or (data_dir is not None and local.is_file())
    )
    if use_local:
        assert local is not None
        yield from iter_file(local, split.format or data.format, columns=data.columns)
        return
    assert data.hub is not None and split.hub_split is not None
    try:
        yield from _iter_hub(data, split.hub_split)
    except HakariInputError as exc:
        if local is not None and data_dir is not None:
            raise HakariInputError(
                f"no local copy at {local} (from --data-dir), and the hub failed: {exc.detail}",
                file=str(local),
                field="data.splits",
            ) from exc
        raise


def _iter_hub(data: DataSpec, hub_split: str) -> Iterator[Row]:
    import datasets  # heavy import, only when a hub dataset is used

    from hakari.backends.hub import hub_dataset_problem

    hub = data.hub
    assert hub is not None
    where = f"hub dataset {hub.path!r} (config {hub.name!r}, split {hub_split!r})"
    problem = hub_dataset_problem(hub.path, hub.revision)
    extra: dict[str, Any] = {"data_dir": hub.data_dir} if hub.data_dir else {}
    try:
        with _library_logs_quiet(), _hub_offline(problem is not None):
            ds = datasets.load_dataset(
                hub.path, hub.name, split=hub_split, revision=hub.revision, **extra
            )
    except Exception as exc:  # the hub raises many types; the user needs one message
        cause = f"not in the local cache and {problem}" if problem else one_line(exc, 200)
        raise HakariInputError(
            f"could not load {where}: {cause}. Without network access, download the "
            "files and pass --data-dir.",
            field="data.hub",
        ) from exc
    for row in ds:
        yield dict(row)


@contextmanager
def _hub_offline(offline: bool) -> Iterator[None]:
    """The libraries' documented offline mode (`HF_HUB_OFFLINE`) for this one load, where
    the hub did not answer: `datasets` then reads its local cache at once instead of
    retrying every request for half a minute. Both read the setting once, at import."""
    import datasets
    from huggingface_hub import constants

    if not offline:
        yield
        return
    before = (constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE)
    constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE = before


@contextmanager
def _library_logs_quiet() -> Iterator[None]:
    """The hub clients log every failed request as a warning; the one error line the
    user sees says what failed."""
    loggers = [logging.getLogger(name) for name in ("huggingface_hub", "datasets")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def iter_file(path: Path, fmt: str, *, columns: list[str] | None = None) -> Iterator[Row]:
    """The rows of a local data file. Text is UTF-8 (a byte-order mark is allowed);
    anything else is one `HakariInputError` naming the file and the line. `columns`
    names the columns of a CSV file without a header row."""
    if not path.exists():
        raise HakariInputError("data file not found", file=str(path))
    try:
        if fmt == "jsonl":
            yield from _iter_jsonl(path)
        elif fmt == "json":
            yield from _iter_json(path)
        elif fmt == "csv":
            yield from _iter_csv(path, columns)
        elif fmt == "squad":
            yield from iter_squad(path)
        else:
            raise HakariInputError(f"unknown data format {fmt!r}", file=str(path), field="format")
    except UnicodeDecodeError as exc:
        raise HakariInputError(not_utf8_message(path, exc), file=str(path)) from None
    except OSError as exc:
        raise HakariInputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None


def not_utf8_message(path: Path, exc: UnicodeDecodeError) -> str:
    """Where the first byte that is not UTF-8 is (line and byte offset), read cheaply."""
    with open_input(path) as fh:  # the first 64 MiB, not the whole file
        data = fh.read(1 << 26)
    offset = exc.start
    # exc.start counts from the chunk being decoded; find the real offset in the file.
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as whole:
        offset = whole.start
    line = data.count(b"\n", 0, offset) + 1
    return (
        f"not UTF-8 text: byte 0x{data[offset]:02x} at line {line} (byte {offset}); "
        "save the file as UTF-8"
        if offset < len(data)
        else "not UTF-8 text; save the file as UTF-8"
    )


# The longest CSV cell read (characters): Python's csv module stops at 131,072 with an
# error of its own; a question with a long passage can pass that, and no model's context
# holds a cell of 16 Mi characters (about 4 M tokens).
CSV_CELL_LIMIT = 1 << 24


def _iter_csv(path: Path, columns: list[str] | None = None) -> Iterator[Row]:
    if csv.field_size_limit() < CSV_CELL_LIMIT:  # process-wide; never lowered here
        csv.field_size_limit(CSV_CELL_LIMIT)
    with open_input_text(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh, fieldnames=columns)
        named = "given" if columns else "header's"
        rows = 0
        try:
            header = reader.fieldnames or []
            for row in reader:
                if None in row or any(v is None for v in row.values()):
                    line = reader.line_num
                    raise HakariInputError(
                        f"line {line} has {'more' if None in row else 'fewer'} values than the "
                        f"{named} {len(header)} columns",
                        file=str(path),
                    )
                yield row
                rows += 1
        except csv.Error as exc:
            problem = str(exc)
            if "field larger than field limit" in problem:
                problem = f"a cell is longer than {csv.field_size_limit():,} characters"
            in_header = columns is None and reader.line_num == 0
            line = reader.line_num + 1  # the line being read when it failed
            raise HakariInputError(
                f"line {line}{' (the header)' if in_header else ''}: {problem}",
                file=str(path),
                row=None if in_header else rows,
            ) from None


def _iter_jsonl(path: Path) -> Iterator[Row]:
    for _, row in iter_jsonl(path):
        yield row


def _iter_json(path: Path) -> Iterator[Row]:
    try:
        doc = json.loads(read_input_text(path, encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise HakariInputError(f"not valid JSON: {exc}", file=str(path)) from exc
    rows = doc.get("data") if isinstance(doc, dict) else doc
    if not isinstance(rows, list):
        raise HakariInputError("expected a list of objects (or {'data': [...]})", file=str(path))
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise HakariInputError(f"item {i} is not a JSON object", file=str(path))
        yield row


def iter_squad(path: Path) -> Iterator[Row]:
    """Flatten SQuAD-style JSON (data → paragraphs → qas) into one row per question,
    in the hub layout: id, title, context, question, answers {text, answer_start}."""
    try:
        doc = json.loads(read_input_text(path, encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise HakariInputError(f"not valid JSON: {exc}", file=str(path)) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise HakariInputError("SQuAD-style JSON needs a top-level 'data' list", file=str(path))
    for a, article in enumerate(doc["data"]):
        for p, para in enumerate(article.get("paragraphs", [])):
            if "context" not in para:
                raise HakariInputError(
                    "missing 'context'", file=str(path), field=f"data[{a}].paragraphs[{p}]"
                )
            for qa in para.get("qas", []):
                for key in ("id", "question", "answers"):
                    if key not in qa:
                        raise HakariInputError(
                            f"missing {key!r}",
                            file=str(path),
                            field=f"data[{a}].paragraphs[{p}].qas",
                        )
                yield {
                    "id": qa["id"],
                    "title": article.get("title", ""),
                    "context": para["context"],
                    "question": qa["question"],
                    "answers": {
                        "text": [x["text"] for x in qa["answers"]],
                        "answer_start": [x.get("answer_start", -1) for x in qa["answers"]],
                    },
                }


_MISSING = object()


def get_path(row: Row, dotted: str) -> Any:
    """`answers.text` → row["answers"]["text"]; `choices.text.0` indexes lists."""
    value: Any = row
    for part in dotted.split("."):
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        elif isinstance(value, list | tuple) and part.lstrip("-").isdigit():
            idx = int(part)
            value = value[idx] if -len(value) <= idx < len(value) else _MISSING
        else:
            value = _MISSING
        if value is _MISSING:
            raise KeyError(dotted)
    return value
