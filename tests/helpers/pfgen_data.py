"""pfgen-bench data folders and trials files for tests: a two-question folder (the
50-example file replaced by two examples) and trials written as JSON lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_question(
    folder: Path, qid: str, question: str, answers: dict[str, list[str]], keywords: list[Any]
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{qid}.json"
    data = {
        "question_id": qid,
        "question": question,
        "category": "test",
        "note": "",
        "keywords": keywords,
        "answers": answers,
    }
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


SMALL_QUESTIONS = {
    "Q01": ("富士山の高さは？", [{"t": "3776"}, {"t": "メートル", "importance": 0.5}]),
    "Q02": ("日本の首都は？", [{"or": [{"t": "東京"}, {"t": "江戸"}]}]),
}
SMALL_REFERENCES = {
    "Q01": {
        "P": [
            "富士山の高さは3776メートルで、日本で最も高い山です。",
            "富士山は標高3776メートルの成層火山です。",
            "富士山の高さは約3776メートルです。",
        ],
        "S": ["富士山は日本一高い山で、高さは3776メートルです。", "標高は3776メートルです。"],
    },
    "Q02": {"P": ["日本の首都は東京です。", "東京が日本の首都です。", "首都は東京です。"]},
}


def write_small_data(folder: Path) -> Path:
    """A two-question data folder with the 50-example file replaced by two examples."""
    for qid, (question, keywords) in SMALL_QUESTIONS.items():
        write_question(folder, qid, question, SMALL_REFERENCES[qid], keywords)
    examples = [
        {"question": q, "answer": refs[next(iter(refs))][0]}
        for (q, _), refs in zip(SMALL_QUESTIONS.values(), SMALL_REFERENCES.values(), strict=True)
    ]
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples), encoding="utf-8"
    )
    return folder


def write_trials(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path
