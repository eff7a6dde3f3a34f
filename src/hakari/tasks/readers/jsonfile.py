"""JSON arrays of objects (JEMHopQA) and MAWPS-ja's files (nlp-waseda's
chain-of-thought-ja-dataset), read as llm-jp-eval v1.3.0's processors read them.

MAWPS-ja: a few-shot example is one text "問題：…\\n解答：…よって、答えは126です。"; the
question is the part before "\\n解答：" (the text must hold exactly one), the answer the
text between the first "答えは" and the next "です。" after it. A test item's question is
its `question` cut before "\\n解答：", its answer `answer`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari._util.infiles import read_input_text
from hakari.errors import HakariInputError

QA_DELIMITER = "\n解答："


def _objects(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(read_input_text(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HakariInputError(f"not valid UTF-8 JSON: {exc}", file=str(path)) from None
    if not isinstance(doc, list) or not all(isinstance(x, dict) for x in doc):
        raise HakariInputError("expected a JSON array of objects", file=str(path))
    return doc


def read_json(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, obj in enumerate(_objects(path)):
        yield f"item {i}", obj


def read_mawps_shots(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, obj in enumerate(_objects(path)):
        text = obj.get("shot_example")
        parts = text.split(QA_DELIMITER) if isinstance(text, str) else []
        if len(parts) != 2 or "答えは" not in parts[1]:
            raise HakariInputError(
                f"item {i}: `shot_example` must be one '問題：…\\n解答：…答えは N です。' text",
                file=str(path),
            )
        answer = parts[1].split("答えは")[1].split("です。")[0]
        yield f"item {i}", {"question": parts[0], "answer": answer}


def read_mawps_test(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, obj in enumerate(_objects(path)):
        question = obj.get("question")
        if not isinstance(question, str):
            raise HakariInputError(f"item {i}: `question` is not text", file=str(path))
        yield f"item {i}", {**obj, "question": question.split(QA_DELIMITER)[0]}
