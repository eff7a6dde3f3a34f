"""Small synthetic tasks and mixtures for the fine-tuning tests (no shared data needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TOY_TASK = """\
name: toy_polarity
language: en
description: toy polarity task for the fine-tuning tests
data:
  eval_split: validation
  splits:
    train: {{file: {train}, format: jsonl}}
    validation: {{file: {valid}, format: jsonl}}
target: label
answer_type: label
labels: [positive, negative]
fallback: {{kind: label, value: positive}}
metrics: [accuracy]
max_new_tokens: 3
templates:
  - id: 0-0
    prompt: "Text: {{text}}\\nPositive (0) or negative (1)?\\nAnswer:"
    regex: "[01]"
    answers: {{"0": positive, "1": negative}}
  - id: 0-1
    prompt: "Text: {{text}}\\nPositive (A) or negative (B)?\\nAnswer:"
    regex: "[AB]"
    answers: {{A: positive, B: negative}}
"""


def toy_rows(n: int, offset: int = 0) -> list[dict[str, Any]]:
    return [
        {"text": f"review {i}: {'great' if i % 2 else 'awful'} item", "label": label}
        for i in range(offset, offset + n)
        for label in ["negative" if i % 2 == 0 else "positive"]
    ]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def write_toy_task(folder: Path, n_train: int = 12, n_valid: int = 4) -> Path:
    """A task YAML with a local train and validation split; returns its path."""
    train = write_jsonl(folder / "train.jsonl", toy_rows(n_train))
    valid = write_jsonl(folder / "valid.jsonl", toy_rows(n_valid, offset=1000))
    path = folder / "toy_polarity.yaml"
    path.write_text(TOY_TASK.format(train=train, valid=valid), "utf-8")
    return path


def write_base_mixture(path: Path, n: int) -> Path:
    rows = [
        {"prompt": f"Say the number {i} in words.", "response": f"number {i}"} for i in range(n)
    ]
    return write_jsonl(path, rows)


SPACE_TASK = """\
name: toy_choice
language: en
data:
  eval_split: test
  splits:
    train: {{file: {train}, format: jsonl}}
    test: {{file: {test}, format: jsonl}}
target: gold
answer_type: choice
choices: {{field: options, count: 4, gold: letter}}
metrics: [accuracy]
max_new_chars: 4
space:
  question: question
  dimensions:
    instruction: [en_plain, en_none]
    enumerator: [upper, number]
    answer_cue: [answer, answer_is]
"""


def choice_rows(n: int, offset: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "question": f"question {i}?",
            "options": [f"option {i}-{j}" for j in range(4)],
            "gold": "ABCD"[i % 4],
        }
        for i in range(offset, offset + n)
    ]


def write_space_task(folder: Path, n_train: int = 8, n_test: int = 4) -> Path:
    """A multiple-choice task with a prompt space (8 templates) and no hand-written
    template, with a local train and test split; returns its path."""
    train = write_jsonl(folder / "train.jsonl", choice_rows(n_train))
    test = write_jsonl(folder / "test.jsonl", choice_rows(n_test, offset=1000))
    path = folder / "toy_choice.yaml"
    path.write_text(SPACE_TASK.format(train=train, test=test), "utf-8")
    return path
