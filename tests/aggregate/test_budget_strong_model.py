"""Issue 38 §1 end to end: a budgeted run of a strong model (a stub right 9 times in 10,
shifted per template, whatever the question, like the issue's stub servers) on 20
templates × 40 questions at 2x publishes an interval of the full grid's mean that covers
the full run's mean, a mean no further from it than the cells run, and says in
results.json which estimator made the numbers."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.runner import evaluate
from hakari.tasks.loader import load_task
from hakari.tasks.prompts import iter_chunks

GOLDS = "ACBADAACACCABCCDCCBCADBBBACBABAADAABBBBB"  # JMMLU marketing's first 40
WORDINGS = (
    "Question: {text}\nWhich option is right?",
    "Read the question and pick one option.\n{text}",
    "{text}\nSelect the correct answer.",
    "Q: {text}\nYour choice?",
    "Here is a multiple-choice question.\n{text}\nPick one.",
)
KEYS = (("A", "B", "C", "D"), ("1", "2", "3", "4"), ("a", "b", "c", "d"), ("w", "x", "y", "z"))


def write_task(folder: Path) -> Path:
    lines = [
        "name: strong_stub",
        "language: en",
        "description: A stub task, 40 questions, 20 templates (issue 38's shape).",
        "target: label",
        "answer_type: label",
        "labels: [A, B, C, D]",
        "fallback: {kind: label, value: A}",
        "metrics: [accuracy]",
        "max_new_chars: 2",
        "templates:",
    ]
    for w, wording in enumerate(WORDINGS):
        for k, keys in enumerate(KEYS):
            pairs = list(zip(keys, "ABCD", strict=True))
            options = ", ".join(f"{key}: option {label}" for key, label in pairs)
            prompt = f"{wording}\nOptions: {options}.\nAnswer:"
            answers = ", ".join(f'"{key}": {label}' for key, label in pairs)
            lines += [
                f"  - id: {w}-{k}",
                f"    prompt: {json.dumps(prompt)}",
                f'    regex: "[{"".join(keys)}]"',
                f"    answers: {{{answers}}}",
            ]
    lines += ["data:", "  instances:"]
    lines += [
        f'    - {{text: "Question number {i}: which is it?", label: {g}}}'
        for i, g in enumerate(GOLDS)
    ]
    path = folder / "strong_stub.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _unit(*key: object) -> float:
    return int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:8], "big") / 2.0**64


def strong_stub(task: Path, skill: float = 0.9):
    """A responder right with probability expit(logit(skill) + offset of the template),
    a fixed function of the prompt; its wrong answers spread over the other keys."""
    spec = load_task(str(task)).spec
    assert spec.data.instances is not None
    table: dict[str, tuple[str, list[str], float]] = {}
    for chunk in iter_chunks(spec, spec.templates, spec.data.instances, 100):
        for rp in chunk:
            assert rp.answers is not None
            right = next(k for k, v in rp.answers.items() if v == rp.gold)
            wrong = sorted(k for k in rp.answers if k != right)
            offset = 0.4 * (2.0 * _unit(rp.template_id) - 1.0) * math.sqrt(3.0)
            logit = math.log(skill / (1.0 - skill)) + offset
            table[rp.text] = (right, wrong, 1.0 / (1.0 + math.exp(-logit)))

    def respond(request: GenerationRequest) -> str:
        right, wrong, p = table[request.prompt]
        if _unit(request.prompt, "right") < p:
            return right
        return wrong[int(_unit(request.prompt, "wrong") * len(wrong))]

    return respond


@pytest.mark.slow
def test_a_strong_model_s_budgeted_interval_covers_the_full_grid(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    respond = strong_stub(task)

    def run(name: str, **kwargs: object):
        return evaluate(
            models=["strong"],
            tasks=[str(task)],
            decodings=["greedy"],
            cache_dir=tmp_path / "cache",
            output_dir=tmp_path / name,
            backend_factory=lambda spec: FakeBackend(respond, name=spec),
            n_boot=0,
            **kwargs,  # type: ignore[arg-type]
        )

    full = run("full").models["strong"].tasks["strong_stub"].decodings["greedy"]
    truth = full.aggregate["accuracy"]
    assert 0.85 <= truth.mean <= 0.95  # the stub is the strong model the issue describes
    run("budget", budget="2x", seed=3)
    doc = json.loads((tmp_path / "budget" / "results.json").read_text(encoding="utf-8"))
    dec = doc["models"]["strong"]["tasks"]["strong_stub"]["decodings"]["greedy"]
    assert dec["budget"]["design"]["cells_run"] == 80
    stats = dec["aggregate"]["accuracy"]
    assert stats["mean_grid_ci_low"] <= truth.mean <= stats["mean_grid_ci_high"]
    assert stats["sharpe_grid_ci_low"] <= truth.sharpe <= stats["sharpe_grid_ci_high"]
    chosen = dec["budget"]["estimator"]["metrics"]["accuracy"]
    assert chosen["used"] == "design-weighted cell mean"
    assert chosen["reason"] == "instances uninformative"
    # the published mean is the cells run's: never further from the truth than they are
    assert stats["mean"] == pytest.approx(chosen["design_mean"])
    assert dec["budget"]["estimator"]["pooled_share"] > 0.25
