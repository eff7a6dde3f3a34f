"""A pfgen-bench data folder: its questions, helpfulness rules, reference answers and the
50 human-written example answers.

The folder is the upstream repository's `data/` directory (or a checkout that contains
one). Reading the reference answers (39 MB of JSON) is only needed to build the n-gram
tables; everything the scorer needs afterwards comes from the table cache, so
`data_fingerprint` hashes the files without parsing them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hakari._util.infiles import read_input, read_input_text
from hakari._util.jsonl import iter_jsonl
from hakari._util.regex import regex_problem
from hakari.errors import HakariInputError


@dataclass(frozen=True)
class Question:
    question_id: str
    question: str
    keywords: list[dict[str, Any]]
    sources: tuple[str, ...]  # reference source letters, in the file's order


@dataclass(frozen=True)
class Example:
    question: str
    answer: str


def resolve_data_dir(path: Path) -> Path:
    """Accept the data folder itself or a checkout that has it as `data/`."""
    if not path.exists():
        raise HakariInputError("the pfgen-bench data folder does not exist", file=str(path))
    if not path.is_dir():
        raise HakariInputError("expected a folder, got a file", file=str(path))
    if not sorted(path.glob("Q*.json")) and (path / "data").is_dir():
        path = path / "data"
    if not sorted(path.glob("Q*.json")):
        raise HakariInputError(
            "no Q*.json question files here; point --data-dir at a pfgen-bench checkout "
            "or its data/ folder (or run `hakari pfgen fetch-data`)",
            file=str(path),
        )
    return path


def question_files(data_dir: Path) -> list[Path]:
    """The question files in the order the reference scorer reads them (sorted paths)."""
    return sorted(data_dir.glob("Q*.json"), key=lambda p: str(p))


def question_texts(data_dir: Path) -> list[str]:
    """The question of every question file, in file order (no table is built)."""
    return [load_question_file(p)[0].question for p in question_files(data_dir)]


def data_fingerprint(data_dir: Path) -> str:
    """The reference scorer's `metadata_hash`: SHA-1 over the SHA-1 hex digests of the
    question files in sorted order. It is also the key of the n-gram table cache."""
    digests = [hashlib.sha1(read_input(p)).hexdigest() for p in question_files(data_dir)]
    return hashlib.sha1("".join(digests).encode("utf-8")).hexdigest()


def _load_json(path: Path) -> Any:
    try:
        return json.loads(read_input_text(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HakariInputError(f"cannot read JSON: {exc}", file=str(path)) from exc


def _check_rule(rule: Any, path: Path) -> None:
    if not isinstance(rule, dict):
        raise HakariInputError(
            f"a rule must be an object, got {rule!r}", file=str(path), field="keywords"
        )
    kinds = [k for k in ("t", "and", "or") if k in rule]
    if len(kinds) != 1:
        raise HakariInputError(
            f"a rule needs exactly one of t/and/or, got {sorted(rule)}",
            file=str(path),
            field="keywords",
        )
    if kinds[0] == "t":
        if not isinstance(rule["t"], str):
            raise HakariInputError(
                "a t rule holds a regex string", file=str(path), field="keywords"
            )
        if (problem := regex_problem(rule["t"])) is not None:
            raise HakariInputError(
                f"regex {rule['t']!r} cannot be used: {problem}", file=str(path), field="keywords"
            )
        return
    children = rule[kinds[0]]
    if not isinstance(children, list) or not children:
        raise HakariInputError(
            f"an {kinds[0]} rule holds a non-empty list", file=str(path), field="keywords"
        )
    for child in children:
        _check_rule(child, path)


def load_question_file(path: Path) -> tuple[Question, dict[str, list[str]]]:
    """One `Q??.json`: the question and its reference answers by source."""
    raw = _load_json(path)
    if not isinstance(raw, dict):
        raise HakariInputError("expected a JSON object", file=str(path))
    for name in ("question_id", "question", "keywords", "answers"):
        if name not in raw:
            raise HakariInputError("missing field", file=str(path), field=name)
    answers = raw["answers"]
    if not isinstance(answers, dict) or not answers:
        raise HakariInputError("expected {source: [answers]}", file=str(path), field="answers")
    for source, refs in answers.items():
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            raise HakariInputError(
                "expected a non-empty list of strings", file=str(path), field=f"answers.{source}"
            )
    if not isinstance(raw["keywords"], list):
        raise HakariInputError("expected a list of rules", file=str(path), field="keywords")
    for rule in raw["keywords"]:
        _check_rule(rule, path)
    question = Question(
        question_id=str(raw["question_id"]),
        question=str(raw["question"]),
        keywords=raw["keywords"],
        sources=tuple(answers),
    )
    return question, answers


def load_examples(data_dir: Path) -> list[Example]:
    """The 50 human-written example answers (`questions.jsonl`): the few-shot pool."""
    path = data_dir / "questions.jsonl"
    if not path.is_file():
        raise HakariInputError("missing the example answers file", file=str(path))
    examples = []
    for lineno, row in iter_jsonl(path):
        question, answer = row.get("question"), row.get("answer")
        if not isinstance(question, str) or not isinstance(answer, str):
            raise HakariInputError(
                f"line {lineno}: needs string fields 'question' and 'answer'", file=str(path)
            )
        examples.append(Example(question=question, answer=answer))
    return examples
