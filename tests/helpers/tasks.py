"""A small valid task file (`GOOD`) and `mutate`, which breaks one field of a copy of it:
the raw material of the bad-task-input tests."""

from __future__ import annotations

import json

GOOD = {
    "name": "tiny",
    "language": "en",
    "target": "label",
    "answer_type": "label",
    "labels": ["yes", "no"],
    "fallback": {"kind": "label", "value": "yes"},
    "metrics": ["accuracy"],
    "templates": [
        {
            "id": "0-0",
            "prompt": "Q: {question}\nA:",
            "regex": "(yes|no)",
            "answers": {"yes": "yes", "no": "no"},
        },
        {
            "id": "0-1",
            "prompt": "Q: {question} (0=yes, 1=no)\nA:",
            "regex": "[01]",
            "answers": {"0": "yes", "1": "no"},
        },
    ],
    "data": {"splits": {"validation": {"file": "data.jsonl"}}},
}


def mutate(**changes) -> dict:
    task = json.loads(json.dumps(GOOD))
    for dotted, value in changes.items():
        node = task
        parts = dotted.split("__")
        for p in parts[:-1]:
            node = node[int(p)] if p.isdigit() else node[p]
        if value is None:
            del node[parts[-1]]
        else:
            node[parts[-1]] = value
    return task
