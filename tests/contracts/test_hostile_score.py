"""Hostile outputs and inputs of `hakari score` (and `analyze`): never two writers in one
run folder, never over an input or a run's files, text UTF-8 cannot encode kept exactly,
an input that never ends read with a bound; each refusal one `error:` line (exit 2)
before any scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.cli import assert_one_line
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


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_input_linked_to_dev_zero_is_read_with_a_bound(tmp_path: Path) -> None:
    zero = tmp_path / "rows.jsonl"
    zero.symlink_to("/dev/zero")
    out_file = tmp_path / "o.jsonl"
    result = hakari_process("score", "--input", str(zero), "--output", str(out_file), *ROUGE)
    lines = stderr_lines(result)
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "rows.jsonl" in lines[0] and "line 1" in lines[0]


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
