"""Hostile round five (issue 43), leaks: credentials recorded by another tool under any
name or in any shape never reach results.json, samples.jsonl, a report or an export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hakari._util.redact import redact, redact_arguments
from tests.helpers.cli import succeed
from tests.helpers.imports import imported
from tests.helpers.paths import FIXTURES

LM_EVAL = FIXTURES / "interop" / "lm_eval"

# One distinct value a secret: any of them found in a written file is a leak.
SECRETS = {
    "hfToken": "S1hfcamelcase0000000000",
    "authToken": "S2authcamel000000000000",
    "sessionToken": "S3sessioncamel000000000",
    "api_keys": ["S4firstkey000000000000", "S4secondkey00000000000"],
    "credentials": {"user": "someone", "secret_value": "S5nestedcred0000000000"},
    "headers": {"Authorization": "Basic dXNlcjpTNnBhc3N3b3JkMDAwMA=="},
    "adapter": "hf_S7ShapeOnlyNoKeyNameABCDEFGHIJKLMN",
    "base": "sk-proj-S8shapeonly0000000000000000",
}
STRING_FORM = (
    "pretrained=HuggingFaceTB/SmolLM2-135M-Instruct,hfToken=S9stringcamel0000000000,"
    "api_keys=S10stringplural00000000,credentials=S11stringcred0000000,"
    "header=Authorization: Basic dXNlcjpTMTJwYXNzd29yZA==,peft=hf_S13ShapeInStringABCDEFGHIJKLMNOP"
)


def _values(value: object) -> list[str]:
    if isinstance(value, dict):
        return [v for x in value.values() for v in _values(x)]
    if isinstance(value, list):
        return [v for x in value for v in _values(x)]
    return [str(value)]


LEAKS = [
    *[v for v in _values(SECRETS) if v != "someone"],
    "dXNlcjpTNnBhc3N3b3JkMDAwMA==",
    "S9stringcamel",
    "S10stringplural",
    "S11stringcred",
    "dXNlcjpTMTJwYXNzd29yZA==",
    "S13ShapeInString",
]


def _written(folder: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    )


def test_credentials_under_any_name_never_reach_a_written_file(tmp_path: Path) -> None:
    """Item 5: lm-eval model_args as a mapping (one model) and as a string (the other)."""
    logs = tmp_path / "logs"
    shutil.copytree(LM_EVAL, logs)
    for k, path in enumerate(sorted(logs.rglob("results_*.json"))):
        data = json.loads(path.read_text())
        data["config"]["model_args"] = (
            {"pretrained": data["model_name"], **SECRETS} if k == 0 else STRING_FORM
        )
        path.write_text(json.dumps(data))
    run = tmp_path / "run"
    imported("lm-eval", logs, run, "--group", "demo_mc")
    succeed(["export", str(run), "--format", "eee", "--output", str(tmp_path / "eee")])
    succeed(["export", str(run), "--format", "table", "--output", str(tmp_path / "t.csv")])
    report = succeed(["report", str(run), "--markdown"]).output
    text = _written(run) + _written(tmp_path / "eee") + (tmp_path / "t.csv").read_text() + report
    assert [s for s in LEAKS if s in text] == []
    assert "HuggingFaceTB/SmolLM2-135M-Instruct" in text  # the rest of the arguments kept


@pytest.mark.parametrize(
    ("name", "kept"),
    [("pretrained", True), ("revision", True), ("max_tokens", True), ("tokenizer", True)],
)
def test_ordinary_argument_names_are_kept(name: str, kept: bool) -> None:
    assert (redact_arguments({name: "gpt2"})[name] == "gpt2") is kept
    assert (
        redact("the bearer of the ring, Basic training") == "the bearer of the ring, Basic training"
    )


def test_an_older_run_with_credentials_in_its_record_exports_none(tmp_path: Path) -> None:
    """Item 5, every writer: results.json written before this redaction (or edited by hand)
    still holds credentials; the Every Eval Ever export redacts by key and by shape."""
    run = tmp_path / "run"
    imported("lm-eval", LM_EVAL, run, "--group", "demo_mc")
    results = json.loads((run / "results.json").read_text())
    for model in results["models"].values():
        model["identity"]["model_args"] = json.dumps({"pretrained": "x", **SECRETS})
        model["identity"]["extra"] = "pretrained=x,sessionToken=S3sessioncamel000000000"
    (run / "results.json").write_text(json.dumps(results))
    succeed(["export", str(run), "--format", "eee", "--output", str(tmp_path / "eee")])
    text = _written(tmp_path / "eee")
    assert [s for s in LEAKS if s in text] == []
    assert '\\"pretrained\\": \\"x\\"' in text
