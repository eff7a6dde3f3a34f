"""Hostile input to `hakari score` (a run folder or `--input FILE.jsonl`): each case is one
`error:` line naming the file, field or option (exit code 2) before any metric model or
judge loads, and a run folder is never left with a half-updated pair.

`no_model_loads` replaces every model loader (judges and metric models included) with
one that fails the test if called."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.cli import assert_one_line
from tests.helpers.runs import fake_run

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["score", *args])
    return result.exit_code, result.output


def outputs_file(tmp_path: Path) -> Path:
    path = tmp_path / "outputs.jsonl"
    rows = [{"p": "the cat sat", "r": "a cat sat", "q": "Describe."}] * 3
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


FILE_ARGS = ["--prediction-field", "p", "--reference-field", "r", "--metrics", "rouge1"]


@pytest.mark.parametrize(
    ("option", "value"),
    [("--batch-size", "0"), ("--judge-reasks", "-1"), ("--judge-max-tokens", "0"),
     ("--bertscore-layers", "0"), ("--lang", "fr")],
)  # fmt: skip
def test_numbers_out_of_range_name_their_option(
    tmp_path: Path, no_model_loads: list[str], option: str, value: str
) -> None:
    code, out = invoke(
        "--input", str(outputs_file(tmp_path)), "--output", str(tmp_path / "o.jsonl"),
        *FILE_ARGS, "--judge", "smollm2-135m", option, value,
    )  # fmt: skip
    assert_one_line(code, out, option, value)


def test_output_that_is_a_folder_fails_before_scoring(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    code, out = invoke("--input", str(outputs_file(tmp_path)), "--output", str(folder), *FILE_ARGS)
    assert_one_line(code, out, "--output", "folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "outputs.jsonl"]  # no .tmp


def _freeze(path: Path) -> bool:
    """Make `path` impossible to replace: immutable as root (ext4), read-only otherwise."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        return True
    chattr = shutil.which("chattr")
    done = chattr is not None and subprocess.run([chattr, "+i", str(path)]).returncode == 0
    return done


def _thaw(path: Path) -> None:
    if os.geteuid() == 0 and shutil.which("chattr"):
        subprocess.run(["chattr", "-i", str(path)], check=False)
    path.chmod(0o644)


def test_run_folder_whose_results_cannot_be_written(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """The pair is checked before any work: samples.jsonl was rewritten, then writing
    results.json failed, and the folder held new samples with old results."""
    run = fake_run(tmp_path / "run")
    samples = (run / "samples.jsonl").read_bytes()
    results = run / "results.json"
    if not _freeze(results):
        pytest.skip("cannot make results.json unwritable here (no chattr)")
    try:
        code, out = invoke(str(run), "--metrics", "exact_match")
    finally:
        _thaw(results)
    assert_one_line(code, out, "results.json", "cannot be written")
    assert (run / "samples.jsonl").read_bytes() == samples


def test_a_failed_results_write_leaves_the_old_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should publishing results.json fail after all (a full disk), samples.jsonl goes
    back to what it was: the folder holds the old pair, never a mixed one."""
    run = fake_run(tmp_path / "run")
    before = {name: (run / name).read_bytes() for name in ("samples.jsonl", "results.json")}
    real_replace = os.replace

    def failing_replace(src: object, dst: object) -> None:
        if Path(str(dst)).name == "results.json":
            raise OSError(28, "No space left on device")
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", failing_replace)
    code, out = invoke(str(run), "--metrics", "exact_match")
    assert_one_line(code, out, "results.json", "No space left")
    assert {name: (run / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in run.iterdir()) == ["results.json", "samples.jsonl"]


def test_bertscore_layers_beyond_the_model(tmp_path: Path, no_model_loads: list[str]) -> None:
    args = [*FILE_ARGS[:4], "--metrics", "bertscore", "--bertscore-model", "minilm"]
    code, out = invoke(
        "--input", str(outputs_file(tmp_path)), "--output", str(tmp_path / "o.jsonl"),
        *args, "--bertscore-layers", "999",
    )  # fmt: skip
    assert_one_line(code, out, "--bertscore-layers", "999", "6 layers")
    assert not no_model_loads


SINGLE_PROMPT = {
    "id": "mine",
    "version": 1,
    "source": "test",
    "kind": "single",
    "verdict": "bracket",
    "scale": [1, 10],
    "max_new_tokens": 64,
    "template": "Rate this answer to {{prompt}}:\n<response>{{response}}</response>\nRating:",
    "delimiters": ["<\\s*/?\\s*response\\s*>"],
    "reask": "Reply with [[N]] ({reason})",
}

JUDGE_PROMPT_CASES = {
    # tracebacks after the judge loaded
    "max-new-tokens-negative": ({"max_new_tokens": -5}, ["max_new_tokens", "-5"]),
    "unknown-placeholder": (
        {"template": "Rate {{respnse}} for {{prompt}}"},
        ["{{respnse}}", "response"],
    ),
    # accepted, and the judge never saw the answer it was scoring
    "no-response-placeholder": (
        {"template": "Rate the answer to {{prompt}}. Rating:"},
        ["{{response}}"],
    ),
    "reask-unknown-field": ({"reask": "Again: {why}"}, ["reask", "{why}"]),
    "scale-reversed": ({"scale": [10, 1]}, ["scale"]),
}


@pytest.mark.parametrize("case", sorted(JUDGE_PROMPT_CASES))
def test_judge_prompt_files_are_checked_before_the_judge_loads(
    tmp_path: Path, no_model_loads: list[str], case: str
) -> None:
    import yaml

    change, needles = JUDGE_PROMPT_CASES[case]
    prompt = tmp_path / "judge.yaml"
    prompt.write_text(yaml.safe_dump({**SINGLE_PROMPT, **change}), encoding="utf-8")
    code, out = invoke(
        "--input", str(outputs_file(tmp_path)), "--output", str(tmp_path / "o.jsonl"),
        "--prediction-field", "p", "--prompt-field", "q",
        "--judge", "smollm2-135m", "--judge-prompt", str(prompt),
    )  # fmt: skip
    assert_one_line(code, out, "judge.yaml", *needles)
    assert not no_model_loads


def test_a_good_judge_prompt_file_gets_to_the_judge(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """The checks do not refuse a well-formed file: the judge is the next thing loaded."""
    import yaml

    prompt = tmp_path / "judge.yaml"
    prompt.write_text(yaml.safe_dump(SINGLE_PROMPT), encoding="utf-8")
    runner.invoke(
        app,
        ["score", "--input", str(outputs_file(tmp_path)), "--output", str(tmp_path / "o.jsonl"),
         "--prediction-field", "p", "--prompt-field", "q",
         "--judge", "smollm2-135m", "--judge-prompt", str(prompt)],
    )  # fmt: skip
    assert no_model_loads == ["smollm2-135m"]
