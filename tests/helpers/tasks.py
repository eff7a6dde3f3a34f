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


def jaster_task(name: str, jaster: dict) -> dict:
    """A one-template jaster set (`data.jaster` = `jaster`) as the jaster tests write it:
    llm-jp-eval's answer cut, plain-text prompts and exact match, template 0-4 on the
    instruction and shots."""
    return {
        "name": name,
        "language": "ja",
        "data": {"eval_split": "test", "jaster": jaster},
        "target": "output",
        "answer_type": "text",
        "answer_cut": "blank-line",
        "prompt_format": "completion",
        "fallback": {"kind": "text"},
        "metrics": ["llmjp_exact_match"],
        "max_new_tokens": 3,
        "templates": [
            {"id": "0-4", "prompt": "{instruction}{shots_4}\n{input}\n", "regex": "[^\\n]+"}
        ],
    }
