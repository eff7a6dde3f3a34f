"""Hostile outputs of `hakari pfgen`: `score --json` and `leaderboard --html` never write
over what they read, a full device is one `error:` line (exit 2) and stays a device,
`build-reference` never writes into its own data folder, all before any work.

Hostile input to `hakari pfgen score|leaderboard|build-reference|generate|fetch-data`:
each case is one `error:` line naming the file or option (exit code 2) before the n-gram
tables are built, a model loads or the work starts; a score over part of the question
set is refused unless asked for, and then labelled as partial wherever it is shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from hakari.pfgen.helpfulness import score_helpfulness
from hakari.pfgen.reference_build import drop_ng
from tests.helpers.cli import assert_one_line
from tests.helpers.deadline import within_deadline
from tests.helpers.outputs import full_device, is_char_device, snapshot
from tests.helpers.pfgen_data import write_small_data, write_trials

runner = CliRunner()
QUESTIONS = {"Q01": ("富士山の高さは？", "3776"), "Q02": ("日本の首都は？", "東京")}


def data_folder(folder: Path) -> Path:
    """Two pfgen-bench questions with a few reference answers each."""
    folder.mkdir(parents=True)
    for qid, (question, keyword) in QUESTIONS.items():
        answers = {"P": [f"{keyword}です。", f"答えは{keyword}。", f"{keyword}でしょう。"]}
        data = {"question_id": qid, "question": question, "category": "test", "note": "",
                "keywords": [{"t": keyword}], "answers": answers}  # fmt: skip
        (folder / f"{qid}.json").write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    examples = [{"question": q, "answer": f"{k}です。"} for q, k in QUESTIONS.values()]
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples), "utf-8"
    )
    return folder


def trials_file(path: Path, trials: int = 1) -> Path:
    rows = [{"question": q, "answer": f"答えは{k}です。", "timestamp": f"2025-01-01T00:0{t}:0{i}"}
            for t in range(trials) for i, (q, k) in enumerate(QUESTIONS.values())]  # fmt: skip
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


@pytest.fixture
def no_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("n-gram tables were built before the output was checked")

    monkeypatch.setattr("hakari.pfgen.tables.open_tables", refuse)


def pfgen(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["pfgen", *args])
    return result.exit_code, result.output


def test_score_json_over_its_trials_is_refused(tmp_path: Path, no_tables: None) -> None:
    data, trials = data_folder(tmp_path / "data"), trials_file(tmp_path / "trials.jsonl")
    before = trials.read_bytes()
    code, out = pfgen("score", str(trials), "--data-dir", str(data), "--json", str(trials))
    assert_one_line(code, out, "--json", "trials.jsonl", "input")
    assert trials.read_bytes() == before


def test_score_json_to_a_full_device(tmp_path: Path) -> None:
    data, trials = data_folder(tmp_path / "data"), trials_file(tmp_path / "trials.jsonl")
    device = full_device(tmp_path)
    args = ["score", str(trials), "--data-dir", str(data), "--cache-dir", str(tmp_path / "c")]
    code, out = pfgen(*args, "--bootstrap", "10", "--json", str(device))
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in out, out
    assert "--json" in errors[0] and "No space left on device" in errors[0]
    assert is_char_device(device)


def test_build_reference_into_its_own_data_folder_is_refused(
    tmp_path: Path, no_tables: None
) -> None:
    data, trials = data_folder(tmp_path / "data"), trials_file(tmp_path / "t.jsonl", 4)
    before = snapshot(data)
    code, out = pfgen(
        "build-reference", str(trials), "--data-dir", str(data), "--output-dir", str(data),
        "--k", "1", "--pool", "2",
    )  # fmt: skip
    assert_one_line(code, out, "--output-dir", "input")
    assert snapshot(data) == before


def test_build_reference_output_that_is_a_file_is_refused_first(
    tmp_path: Path, no_tables: None
) -> None:
    data, trials = data_folder(tmp_path / "data"), trials_file(tmp_path / "trials.jsonl")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, out = pfgen(
        "build-reference", str(trials), "--data-dir", str(data), "--output-dir", str(blocker)
    )
    assert_one_line(code, out, "--output-dir", "not a folder")


def test_leaderboard_html_over_an_input_is_refused(tmp_path: Path, no_tables: None) -> None:
    results = tmp_path / "results"
    results.mkdir()
    summary = results / "summary.json"
    numbers = dict.fromkeys(("score", "score_std", "fluency", "truthfulness", "helpfulness"), 0.5)
    entry = {"model": "m", "num_trials": 10, "length": 100.0, "uncertainty": {}, **numbers}
    summary.write_text(json.dumps(entry), encoding="utf-8")
    before = summary.read_bytes()
    code, out = pfgen("leaderboard", str(results), "--html", str(summary))
    assert_one_line(code, out, "--html", "summary.json", "input")
    assert summary.read_bytes() == before


FUJI, TOKYO = "富士山の高さは？", "日本の首都は？"


def rows(trials: int, questions: tuple[str, ...] = (FUJI, TOKYO)) -> list[dict]:
    answers = {FUJI: "富士山の高さは3776メートルです。", TOKYO: "東京です。"}
    return [
        {"question": q, "answer": answers[q], "timestamp": f"2025-01-01T00:00:{t:02d}", "trial": t}
        for t in range(trials)
        for q in questions
    ]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_small_data(tmp_path / "data")


def score(tmp_path: Path, data: Path, *extra: str, trials: int = 3) -> tuple[int, str]:
    path = write_trials(tmp_path / "t.jsonl", rows(trials))
    return pfgen("score", str(path), "--data-dir", str(data), "--cache-dir", str(tmp_path), *extra)


SCORE_OPTION_CASES = {
    "bootstrap-negative": (["--bootstrap", "-1"], ["--bootstrap", "-1"]),
    "bootstrap-zero": (["--bootstrap", "0"], ["--bootstrap", "0"]),
    "bootstrap-beyond-memory": (["--bootstrap", "100000000"], ["--bootstrap", "memory"]),
    "seed-negative": (["--seed", "-3"], ["--seed", "-3"]),
}


@pytest.mark.parametrize("case", sorted(SCORE_OPTION_CASES))
def test_score_options(
    tmp_path: Path, data: Path, memory_available: Callable[[int], None], case: str
) -> None:
    memory_available(256 << 20)
    args, needles = SCORE_OPTION_CASES[case]
    assert_one_line(*score(tmp_path, data, *args), *needles)
    assert not (tmp_path / "pfgen").exists()  # no n-gram table was built


def test_leaderboard_bootstrap_negative(tmp_path: Path, data: Path) -> None:
    write_trials(tmp_path / "runs" / "a" / "trials.jsonl", rows(3))
    code, out = pfgen(
        "leaderboard", str(tmp_path / "runs"), "--data-dir", str(data),
        "--cache-dir", str(tmp_path), "--bootstrap", "-5",
    )  # fmt: skip
    assert_one_line(code, out, "--bootstrap", "-5")


def test_cache_dir_that_is_a_file(tmp_path: Path, data: Path) -> None:
    cache = tmp_path / "cache-file"
    cache.write_text("x")
    path = write_trials(tmp_path / "t.jsonl", rows(2))
    code, out = pfgen("score", str(path), "--data-dir", str(data), "--cache-dir", str(cache))
    assert_one_line(code, out, "cache-file")


def test_cache_dir_from_the_environment_that_is_a_file(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache-file"
    cache.write_text("x")
    monkeypatch.setenv("HAKARI_CACHE_DIR", str(cache))
    path = write_trials(tmp_path / "t.jsonl", rows(2))
    assert_one_line(*pfgen("score", str(path), "--data-dir", str(data)), "HAKARI_CACHE_DIR")


def test_partial_question_set_is_refused(tmp_path: Path, data: Path) -> None:
    """A file answering 1 of the 2 questions printed a headline score with a CI."""
    path = write_trials(tmp_path / "t.jsonl", rows(3, questions=(TOKYO,)))
    code, out = pfgen("score", str(path), "--data-dir", str(data), "--cache-dir", str(tmp_path))
    assert_one_line(code, out, "t.jsonl", "1 of the 2 questions", "--allow-partial")


def test_partial_score_is_labelled_everywhere(tmp_path: Path, data: Path) -> None:
    path = write_trials(tmp_path / "runs" / "part" / "trials.jsonl", rows(3, questions=(TOKYO,)))
    out_json = tmp_path / "s.json"
    result = runner.invoke(
        app,
        ["pfgen", "score", str(path), "--data-dir", str(data), "--cache-dir", str(tmp_path),
         "--json", str(out_json), "--allow-partial"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "partial: 1 of 2 questions" in result.output
    summary = json.loads(out_json.read_text(encoding="utf-8"))
    assert summary["partial"] == {"questions_answered": 1, "questions_total": 2}
    board = runner.invoke(
        app,
        ["pfgen", "leaderboard", str(tmp_path / "runs"), "--data-dir", str(data),
         "--cache-dir", str(tmp_path), "--allow-partial", "--html", str(tmp_path / "b.html")],
    )  # fmt: skip
    assert board.exit_code == 0, board.output
    assert "partial 1/2" in board.output
    assert "partial 1/2" in (tmp_path / "b.html").read_text(encoding="utf-8")
    refused = pfgen(
        "leaderboard", str(tmp_path / "runs"), "--data-dir", str(data), "--cache-dir", str(tmp_path)
    )
    assert_one_line(*refused, "--allow-partial")


def test_complete_score_is_not_labelled(tmp_path: Path, data: Path) -> None:
    out_json = tmp_path / "s.json"
    code, out = score(tmp_path, data, "--json", str(out_json))
    assert code == 0, out
    assert "partial" not in out
    assert json.loads(out_json.read_text(encoding="utf-8"))["partial"] is None


def _answers(tmp_path: Path) -> Path:
    return write_trials(tmp_path / "answers.jsonl", rows(4))


BUILD_CASES = {
    "k-zero": (["--k", "0"], ["--k", "0"]),
    "pool-zero": (["--pool", "0"], ["--pool", "0"]),
    "pool-below-k": (["--pool", "5", "--k", "10"], ["--pool", "--k"]),
    "target-length-zero": (["--target-length", "0"], ["--target-length"]),
}


@pytest.mark.parametrize("case", sorted(BUILD_CASES))
def test_build_reference_options(tmp_path: Path, data: Path, case: str) -> None:
    args, needles = BUILD_CASES[case]
    code, out = pfgen(
        "build-reference", str(_answers(tmp_path)), "--data-dir", str(data),
        "--output-dir", str(tmp_path / "new"), *args,
    )  # fmt: skip
    assert_one_line(code, out, *needles)
    assert not (tmp_path / "new").exists()


def test_build_reference_output_dir_that_is_a_file(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hakari.pfgen.reference_build as reference_build

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the reference set was built before the output was checked")

    monkeypatch.setattr(reference_build, "build_reference_set", no_work)
    target = tmp_path / "a-file"
    target.write_text("mine")
    code, out = pfgen(
        "build-reference", str(_answers(tmp_path)), "--data-dir", str(data),
        "--output-dir", str(target), "--k", "1", "--pool", "2",
    )  # fmt: skip
    assert_one_line(code, out, "--output-dir", "a-file", "not a folder")
    assert target.read_text() == "mine"


GENERATE_CASES = {
    # 2 examples in the file, one is the question itself: 1 is the most there can be
    "num-examples-more-than-the-pool": (["--num-examples", "1000"], ["--num-examples", "1"]),
    "num-trials-beyond-memory": (
        ["--num-trials", "1000000000", "--num-examples", "1"],
        ["--num-trials", "memory"],
    ),
}


@pytest.mark.parametrize("case", sorted(GENERATE_CASES))
def test_generate_options_before_the_model_loads(
    tmp_path: Path,
    data: Path,
    no_model_loads: list[str],
    memory_available: Callable[[int], None],
    case: str,
) -> None:
    memory_available(256 << 20)
    args, needles = GENERATE_CASES[case]
    code, out = pfgen(
        "generate", "--model", "smollm2-135m", "--data-dir", str(data),
        "--cache-dir", str(tmp_path / "c"), "--output-dir", str(tmp_path / "out"), *args,
    )  # fmt: skip
    assert_one_line(code, out, *needles)
    assert not no_model_loads


def test_fetch_data_from_a_missing_local_archive(tmp_path: Path) -> None:
    missing = tmp_path / "missing.tar.gz"
    code, out = pfgen("fetch-data", "--url", str(missing), "--cache-dir", str(tmp_path / "c"))
    assert_one_line(code, out, "missing.tar.gz", "--url")


# --- issue 17 §1: keyword and NG regexes run in linear time --------------------

EVIL = "a" * 46 + "!"  # with (a+)+$, Python's re backtracks for ever


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["pfgen", *args])
    return result.exit_code, result.output


def _data_dir(tmp_path: Path, rule: dict) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    question = {
        "question_id": "Q01",
        "question": "富士山の高さは？",
        "keywords": [rule],
        "answers": {"A": ["3776メートルです。"]},
    }
    (data / "Q01.json").write_text(json.dumps(question, ensure_ascii=False), encoding="utf-8")
    return data


def test_score_refuses_a_keyword_regex_the_matcher_cannot_take(tmp_path: Path) -> None:
    """Checked when the question files are read (the tables of one question are tiny)."""
    data = _data_dir(tmp_path, {"t": "(?<=高さ)3776"})
    trials = tmp_path / "trials.jsonl"
    trials.write_text(json.dumps({"question": "富士山の高さは？", "answer": "3776"}) + "\n")
    cache = str(tmp_path / "cache")
    code, out = _invoke("score", str(trials), "--data-dir", str(data), "--cache-dir", cache)
    assert_one_line(code, out, "Q01.json", "keywords", "look-behind")


def test_keyword_rules_run_in_linear_time() -> None:
    """A rule `(a+)+$` against an answer of 46 `a`s and `!` (the reference scorer's
    window is 200 characters: still 2^46 paths for Python's re)."""
    value, failed = within_deadline(lambda: score_helpfulness(EVIL, [{"t": "(a+)+$"}]))
    assert value == 0.0 and failed[0][0] == "(a+)+$"


def test_build_reference_refuses_an_ng_regex_the_matcher_cannot_take(tmp_path: Path) -> None:
    data = _data_dir(tmp_path, {"t": "3776"})
    ng = tmp_path / "ng.json"
    ng.write_text(json.dumps({"*": ["(?!x)y"]}), encoding="utf-8")
    trials = tmp_path / "trials.jsonl"
    trials.write_text(json.dumps({"question": "富士山の高さは？", "answer": "3776"}) + "\n")
    code, out = _invoke(
        "build-reference",
        str(trials),
        "--data-dir",
        str(data),
        "--output-dir",
        str(tmp_path / "out"),
        "--ng-rules",
        str(ng),
    )
    assert_one_line(code, out, "ng.json", "look-ahead")


def test_ng_rules_run_in_linear_time() -> None:
    kept = within_deadline(lambda: drop_ng([EVIL, "ok"], ["(a+)+$", "ok$"]))
    assert kept == [EVIL]


# --- issue 27 §7: left from round two -------------------------------------------------


def test_copied_trial_rows_are_refused(tmp_path: Path, data: Path) -> None:
    """The file concatenated with part of itself was scored, each copy counted again."""
    good = rows(3)
    path = write_trials(tmp_path / "t.jsonl", good + good[:2])
    code, out = pfgen("score", str(path), "--data-dir", str(data), "--cache-dir", str(tmp_path))
    assert_one_line(code, out, "t.jsonl", "line 7", "line 1", "trial")


def test_json_into_a_missing_folder_outside_the_working_folder(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--json /nonexistent-dir/x.json` made /nonexistent-dir."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    typo = tmp_path / "nonexistent-dir" / "x.json"
    code, out = score(tmp_path, data, "--json", str(typo))
    assert_one_line(code, out, "--json", "nonexistent-dir", "does not exist")
    assert not typo.parent.exists()
    code, out = score(tmp_path, data, "--json", "made/here/x.json")  # inside the working folder
    assert code == 0, out
    assert (work / "made" / "here" / "x.json").is_file()
