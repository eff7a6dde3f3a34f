"""The words of the schema, defined once: the closed sets of values that task files,
requests, results.json and samples.jsonl share (a task's language and answer type, the
QA post-processing, the prompt format). The stages below and above import them from
here so that a value means one thing everywhere."""

from __future__ import annotations

from typing import Literal

Language = Literal["en", "ja"]
"""A task's language: English or Japanese."""
AnswerType = Literal["label", "number", "text"]
"""What a task's answer is: one of its labels, a number, or free text."""
QAMode = Literal["first-line", "paper"]
"""The SQuAD/JSQuAD post-processing of an answer (`hakari.tasks.extract`)."""
QA_MODES: tuple[QAMode, ...] = ("first-line", "paper")
DEFAULT_QA_MODE: QAMode = "first-line"
Limit = int | Literal["all"] | None
"""`--limit`: the first N instances of each task's split, "all" of them (past a jaster
set's default of its first 100), or None (each task's default: all, or a jaster set's
`max_items`)."""
ALL_ITEMS: Literal["all"] = "all"
PromptFormat = Literal["auto", "chat", "completion"]
"""How a prompt reaches a model: its chat template, plain text, or whichever the model
has (`hakari.backends.base`)."""
