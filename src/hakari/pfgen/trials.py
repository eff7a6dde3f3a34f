"""Trials files in the upstream format: JSON lines `{"question", "answer", "timestamp"}`
(hakari adds `"trial"`), plain `.jsonl` or xz-compressed `.jsonl.xz`.

Upstream files are byte-sorted, so file order is not trial order. The reference scorer
still pairs answers by file order; `identify_trials` recovers the real trials where the
file allows it (a `trial` field, or timestamps that cut into complete blocks).
"""

from __future__ import annotations

import hashlib
import json
import lzma
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from hakari._util.infiles import read_input, read_input_text
from hakari._util.jsonl import iter_jsonl
from hakari.errors import HakariInputError


@dataclass
class TrialsFile:
    path: Path
    input_hash: str  # SHA-1 of the file's bytes, as the reference records it
    rows: list[dict[str, Any]]  # the parsed lines, in file order
    config: dict[str, Any] | None  # the sibling config.json, when there is one


def _decompressed(path: Path, raw: bytes) -> bytes:
    if not path.name.endswith(".xz"):
        return raw
    try:
        return lzma.decompress(raw)
    except (lzma.LZMAError, EOFError) as exc:
        raise HakariInputError(
            f"not a valid xz file (truncated or damaged: {exc})", file=str(path)
        ) from exc


def _checked_row(path: Path, lineno: int, row: dict[str, Any]) -> dict[str, Any]:
    for name in ("question", "answer"):
        if not isinstance(row.get(name), str):
            raise HakariInputError(f"line {lineno}: expected a string", file=str(path), field=name)
    return row


def read_trials(path: Path) -> TrialsFile:
    if not path.is_file():
        raise HakariInputError("no such trials file", file=str(path))
    try:
        raw = read_input(path)
    except OSError as exc:
        raise HakariInputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from exc
    numbered = [
        (lineno, _checked_row(path, lineno, row))
        for lineno, row in iter_jsonl(path, data=_decompressed(path, raw))
    ]
    _check_no_copies(path, numbered)
    rows = [row for _, row in numbered]
    if not rows:
        raise HakariInputError("the trials file has no answers", file=str(path))
    config_path = path.parent / "config.json"
    config = None
    if config_path.is_file():
        try:
            config = json.loads(read_input_text(config_path))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            config = None
    return TrialsFile(path, hashlib.sha1(raw).hexdigest(), rows, config)


def _check_no_copies(path: Path, numbered: list[tuple[int, dict[str, Any]]]) -> None:
    """One answer per question and trial: a row whose question was already answered in
    the same trial (the same `trial`, else the same `timestamp`) is a copy (a file
    concatenated with itself), which would count one generation twice. Rows with
    neither field cannot be told apart from equal answers of two trials."""
    seen: dict[tuple[str, str, str], int] = {}
    for lineno, row in numbered:
        for name in ("trial", "timestamp"):
            if row.get(name) is not None:
                key = (row["question"], name, json.dumps(row[name]))
                break
        else:
            continue
        if key in seen:
            raise HakariInputError(
                f"line {lineno} answers the question of line {seen[key]} again in the same "
                f"trial ({key[1]} {row[key[1]]!r}): a copied row would be scored twice",
                file=str(path),
                field=key[1],
            )
        seen[key] = lineno


def check_questions(trials: TrialsFile, known: set[str]) -> None:
    """One clear error for the first answer to a question the data folder does not have."""
    for lineno, row in enumerate(trials.rows, start=1):
        if row["question"] not in known:
            raise HakariInputError(
                f"answer {lineno} is for a question that is not in the data folder: "
                f"{row['question']!r}",
                file=str(trials.path),
                field="question",
            )


def check_complete(trials: TrialsFile, questions: Collection[str], allow_partial: bool) -> None:
    """A score is over the whole question set: a file that answers only some of the
    questions is refused (its score is not comparable with any other), unless asked for
    (`--allow-partial`); the summary then says `partial`."""
    answered = len({row["question"] for row in trials.rows} & set(questions))
    if answered < len(questions) and not allow_partial:
        raise HakariInputError(
            f"answers {answered} of the {len(questions)} questions: a score over part of the "
            "question set is not comparable with complete ones; pass --allow-partial to "
            "score it anyway (labelled partial)",
            file=str(trials.path),
            field="--allow-partial",
        )


def estimated_trials(trials: TrialsFile) -> int:
    """Answers per question at most: the number of trials a file holds."""
    return max(Counter(row["question"] for row in trials.rows).values())


@dataclass(frozen=True)
class TrialIds:
    """A trial label for every row (file order), or why there is none."""

    labels: list[int] | None
    method: str | None  # "trial field" or "timestamps"
    reason: str | None = None


def identify_trials(rows: list[dict[str, Any]]) -> TrialIds:
    if all(isinstance(r.get("trial"), int) for r in rows):
        labels = [int(r["trial"]) for r in rows]
        problem = _incomplete_trials(rows, labels)
        if problem is None:
            return TrialIds(labels, "trial field")
        return TrialIds(None, None, f"trial field: {problem}")
    return _trials_from_timestamps(rows)


def _incomplete_trials(rows: list[dict[str, Any]], labels: list[int]) -> str | None:
    questions = {r["question"] for r in rows}
    per_trial: dict[int, Counter[str]] = {}
    for row, label in zip(rows, labels, strict=True):
        per_trial.setdefault(label, Counter())[row["question"]] += 1
    for label, counts in per_trial.items():
        if set(counts) != questions or max(counts.values()) != 1:
            return f"trial {label} does not answer every question exactly once"
    return None


def _trials_from_timestamps(rows: list[dict[str, Any]]) -> TrialIds:
    try:
        stamps = [datetime.fromisoformat(str(r["timestamp"])) for r in rows]
    except (KeyError, ValueError):
        return TrialIds(None, None, "no trial field and no usable timestamps")
    questions = {r["question"] for r in rows}
    block = len(questions)
    if len(rows) % block:
        return TrialIds(None, None, "the answer count is not a multiple of the question count")
    order = sorted(range(len(rows)), key=lambda i: stamps[i])
    labels = [0] * len(rows)
    for start in range(0, len(order), block):
        chunk = order[start : start + block]
        if len({rows[i]["question"] for i in chunk}) != block:
            return TrialIds(
                None, None, "timestamps do not cut into blocks that answer every question once"
            )
        for i in chunk:
            labels[i] = start // block
    return TrialIds(labels, "timestamps")
