"""`hakari run` shows its result (issue 26): each model × task's tables as soon as the model
has finished the task, then the summary, one verdict paragraph (several models) and the
warnings: a model below a trivial baseline, a cell won through fallback answers; the
trivial baselines named for what they are; `--quiet` and `--json` for scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.backends.fake import FakeBackend
from hakari.cli import app
from hakari.runner import evaluate
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.tasks import GOOD

runner = CliRunner()


def skewed_task(tmp_path: Path, yes: int = 15, no: int = 5) -> Path:
    """GOOD with `yes` "yes" rows then `no` "no" rows and one answer format (yes|no) in
    both templates, so that `fake:yes` answers every prompt, `fake:no` too, and any
    other fake falls back to "yes" everywhere."""
    task = json.loads(json.dumps(GOOD))
    for template in task["templates"]:
        template["regex"], template["answers"] = "(yes|no)", {"yes": "yes", "no": "no"}
    task["templates"][1]["prompt"] = "Question: {question}\nAnswer yes or no:"
    rows = [{"question": f"q{i}", "label": "yes"} for i in range(yes)]
    rows += [{"question": f"q{yes + i}", "label": "no"} for i in range(no)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(task))
    return path


def run_cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    task = skewed_task(tmp_path)
    result = runner.invoke(
        app,
        ["run", "--tasks", str(task), "--no-cache", "--n-boot", "200",
         "--output", str(tmp_path / "run"), *args],
    )  # fmt: skip
    return result.exit_code, " ".join(result.output.split())  # lines wrap at 80 columns


def test_two_models_print_tables_as_they_finish_then_the_verdict(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "-m", "fake:yes", "-m", "fake:no")
    assert code == 0, out
    first = out.index("fake:yes · tiny · greedy")
    second = out.index("fake:no · tiny · greedy")
    summary = out.index("summary · tiny · greedy")
    assert first < second < summary
    assert "fake:yes is better overall: better on 2 of 2 task × decoding × metric cells" in out
    # fake:no scores 0.25: below the uniform guess (0.5) and the majority answer (0.75)
    assert "warning: fake:no is below a trivial baseline on tiny · greedy" in out
    assert "accuracy 0.250 < majority answer 0.750" in out
    assert "warning: fake:yes is below" not in out
    assert str(tmp_path / "run" / "results.json") in out
    assert "hakari report" in out and "--html" in out


def test_a_win_through_fallback_answers_is_flagged(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "-m", "fake:zzz", "-m", "fake:no")
    assert code == 0, out
    assert "fake:zzz is better overall" in out
    assert "warning: fake:zzz wins tiny · greedy · accuracy with 100% fallback answers" in out


def test_tied_models_are_called_tied(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "-m", "fake:yes", "-m", "fake:zzz")
    assert code == 0, out  # zzz falls back to "yes": the same answers
    assert "No model is better: the models are tied on all 2 task × decoding × metric" in out
    report = runner.invoke(app, ["report", str(tmp_path / "run")])
    assert report.exit_code == 0, report.output
    ranked = " ".join(report.output.split())
    assert "#1 fake:yes (0.750)" in ranked and "#1 fake:zzz (0.750)" in ranked  # not #2


def test_the_baselines_are_named_and_recorded(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "-m", "fake:yes")
    assert code == 0, out
    for label in ("uniform guess", "majority answer", "chance (fallback only)"):
        assert label in out
    task = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["fake:yes"][
        "tasks"
    ]["tiny"]
    assert task["uniform_guess"] == {"accuracy": 0.5}
    assert task["majority_answer"] == {"accuracy": 0.75}
    assert task["chance"] == {"accuracy": 0.75}  # the fallback, "yes", is the majority here
    assert "better overall" not in out  # one model: no verdict, warnings only


def test_limit_with_a_skewed_label_mix_says_so(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "-m", "fake:yes", "--limit", "8")
    assert code == 0, out
    assert "note: --limit 8 takes the split's first rows: labels yes 100%, no 0%" in out
    assert "--sample 8" in out
    code, out = run_cli(tmp_path, "-m", "fake:yes", "--sample", "8")
    assert "note: --limit" not in out


def test_quiet_prints_the_path_only_and_json_the_results(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "-m", "fake:yes", "--quiet")
    assert code == 0, out
    assert out == str(tmp_path / "run" / "results.json")
    code, out = run_cli(tmp_path, "-m", "fake:yes", "--json", "--output", str(tmp_path / "j"))
    assert code == 0, out
    data = json.loads(out)
    assert data["models"]["fake:yes"]["tasks"]["tiny"]["n_instances"] == 20


def test_task_done_is_called_before_the_next_model_loads(tmp_path: Path) -> None:
    events: list[str] = []

    def factory(spec: str) -> FakeBackend:
        events.append(f"load {spec}")
        return FakeBackend(lambda r: spec, name=spec)

    evaluate(
        models=["yes", "no"],
        tasks=[skewed_task(tmp_path)],
        decodings=["greedy"],
        n_boot=0,
        use_cache=False,
        backend_factory=factory,
        on_task_done=lambda model, task, result: events.append(
            f"done {model} {task} {result.decodings['greedy'].aggregate['accuracy'].mean}"
        ),
    )
    assert events == ["load yes", "done yes tiny 0.75", "load no", "done no tiny 0.25"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--limt", "3"], "no such option: --limt (did you mean --limit?)"),
        (["--tasks", "jnli_x"], "unknown task 'jnli_x' (did you mean jnli?)"),
        (["--model", "smollm2-13m"], "unknown model 'smollm2-13m' (did you mean smollm2-135m?)"),
        (["--decoding", "greddy"], "unknown decoding 'greddy' (did you mean greedy?)"),
        (["--qa-mode", "firstline"], "unknown value 'firstline' (did you mean first-line?)"),
    ],
)
def test_a_typo_gets_did_you_mean_on_one_line(args: list[str], needle: str) -> None:
    code, out = invoke(*args)
    assert_one_line(code, out, needle)


def test_a_missing_data_dir_is_named_at_once(tmp_path: Path) -> None:
    code, out = invoke("--tasks", "jnli", "--data-dir", str(tmp_path / "nowhere"))
    assert_one_line(code, out, "--data-dir", "nowhere does not exist")


def test_the_markdown_report_has_the_verdict_and_the_baselines(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "-m", "fake:yes", "-m", "fake:no", "--quiet")
    assert code == 0, out
    report = runner.invoke(app, ["report", str(tmp_path / "run"), "--markdown"])
    assert report.exit_code == 0, report.output
    md = report.output
    assert "| uniform guess | majority | chance (fallback only) |" in md
    assert "- fake:yes is better overall" in md
    assert "- warning: fake:no is below a trivial baseline on tiny · greedy" in md


def test_library_progress_bars_are_off_unless_verbose(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from hakari.cli.common import QUIET_LIBRARIES

    for name in QUIET_LIBRARIES:  # setenv first: monkeypatch restores what was there
        monkeypatch.setenv(name, "x")
        monkeypatch.delenv(name)
    runner.invoke(app, ["run", "--verbose", "--limt", "1"])
    assert not any(name in os.environ for name in QUIET_LIBRARIES)
    runner.invoke(app, ["run", "--limt", "1"])
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert os.environ["TRANSFORMERS_VERBOSITY"] == "error"
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "info")  # the user's own setting wins
    runner.invoke(app, ["run", "--limt", "1"])
    assert os.environ["TRANSFORMERS_VERBOSITY"] == "info"
    # the tokenizers library keeps its threads (a batch's encoding on every CPU): the
    # command does not set TOKENIZERS_PARALLELISM=false (only a vLLM engine does)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "x")
    monkeypatch.delenv("TOKENIZERS_PARALLELISM")
    runner.invoke(app, ["run", "--limt", "1"])
    assert "TOKENIZERS_PARALLELISM" not in os.environ
