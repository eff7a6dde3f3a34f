"""LLM-as-a-judge: versioned prompt files, strict verdicts, both-order pairs, cached calls.

Used elsewhere: `Judge`, `JudgeItem`, `load_prompt`, `load_judge_backend`.

Modules: `prompts.py` (versioned judge prompt files, rendered safely), `judge.py` (the judge
through any backend, with the response cache), `parse.py` (a verdict read strictly: the last
well-formed one, range-checked).
"""

from typing import Any

from hakari.backends import registry
from hakari.backends.base import Backend
from hakari.judges.judge import Judge, JudgeItem, JudgeRun, JudgeScore
from hakari.judges.prompts import JudgePrompt, load_prompt


def load_judge_backend(spec: str, **kwargs: Any) -> Backend:
    """The judge model: any spec `hakari.backends.registry.load_backend` knows."""
    return registry.load_backend(spec, **kwargs)


__all__ = [
    "Judge",
    "JudgeItem",
    "JudgePrompt",
    "JudgeRun",
    "JudgeScore",
    "load_judge_backend",
    "load_prompt",
]
