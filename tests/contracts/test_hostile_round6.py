"""Hostile round six (issue 43's open items): what a native run, its statistics and its
engine settings must not do silently or unboundedly."""

from __future__ import annotations

import json
from pathlib import Path

from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.reports.markdown import markdown_report
from hakari.results import EvalResults
from hakari.runner import evaluate

STS_TASK = """\
name: sts_stub
language: en
description: Two number templates, one of which always answers 2.5.
target: label
answer_type: number
fallback: {kind: number, value: 2.0}
metrics: [pearson]
max_new_chars: 8
templates:
  - id: 0-0
    prompt: "Rate {text}. Answer:"
    regex: "[0-5](\\\\.[0-9])?"
  - id: 1-0
    prompt: "How similar is {text}? Answer:"
    regex: "[0-5](\\\\.[0-9])?"
data:
  instances:
    - {text: a, label: 0.0}
    - {text: b, label: 1.0}
    - {text: c, label: 3.0}
    - {text: d, label: 5.0}
"""


def test_a_native_template_with_a_constant_answer_is_named_not_averaged_silently(
    tmp_path: Path,
) -> None:
    """Item 18 for native runs: a template that answers one value has no Pearson
    (undefined); it is counted 0.0 in the mean and the Sharpe score, and now results.json
    (`undefined`) and every report view name it, as an import's notes did."""
    task = tmp_path / "sts_stub.yaml"
    task.write_text(STS_TASK, encoding="utf-8")
    golds = {"a": "0.0", "b": "1.0", "c": "3.0", "d": "5.0"}

    def respond(request: GenerationRequest) -> str:
        if request.prompt.startswith("How similar"):
            return "2.5"
        return golds[request.prompt.split()[1].rstrip(".")]

    results = evaluate(
        models=["stub"],
        tasks=[str(task)],
        decodings=["greedy"],
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        backend_factory=lambda spec: FakeBackend(respond, name=spec),
        n_boot=0,
    )
    dec = results.models["stub"].tasks["sts_stub"].decodings["greedy"]
    assert dec.templates["1-0"].metrics["pearson"] == 0.0
    assert dec.undefined == {"pearson": {"1-0": "constant_predictions"}}
    doc = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    written = doc["models"]["stub"]["tasks"]["sts_stub"]["decodings"]["greedy"]
    assert written["undefined"] == {"pearson": {"1-0": "constant_predictions"}}
    read = EvalResults.read(tmp_path / "run" / "results.json")
    text = " ".join(markdown_report(read).split())
    assert "pearson is undefined for template '1-0'" in text
    assert "counted as 0.0" in text
