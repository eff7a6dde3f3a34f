"""Hostile outputs and inputs of `hakari score` (and `analyze`): never two writers in one
run folder, never over an input or a run's files, text UTF-8 cannot encode kept exactly,
an input that never ends read with a bound; each refusal one `error:` line (exit 2)
before any scoring.

Hostile input to `hakari score` (a run folder or `--input FILE.jsonl`): each case is one
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
import yaml
from typer.testing import CliRunner

from hakari.cli import app
from hakari.judges.prompts import builtin_prompts, load_prompt
from tests.helpers.cli import assert_one_line
from tests.helpers.deadline import within_deadline
from tests.helpers.outputs import (
    finished_run,
    hakari_process,
    run_in_flight,
    snapshot,
    stderr_lines,
)

runner = CliRunner()


@pytest.fixture
def no_scoring(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring fails the test: a bad output must be refused before any work."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("scored before the output was checked")

    monkeypatch.setattr("hakari.rescore.common.score_samples", refuse)
    monkeypatch.setattr("hakari.rescore.files.score_samples", refuse)


def score(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["score", *args])
    return result.exit_code, result.output


def rows_file(path: Path, predictions: list[str]) -> Path:
    rows = [{"prediction": p, "ref": "a b c"} for p in predictions]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROUGE = ["--metrics", "rouge1", "--reference-field", "ref"]


@pytest.mark.slow
def test_score_while_a_run_writes_the_folder_is_refused(tmp_path: Path) -> None:
    """`score RUN` during a rerun into RUN (two writers of samples.jsonl): refused at once;
    the run then publishes a matching pair."""
    run = finished_run(tmp_path / "run")
    with run_in_flight(run, tmp_path / "cache") as rerun:
        code, out = score(str(run), "--metrics", "rouge1")
        assert_one_line(code, out, str(run), "another hakari command")
    assert rerun.returncode == 0, rerun.stderr
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert results["n_samples"] == len(lines) == 1
    assert "rescoring" not in results


def test_output_that_is_a_folder_is_refused_first(tmp_path: Path, no_scoring: None) -> None:
    rows = rows_file(tmp_path / "in.jsonl", ["a b"])
    (tmp_path / "out").mkdir()
    code, out = score("--input", str(rows), "--output", str(tmp_path / "out"), *ROUGE)
    assert_one_line(code, out, "--output", "folder")
    assert list((tmp_path / "out").iterdir()) == []


def test_output_over_a_runs_samples_is_refused(tmp_path: Path, no_scoring: None) -> None:
    run = finished_run(tmp_path / "run")
    before = snapshot(run)
    rows = rows_file(tmp_path / "in.jsonl", ["a b"])
    code, out = score("--input", str(rows), "--output", str(run / "samples.jsonl"), *ROUGE)
    assert_one_line(code, out, "--output", "samples.jsonl")
    assert snapshot(run) == before


def test_output_through_a_link_to_the_input_is_refused(tmp_path: Path, no_scoring: None) -> None:
    rows = rows_file(tmp_path / "in.jsonl", ["a b"])
    (tmp_path / "alias.jsonl").symlink_to(rows)
    code, out = score("--input", str(rows), "--output", str(tmp_path / "alias.jsonl"), *ROUGE)
    assert_one_line(code, out, "--output", "input")


def test_input_with_text_utf8_cannot_encode(tmp_path: Path) -> None:
    """A row holding the JSON escape "\\ud800" (a lone surrogate): scored, written with
    the same escape, counted; no temporary file left."""
    rows = tmp_path / "in.jsonl"
    rows.write_text('{"prediction": "a \\ud800 b", "ref": "a b c"}\n', encoding="utf-8")
    out_file = tmp_path / "out.jsonl"
    code, out = score("--input", str(rows), "--output", str(out_file), *ROUGE)
    assert code == 0, out
    assert "1 row(s) hold text UTF-8 cannot encode" in out
    written = out_file.read_text(encoding="utf-8")
    assert '"a \\ud800 b"' in written
    assert json.loads(written)["prediction"] == "a \ud800 b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_input_linked_to_dev_zero_is_refused_at_its_open(tmp_path: Path) -> None:
    zero = tmp_path / "rows.jsonl"
    zero.symlink_to("/dev/zero")
    out_file = tmp_path / "o.jsonl"
    result = hakari_process("score", "--input", str(zero), "--output", str(out_file), *ROUGE)
    lines = stderr_lines(result)
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "rows.jsonl" in lines[0] and "not a regular file (a device)" in lines[0]


def test_a_judge_never_sees_text_utf8_cannot_encode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tokenizers refuse lone surrogates (transformers' fast tokenizers raise a TypeError):
    the judge and the metric models get U+FFFD in their place, the row keeps its text."""
    from hakari.backends.base import GenerationRequest
    from hakari.backends.fake import FakeBackend

    def like_a_tokenizer(request: GenerationRequest) -> str:
        request.prompt.encode("utf-8")  # raises on a lone surrogate, as a tokenizer does
        return "Rating: [[7]]"

    judge = FakeBackend(like_a_tokenizer, name="judge")
    monkeypatch.setattr("hakari.judges.load_judge_backend", lambda spec, **kw: judge)
    rows = tmp_path / "in.jsonl"
    rows.write_text('{"prediction": "a \\ud800 b", "q": "Say a b c."}\n', encoding="utf-8")
    out_file = tmp_path / "out.jsonl"
    code, out = score(
        "--input", str(rows), "--output", str(out_file), "--judge", "fake:judge",
        "--prompt-field", "q",
        "--judge-prompt", "single_1to10", "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert code == 0, out
    (row,) = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert row["prediction"] == "a \ud800 b" and row["scores"]["judge_single_1to10"] == 7
    assert "a \ufffd b" in judge.generated[0].prompt


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
    run = finished_run(tmp_path / "run")
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
    run = finished_run(tmp_path / "run")
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


# --- issue 17 §1: judge delimiters run in linear time ---------------------------

EVIL = "<" * 46 + "!"  # with (<+)+$, Python's re backtracks for ever


def _judge_prompt(tmp_path: Path, delimiter: str) -> Path:
    data = yaml.safe_load(builtin_prompts()["single_1to10"].read_text(encoding="utf-8"))
    data["delimiters"] = [delimiter]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def test_judge_delimiter_the_matcher_cannot_take(tmp_path: Path, no_model_loads: list[str]) -> None:
    prompt = _judge_prompt(tmp_path, "<(?!/)response>")
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"prompt": "p", "prediction": "x"}) + "\n", encoding="utf-8")
    args = ["score", "--input", str(rows), "--output", str(tmp_path / "out.jsonl")]
    args += ["--judge", "fake:Rating: [[5]]", "--judge-prompt", str(prompt)]
    args += ["--prompt-field", "prompt", "--no-cache"]
    result = CliRunner().invoke(app, args)
    assert_one_line(result.exit_code, result.output, "mine.yaml", "look-ahead")
    assert not no_model_loads


def test_judge_delimiters_neutralise_in_linear_time(tmp_path: Path) -> None:
    """Every value put into a judge prompt (a model's answer) is searched for the prompt's
    delimiters: `(<+)+$` against 46 `<` and `!` used to hang."""
    prompt = load_prompt(str(_judge_prompt(tmp_path, "(<+)+$")))
    assert within_deadline(lambda: prompt.neutralise(EVIL)) == EVIL
    assert prompt.neutralise("<<<") == "‹‹‹"
