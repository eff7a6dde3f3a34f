"""Answers that know the gold: a fake backend's responder for engine tests whose scores are
known in advance."""

from __future__ import annotations

from hakari.backends.base import GenerationRequest
from hakari.tasks.loader import load_task
from hakari.tasks.prompts import iter_chunks

TASK = "demo_sentiment_en"


def oracle_table(task_name: str) -> dict[str, str]:
    """prompt text -> the answer key that is correct for that prompt."""
    spec = load_task(task_name).spec
    assert spec.data.instances is not None
    table = {}
    for chunk in iter_chunks(spec, spec.templates, spec.data.instances, 100):
        for rp in chunk:
            assert rp.answers is not None
            table[rp.text] = next(k for k, v in rp.answers.items() if v == rp.gold)
    return table


def half_oracle(task_name: str):
    """Right on prompt type 0 (with chatter around the answer), unparseable on type 1."""
    table = oracle_table(task_name)

    def respond(req: GenerationRequest) -> str:
        answer = table[req.prompt]
        if "Read the review" in req.prompt:
            return "Hmm?"
        return answer if req.regex else f" {answer} (that is my answer)"

    return respond
