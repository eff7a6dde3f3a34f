"""Hostile input to `hakari run` (and `pfgen score`): each case ends with exit code 2 and
one line naming the file, row, template, field or option, before any model loads.

`no_model_loads` replaces the model loader with one that fails the test if called."""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hakari.backends.base import GenerationRequest
from hakari.cli import app
from hakari.errors import HakariInputError
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.deadline import within_deadline
from tests.helpers.http_doubles import Reply, StubServer, completion
from tests.helpers.tasks import GOOD, mutate

runner = CliRunner()


def write(tmp_path: Path, task: dict, rows: list[dict] | bytes, name: str = "data.jsonl") -> Path:
    task = json.loads(json.dumps(task))
    task["data"] = {"splits": {"validation": {"file": name, "format": name.split(".")[-1]}}}
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task, allow_unicode=True), encoding="utf-8")
    data = rows if isinstance(rows, bytes) else "".join(json.dumps(r) + "\n" for r in rows).encode()
    (tmp_path / name).write_bytes(data)
    return path


def good_rows(n: int) -> list[dict]:
    return [{"question": f"q{i}?", "label": "yes" if i % 2 else "no"} for i in range(n)]


def rows_with(n: int, at: int, row: dict) -> list[dict]:
    rows = good_rows(n)
    rows[at] = row
    return rows


DATA_CASES = {
    # a field a template reads, missing in a row after the first 50 (the old sample)
    "field-missing-late-row": (
        rows_with(80, 70, {"label": "yes"}),
        ["data.jsonl", "row 70", "{question}", "template 0-0"],
    ),
    "field-missing-second-row": (
        rows_with(3, 1, {"quest": "x", "label": "no"}),
        ["row 1", "{question}", "quest"],
    ),
    "field-null": (rows_with(5, 3, {"question": None, "label": "no"}), ["row 3", "null"]),
    "target-missing": (rows_with(5, 4, {"question": "x"}), ["row 4", "target"]),
    "gold-not-a-label-late": (
        rows_with(90, 60, {"question": "x", "label": "maybe"}),
        ["row 60", "'maybe'", "labels"],
    ),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_every_used_row_is_checked(tmp_path: Path, no_model_loads: list[str], case: str) -> None:
    rows, needles = DATA_CASES[case]
    path = write(tmp_path, GOOD, rows)
    assert_one_line(*invoke("--tasks", str(path)), *needles)
    assert not no_model_loads


def test_rows_past_limit_are_not_used(tmp_path: Path, no_model_loads: list[str]) -> None:
    """--limit 5: a bad row 70 is never evaluated, so it is no error (the model loads)."""
    path = write(tmp_path, GOOD, rows_with(80, 70, {"label": "yes"}))
    result = runner.invoke(app, ["run", "--tasks", str(path), "--limit", "5", "--no-cache"])
    assert no_model_loads == ["smollm2-135m"], result.output


def test_number_gold_that_is_not_a_number(tmp_path: Path, no_model_loads: list[str]) -> None:
    task = mutate(answer_type="number", labels=None, metrics=["pearson"])
    task["fallback"] = {"kind": "number", "value": 0}
    for t in task["templates"]:
        t.pop("answers")
    rows = [{"question": "a", "label": 1.5}, {"question": "b", "label": "two"}]
    path = write(tmp_path, task, rows)
    assert_one_line(*invoke("--tasks", str(path)), "row 1", "'two'", "not a number")


NOT_UTF8 = "question,label\nq1,yes\nq2 caf\xe9,no\n".encode("latin-1")


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "json"])
def test_data_file_not_utf8(tmp_path: Path, no_model_loads: list[str], fmt: str) -> None:
    body = {
        "csv": NOT_UTF8,
        "jsonl": b'{"question": "a", "label": "yes"}\n{"question": "caf\xe9", "label": "no"}\n',
        "json": b'[{"question": "caf\xe9", "label": "no"}]',
    }[fmt]
    path = write(tmp_path, GOOD, body, name=f"data.{fmt}")
    code, out = invoke("--tasks", str(path))
    line = 3 if fmt == "csv" else (2 if fmt == "jsonl" else 1)
    assert_one_line(code, out, f"data.{fmt}", "not UTF-8", f"line {line}", "0xe9")


def test_csv_with_a_short_row_and_a_bom(tmp_path: Path, no_model_loads: list[str]) -> None:
    body = "\ufeffquestion,label\nq1,yes\nq2\n".encode()
    path = write(tmp_path, GOOD, body, name="data.csv")
    assert_one_line(*invoke("--tasks", str(path)), "data.csv", "line 3", "fewer values")


def test_task_file_not_utf8(tmp_path: Path, no_model_loads: list[str]) -> None:
    path = write(tmp_path, GOOD, good_rows(2))
    path.write_bytes(path.read_bytes().replace(b"Q: ", b"Q\xff: "))
    assert_one_line(*invoke("--tasks", str(path)), "task.yaml", "not UTF-8", "0xff")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--alpha", "-1"),
        ("--alpha", "nan"),
        ("--alpha", "inf"),
        ("--n-boot", "-5"),
        ("--batch-size", "0"),
    ],
)
def test_bad_numbers(tmp_path: Path, no_model_loads: list[str], option: str, value: str) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    code, out = invoke("--tasks", str(path), option, value)
    assert_one_line(code, out, option)


# Serving options a model run used to start with (found by the engine, or never).
SERVING_CASES = {
    "request-timeout-nan": (["--request-timeout", "nan"], ["--request-timeout", "nan"]),
    "request-timeout-zero": (["--request-timeout", "0"], ["--request-timeout"]),
    "gpu-memory-utilization-7": (["--gpu-memory-utilization", "7"], ["--gpu-memory-utilization"]),
    "gpu-memory-utilization-nan": (
        ["--gpu-memory-utilization", "nan"],
        ["--gpu-memory-utilization"],
    ),
    "max-model-len-zero": (["--max-model-len", "0"], ["--max-model-len"]),
}


@pytest.mark.parametrize("case", sorted(SERVING_CASES))
def test_serving_options(tmp_path: Path, no_model_loads: list[str], case: str) -> None:
    args, needles = SERVING_CASES[case]
    path = write(tmp_path, GOOD, good_rows(4))
    assert_one_line(*invoke("--tasks", str(path), *args), *needles)
    assert not no_model_loads


def test_n_boot_beyond_memory_before_any_generation(
    tmp_path: Path, no_model_loads: list[str], memory_available: Callable[[int], None]
) -> None:
    """--n-boot 1000000000: every generation was made, then a MemoryError and nothing
    was published."""
    path = write(tmp_path, GOOD, good_rows(4))
    code, out = invoke("--tasks", str(path), "--n-boot", "1000000000")
    assert_one_line(code, out, "--n-boot", "1,000,000,000", "bound")  # past the stated bound
    memory_available(1 << 20)  # within the bound, beyond this machine's memory
    code, out = invoke("--tasks", str(path), "--n-boot", "1000000")
    assert_one_line(code, out, "--n-boot", "memory")
    assert not no_model_loads


def test_evaluate_checks_serving_options_too() -> None:
    from hakari.backends.serving import ServingOptions
    from hakari.errors import HakariInputError
    from hakari.runner import evaluate

    with pytest.raises(HakariInputError, match="--request-timeout"):
        evaluate(
            models=["fake:x"],
            tasks=["demo_sentiment_en"],
            serving=ServingOptions(request_timeout=math.nan),
            use_cache=False,
        )


@pytest.mark.parametrize(
    "prompt", ["Q: {question:>2000000000}", "Q: {question!r}", "Q: {question:{question}}"]
)
def test_prompt_placeholder_with_a_format_spec(
    tmp_path: Path, no_model_loads: list[str], prompt: str
) -> None:
    """`{text:>2000000000}` passed the checks and the model loaded."""
    task = mutate(templates__0__prompt=prompt)
    path = write(tmp_path, task, good_rows(4))
    assert_one_line(*invoke("--tasks", str(path)), "task.yaml", "template 0-0", "{question")
    assert not no_model_loads


def test_alpha_zero_is_fine() -> None:
    from hakari.runner.preflight import check_options
    from hakari.runner.settings import EvalOptions

    check_options(EvalOptions.of(alpha=0.0))
    assert not math.isnan(EvalOptions().plan.alpha)


def test_output_that_cannot_be_created(tmp_path: Path, no_model_loads: list[str]) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, out = invoke("--tasks", str(path), "--output", str(blocker / "run"))
    assert_one_line(code, out, "--output", "a-file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_output_that_cannot_be_written(tmp_path: Path, no_model_loads: list[str]) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        code, out = invoke("--tasks", str(path), "--output", str(folder))
    finally:
        folder.chmod(0o700)
    assert_one_line(code, out, "--output", "ro")


def test_corrupt_cache_says_how_to_recover(tmp_path: Path, no_model_loads: list[str]) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "responses.sqlite3").write_bytes(b"this is not a database" * 100)
    code, out = invoke("--tasks", str(path), cache=cache)
    assert_one_line(code, out, "responses.sqlite3", "--no-cache", "--cache-dir")


def test_cache_dir_that_is_a_file(tmp_path: Path, no_model_loads: list[str]) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    cache = tmp_path / "cache"
    cache.write_text("x")
    assert_one_line(*invoke("--tasks", str(path), cache=cache), "--no-cache")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only files")
def test_read_only_cache(tmp_path: Path, no_model_loads: list[str]) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    cache = tmp_path / "cache"
    cache.mkdir()
    sqlite3.connect(cache / "responses.sqlite3").close()
    (cache / "responses.sqlite3").chmod(0o444)
    cache.chmod(0o555)
    try:
        assert_one_line(*invoke("--tasks", str(path), cache=cache), "--no-cache")
    finally:
        cache.chmod(0o755)


def test_read_only_cache_database_file(tmp_path: Path) -> None:
    """A database opened read-only (as a read-only mount would give) is found on open."""
    from hakari.backends.cache import ResponseCache
    from hakari.errors import CacheError

    db = tmp_path / "responses.sqlite3"
    ResponseCache(db).close()

    class ReadOnly(ResponseCache):
        def __init__(self, path: Path) -> None:
            real_connect = sqlite3.connect

            def connect(p: Path, **kw: object) -> sqlite3.Connection:
                kw["uri"] = True
                return real_connect(f"file:{p}?mode=ro", **kw)  # type: ignore[arg-type]

            sqlite3.connect, saved = connect, sqlite3.connect  # type: ignore[assignment]
            try:
                super().__init__(path)
            finally:
                sqlite3.connect = saved  # type: ignore[assignment]

    with pytest.raises(CacheError, match="--no-cache"):
        ReadOnly(db)


@pytest.mark.parametrize(
    ("models", "needles"),
    [
        (["smollm2-135m", "smollm2-13m"], ["'smollm2-13m'", "unknown model"]),
        (["smollm2-135m", "hf:/no/such/folder"], ["hf:/no/such/folder", "neither"]),
        (["smollm2-135m", "smollm2-135m"], ["given twice"]),
        (["hf:owner/name@"], ["hf:<local folder or hub id>"]),
    ],
    ids=["typo-second", "missing-folder", "duplicate", "empty-revision"],
)
def test_every_model_spec_resolved_first(
    tmp_path: Path, no_model_loads: list[str], models: list[str], needles: list[str]
) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    args = [a for m in models for a in ("--model", m)]
    assert_one_line(*invoke("--tasks", str(path), *args), "--model", *needles)
    assert not no_model_loads


def test_model_folder_without_config(tmp_path: Path, no_model_loads: list[str]) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    (tmp_path / "m").mkdir()
    code, out = invoke("--tasks", str(path), "--model", f"hf:{tmp_path / 'm'}")
    assert_one_line(code, out, "config.json")


@pytest.mark.parametrize(("option", "value"), [("--dtype", "float8"), ("--device", "tpu")])
def test_bad_dtype_or_device(
    tmp_path: Path, no_model_loads: list[str], option: str, value: str
) -> None:
    path = write(tmp_path, GOOD, good_rows(4))
    assert_one_line(*invoke("--tasks", str(path), option, value), value)


@pytest.mark.parametrize(
    ("regex", "answers", "decoding", "needles"),
    [
        ("[01]", {"0": "yes", "2": "no"}, "greedy", ["answer '2'", "fallback"]),
        ("[AB]", {"A": "yes", "AB": "no"}, "greedy", ["answer 'AB'", "the output 'AB' is read"]),
        ("(yes|no)", {"yes": "yes", "No": "no"}, "constrained", ["answer 'No'"]),
    ],
)
def test_regex_that_cannot_produce_an_answer(
    tmp_path: Path,
    no_model_loads: list[str],
    regex: str,
    answers: dict,
    decoding: str,
    needles: list[str],
) -> None:
    task = mutate(templates__1__regex=regex, templates__1__answers=answers)
    path = write(tmp_path, task, good_rows(4))
    code, out = invoke("--tasks", str(path), "--decoding", decoding)
    assert_one_line(code, out, "template 0-1", "field answers", *needles)


def test_per_instance_answer_key_checked_on_rendered_row(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    task = mutate(
        templates__1__regex="[0-9]+",
        templates__1__answers={"{{yes_word}}": "yes", "0": "no"},
    )
    rows = [{"question": "q", "label": "yes", "yes_word": "oui"}]
    path = write(tmp_path, task, rows)
    assert_one_line(*invoke("--tasks", str(path)), "row 0", "answer 'oui'")


def test_two_tasks_with_one_name(tmp_path: Path, no_model_loads: list[str]) -> None:
    a = write(tmp_path / "a" if (tmp_path / "a").mkdir() is None else tmp_path, GOOD, good_rows(2))
    b_dir = tmp_path / "b"
    b_dir.mkdir()
    b = write(b_dir, GOOD, good_rows(2))
    assert_one_line(*invoke("--tasks", f"{a},{b}"), "two tasks are named 'tiny'")


def test_unknown_task_with_markup_characters(no_model_loads: list[str]) -> None:
    code, out = invoke("--tasks", "foo[/bar]")
    assert_one_line(code, out, "'foo[/bar]'", "--tasks")


# --- pfgen score: input files are checked before the n-gram tables are built ---------


@pytest.fixture
def no_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("n-gram tables were built before the input was checked")

    monkeypatch.setattr("hakari.pfgen.tables.open_tables", refuse)


def _pfgen(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["pfgen", "score", *args])
    return result.exit_code, result.output


def _trials_xz(tmp_path: Path) -> Path:
    import lzma

    line = json.dumps({"question": "q", "answer": "a", "timestamp": "t"}) + "\n"
    path = tmp_path / "trials.jsonl.xz"
    path.write_bytes(lzma.compress((line * 500).encode()))
    return path


def test_pfgen_truncated_xz(tmp_path: Path, no_tables: None) -> None:
    path = _trials_xz(tmp_path)
    path.write_bytes(path.read_bytes()[:-40])
    code, out = _pfgen(str(path), "--data-dir", str(tmp_path))
    assert_one_line(code, out, "trials.jsonl.xz", "truncated or damaged")


def test_pfgen_bad_json_line_and_unwritable_json(tmp_path: Path, no_tables: None) -> None:
    path = tmp_path / "trials.jsonl"
    path.write_text('{"question": "q", "answer": "a"}\n{"question": \n', encoding="utf-8")
    assert_one_line(*_pfgen(str(path), "--data-dir", str(tmp_path)), "line 2", "not valid JSON")
    good = _trials_xz(tmp_path)
    (tmp_path / "a-file").write_text("x")  # missing folders are made; a file is no folder
    out_json = tmp_path / "a-file" / "out.json"
    code, out = _pfgen(str(good), "--data-dir", str(tmp_path), "--json", str(out_json))
    assert_one_line(code, out, "--json", "a-file is not a folder")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--tasks", ","], "--tasks"),
        (["--templates", ","], "--templates"),
        (["--decoding", ","], "--decoding"),
        (["--decoding", "beam"], "--decoding"),
        (["--limit", "0"], "--limit"),
    ],
)
def test_empty_or_bad_selections(
    tmp_path: Path, no_model_loads: list[str], args: list[str], needle: str
) -> None:
    path = write(tmp_path, GOOD, good_rows(2))
    assert_one_line(*invoke("--tasks", str(path), *args), needle)


@pytest.mark.parametrize("prompt", ["Q: {0}", "Q: {question[0]}", "Q: {question.upper}"])
def test_placeholder_that_is_not_a_field_name(
    tmp_path: Path, no_model_loads: list[str], prompt: str
) -> None:
    path = write(tmp_path, mutate(templates__0__prompt=prompt), good_rows(2))
    assert_one_line(*invoke("--tasks", str(path)), "template 0-0", "not a plain field name")


def test_export_to_an_unwritable_place(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = runner.invoke(
        app,
        [
            "tasks",
            "export",
            "demo_sentiment_en",
            "--split",
            "validation",
            "--output",
            str(blocker / "out.jsonl"),
        ],
    )
    assert_one_line(result.exit_code, result.output, "--output", "a-file")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--temperature", "nan"], "--temperature"),
        (["--temperature", "-1"], "--temperature"),
        (["--model", "vllm:owner/model", "--temperature", "2.5"], "--temperature"),
        (["--top-p", "0"], "--top-p"),
        (["--top-k", "-2"], "--top-k"),
        (["--output-dir", "BLOCKED/x"], "--output-dir"),
    ],
)
def test_pfgen_generate_options(
    tmp_path: Path, no_model_loads: list[str], no_tables: None, args: list[str], needle: str
) -> None:
    (tmp_path / "BLOCKED").write_text("a file")
    args = [a.replace("BLOCKED", str(tmp_path / "BLOCKED")) for a in args]
    result = CliRunner().invoke(
        app, ["pfgen", "generate", "--model", "smollm2-135m", "--data-dir", str(tmp_path), *args]
    )
    assert_one_line(result.exit_code, result.output, needle)


# Values click cannot parse, in every command group: one `error:` line naming the option
# and the command's help, exit 2 (not click's usage box). Values of the right type out of
# range are the validation layer's (hakari._util.checks): one line naming the option.
TYPED_OPTION_CASES = {
    "run-alpha-word": (["run", "--alpha", "abc"], "--alpha"),
    "run-limit-word": (["run", "--limit", "ten"], "--limit"),
    "run-prompts-per-request-word": (
        ["run", "--prompts-per-request", "x"],
        "--prompts-per-request",
    ),
    "run-markup-value": (["run", "--alpha", "[bold]x[/bold]"], "--alpha"),
    "run-unknown-option": (["run", "--alpah", "1"], "--alpah"),
    "meta-confidence-word": (["meta", "x.jsonl", "--confidence", "high"], "--confidence"),
    "report-missing-input": (["report"], "inputs"),
    "pfgen-bootstrap-word": (["pfgen", "score", "x", "--bootstrap", "many"], "--bootstrap"),
    "finetune-epochs-word": (["finetune", "--epochs", "one"], "--epochs"),
    "tasks-show-missing-name": (["tasks", "show"], "name"),
}


@pytest.mark.parametrize("case", sorted(TYPED_OPTION_CASES))
def test_bad_option_values_are_one_line(no_model_loads: list[str], case: str) -> None:
    args, needle = TYPED_OPTION_CASES[case]
    result = runner.invoke(app, args)
    assert_one_line(result.exit_code, result.output, needle, "--help")
    assert "Usage:" not in result.output and "╭" not in result.output


def test_help_is_still_help() -> None:
    for args in (["run", "--help"], ["tasks"], []):
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and "Usage" in result.output, (args, result.output)


def test_chat_format_on_a_model_without_a_template_is_found_before_loading(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    folder = tmp_path / "base-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 512}))
    for model in ("gemma3-270m", f"hf:{folder}"):
        code, out = invoke("--model", "smollm2-135m", "--model", model, "--prompt-format", "chat")
        assert_one_line(code, out, "--prompt-format", "no chat template", model)
    assert no_model_loads == []


# --- issue 17 §1: template regexes meet untrusted text in linear time ----------------

EVIL = "a" * 46 + "!"  # with (a+)+$, Python's re backtracks for ever


@pytest.mark.parametrize(
    ("regex", "needles"),
    [
        ("(?<=x)[01]", ["look-behind", "linear time"]),
        (r"\b[01]\b", ["\\b is ASCII-only"]),
        ("([01])\\1?", ["back-reference"]),
    ],
)
def test_regex_the_linear_matcher_cannot_take(
    tmp_path: Path, no_model_loads: list[str], regex: str, needles: list[str]
) -> None:
    """Refused at load for every decoding (was: accepted for greedy, matched by re)."""
    path = write(tmp_path, mutate(templates__1__regex=regex), good_rows(4))
    code, out = invoke("--tasks", str(path), "--decoding", "greedy")
    assert_one_line(code, out, "task.yaml", "template 0-1", "regex", *needles)


def test_reachability_check_of_a_catastrophic_regex(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """The preflight reads every answer key as an output: `(a+)+$` on 46 `a`s and `!`
    used to hang there, before any model loaded."""
    task = mutate(templates__1__regex="(a+)+$", templates__1__answers={"a": "yes", EVIL: "no"})
    path = write(tmp_path, task, good_rows(4))
    code, out = within_deadline(lambda: invoke("--tasks", str(path)))
    assert_one_line(code, out, "template 0-1", "field answers", f"answer {EVIL!r}")


def test_catastrophic_regex_against_model_output(tmp_path: Path) -> None:
    """A model that answers 46 `a`s and `!` to a template regex `(a+)+$`: extraction and
    the constrained-decoding check return at once (both used to hang)."""
    task = mutate(templates__1__regex="(a+)+$", templates__1__answers={"a": "yes", "aa": "no"})
    path = write(tmp_path, task, good_rows(2))
    out_dir = tmp_path / "run"
    args = ["--tasks", str(path), "--model", f"fake:{EVIL}", "--output", str(out_dir)]
    code, out = within_deadline(lambda: invoke(*args, "--decoding", "greedy,constrained"))
    assert code == 0, out
    samples = [json.loads(line) for line in (out_dir / "samples.jsonl").open(encoding="utf-8")]
    assert {s["fallback"] for s in samples if s["template_id"] == "0-1"} == {True}


def test_filled_regex_too_big_for_the_matcher(tmp_path: Path, no_model_loads: list[str]) -> None:
    """A `{{field}}` value fills the regex per row; one that makes it too big for RE2 is
    named with its row before any model loads (a new limit, not a former failure)."""
    task = mutate(
        templates__1__regex="({{question}}|0){1,1000}",
        templates__1__answers={"{{question}}": "yes", "0": "no"},
    )
    rows = [*good_rows(3), {"question": "long " * 2000, "label": "no"}]
    code, out = invoke("--tasks", str(write(tmp_path, task, rows)))
    assert_one_line(code, out, "template 0-1", "row 3", "regex")


# --- issue 17 §2: no credential in anything hakari prints or writes ------------------

SECRET_KEY = "sk-reflected-0123456789abcdef"


def test_url_password_is_not_printed(tmp_path: Path, no_model_loads: list[str]) -> None:
    code, out = invoke("--model", "openai:m@http://alice:hunter2pass@127.0.0.1:9/v1")
    assert_one_line(code, out, "http://***@127.0.0.1:9/v1", "HAKARI_API_KEY")
    assert "hunter2pass" not in out and "alice" not in out


def test_query_key_echoed_in_a_404_is_not_printed(
    tmp_path: Path, servers: list[StubServer]
) -> None:
    server = StubServer(lambda seen: Reply(404, {"detail": "Not Found"}), models_too=True)
    servers.append(server)
    code, out = invoke("--model", f"openai:m@{server.url}?api_key=s3cretQueryValue")
    assert_one_line(code, out, "not found", "api_key=***")
    assert "s3cretQueryValue" not in out


def test_reflected_key_is_redacted_from_samples_and_cache_and_counted(
    tmp_path: Path, servers: list[StubServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that puts the request's Authorization header into its completion: the
    key's text is replaced before samples.jsonl and the cache are written, and counted in
    results.json (`redacted_secrets`), on the first run and on the cached rerun."""
    monkeypatch.setenv("HAKARI_API_KEY", SECRET_KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = StubServer(lambda seen: Reply(body=completion(" " + seen.headers["authorization"])))
    servers.append(server)
    cache = tmp_path / "cache"
    args = ["--model", f"openai:stub-model@{server.url}", "--tasks", "demo_sentiment_en"]
    args += ["--limit", "2", "--decoding", "greedy", "--prompt-format", "completion"]
    for out_dir in (tmp_path / "first", tmp_path / "again"):
        code, out = invoke(*args, "--output", str(out_dir), cache=cache)
        assert code == 0, out
        results = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
        (model,) = results["models"].values()
        greedy = model["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
        samples = (out_dir / "samples.jsonl").read_text(encoding="utf-8")
        assert greedy["redacted_secrets"] == samples.count("Bearer ***") > 0
        assert SECRET_KEY not in samples and SECRET_KEY not in out
    assert greedy["cached"] > 0 and greedy["generated"] == 0  # the rerun read the cache
    assert any(seen.headers.get("authorization") == f"Bearer {SECRET_KEY}" for seen in server.seen)
    for path in [*cache.rglob("*"), *tmp_path.rglob("*.json*")]:
        if path.is_file():
            assert SECRET_KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("placeholder", ["-", "EMPTY"])
def test_a_placeholder_key_leaves_the_recorded_command_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, placeholder: str
) -> None:
    """HAKARI_API_KEY=- used to star every '-' of config.argv."""
    monkeypatch.setenv("HAKARI_API_KEY", placeholder)
    args = ["--model", "fake:A", "--tasks", "demo_sentiment_en", "--limit", "2"]
    args += ["--decoding", "greedy", "--output", str(tmp_path / "run")]
    code, out = invoke(*args)
    assert code == 0, out
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert results["config"]["argv"] == ["hakari", "run", "--n-boot", "0", "--no-cache", *args]


# --- lost or overwritten output (issue 17 §3): the run folder, the cache, the disk ------

RUN_TASK = ["--tasks", "demo_sentiment_en", "--templates", "0-0,1-0", "--limit", "3"]


def _pair(folder: Path) -> tuple[dict, list[dict]]:
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    samples = [json.loads(line) for line in lines]
    assert results["n_samples"] == len(samples)
    return results, samples


def _assert_error_line(code: int, out: str, *needles: str) -> None:
    """After a run's progress lines: one `error:` line (no traceback) with the needles."""
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in out, out
    assert all(needle in errors[0] for needle in needles), out


def _fake_loader(
    monkeypatch: pytest.MonkeyPatch, responder: Callable[[str, GenerationRequest], str]
) -> list[str]:
    from hakari.backends.fake import FakeBackend

    loaded: list[str] = []

    def load(spec: str, **kwargs: object) -> FakeBackend:
        loaded.append(spec)
        return FakeBackend(lambda r: responder(spec, r), name=spec)

    monkeypatch.setattr("hakari.backends.registry.load_backend", load)
    return loaded


@pytest.mark.slow
def test_a_second_run_into_a_folder_in_use_is_refused(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """Two runs given the same --output: the second is one line (exit 2) before any model
    loads, and the first publishes its own pair."""
    from tests.helpers.outputs import RUN_ARGS, run_in_flight

    folder = tmp_path / "run"
    with run_in_flight(folder, tmp_path / "cache") as first:
        code, out = invoke(*RUN_ARGS, "--model", "fake:negative", "--output", str(folder))
        assert_one_line(code, out, "--output", str(folder), "another hakari command")
    assert first.returncode == 0, first.stderr
    results, samples = _pair(folder)
    assert list(results["models"]) == [next(iter(results["models"]))]
    assert {s["output"] for s in samples} == {"positive"}
    assert not no_model_loads


@pytest.mark.slow
def test_a_rerun_whose_second_model_fails_keeps_the_previous_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: a failed rerun leaves the previous pair untouched; the models that
    finished in the rerun are published beside it, in RUN/partial/."""

    def answer(spec: str, request: object) -> str:
        if spec == "fake:b" and broken:  # as a server that stops answering
            raise HakariInputError("gave up on a request after 8 attempts")
        return "positive"

    broken = False
    _fake_loader(monkeypatch, answer)
    folder = tmp_path / "run"
    args = [*RUN_TASK, "--model", "fake:a", "--model", "fake:b", "--output", str(folder)]
    code, out = invoke(*args)
    assert code == 0, out
    before = {name: (folder / name).read_bytes() for name in ("results.json", "samples.jsonl")}
    broken = True
    code, out = invoke(*args)
    assert code == 2 and "Traceback" not in out, out
    assert {name: (folder / name).read_bytes() for name in before} == before
    assert "untouched" in out and str(folder / "partial") in out, out
    results, samples = _pair(folder / "partial")
    assert list(results["models"]) == ["fake:a"] and "fake:b" in results["failed"]
    assert {s["model"] for s in samples} == {"fake:a"}
    assert sorted(p.name for p in folder.iterdir()) == ["partial", "results.json", "samples.jsonl"]


def test_a_folder_made_read_only_during_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every answer is cached; the end is one line that says so and how to publish them,
    and the same command, once the folder can be written, publishes without generating."""
    from tests.helpers.outputs import refuse_writes_in

    folder = tmp_path / "run"
    folder.mkdir()
    cache = tmp_path / "cache"
    with refuse_writes_in(folder, monkeypatch) as make_read_only:

        def answer(spec: str, request: object) -> str:
            make_read_only()
            return "positive"

        loaded = _fake_loader(monkeypatch, answer)
        code, out = invoke(*RUN_TASK, "--output", str(folder), cache=cache)
        _assert_error_line(code, out, str(folder), "cache", "same command")
    assert loaded and list(folder.iterdir()) == []
    code, out = invoke(*RUN_TASK, "--output", str(folder), cache=cache)
    assert code == 0, out
    results, _ = _pair(folder)
    decoding = results["models"]["smollm2-135m"]["tasks"]["demo_sentiment_en"]["decodings"]
    assert all(d["generated"] == 0 and d["cached"] > 0 for d in decoding.values())


def test_a_full_disk_at_publish_is_one_line_and_leaves_the_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    _fake_loader(monkeypatch, lambda spec, r: "positive")
    folder = tmp_path / "run"
    code, out = invoke(*RUN_TASK, "--output", str(folder))
    assert code == 0, out
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    code, out = invoke(*RUN_TASK, "--output", str(folder), "--alpha", "0.5")
    _assert_error_line(code, out, str(folder), "No space left on device")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # no temporary left


def test_a_lone_surrogate_in_an_answer_is_stored_and_counted(tmp_path: Path, servers: list) -> None:  # type: ignore[type-arg]
    """A server answer holding "\\ud800" (legal JSON): the run publishes, the answer is
    kept exactly (as a JSON escape), counted in results.json, and a rerun reads it back
    from the cache instead of failing again."""
    from tests.helpers.outputs import answering

    # `json.dumps` writes the lone surrogate as the legal JSON escape "\ud800"
    server = StubServer(answering("posi\ud800tive"))
    servers.append(server)
    folder, cache = tmp_path / "run", tmp_path / "cache"
    model = f"openai:stub-model@{server.url}"
    args = [*RUN_TASK, "--decoding", "greedy", "--model", model, "--output", str(folder)]
    for generated in (6, 0):
        code, out = invoke(*args, cache=cache)
        assert code == 0 and "Traceback" not in out, out
        results, samples = _pair(folder)
        decoding = results["models"][model]["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
        assert decoding["generated"] == generated and decoding["unencodable_answers"] == 6
        assert {s["output"] for s in samples} == {"posi\ud800tive"}
    raw = (folder / "samples.jsonl").read_bytes()
    raw.decode("utf-8")  # valid UTF-8 on disk
    assert b"posi\\ud800tive" in raw


@pytest.mark.slow
@pytest.mark.parametrize(
    "payload",
    ["{not json", '"a string"', '{"text": 7, "n_tokens": 1, "finish_reason": "stop"}',
     '{"text": "x", "n_tokens": "1", "finish_reason": "stop"}',
     '{"text": "x", "n_tokens": 1, "finish_reason": "bogus"}', '{"n_tokens": 1}'],
    ids=["bad-json", "not-object", "text-number", "count-string", "reason", "no-text"],
)  # fmt: skip
def test_a_bad_cached_row_is_regenerated_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: str
) -> None:
    _fake_loader(monkeypatch, lambda spec, r: "positive")
    folder, cache = tmp_path / "run", tmp_path / "cache"
    args = [*RUN_TASK, "--decoding", "greedy", "--output", str(folder)]
    assert invoke(*args, cache=cache)[0] == 0
    with sqlite3.connect(cache / "responses.sqlite3") as conn:
        key = conn.execute("SELECT key FROM responses LIMIT 1").fetchone()[0]
        conn.execute("UPDATE responses SET payload = ? WHERE key = ?", (payload, key))
    code, out = invoke(*args, cache=cache)
    assert code == 0 and "Traceback" not in out, out
    results, _ = _pair(folder)
    decoding = results["models"]["smollm2-135m"]["tasks"]["demo_sentiment_en"]["decodings"]
    assert decoding["greedy"]["generated"] == 1
    assert decoding["greedy"]["unreadable_cache_rows"] == 1
    assert invoke(*args, cache=cache)[0] == 0  # the bad row was replaced
    results, _ = _pair(folder)
    assert (
        results["models"]["smollm2-135m"]["tasks"]["demo_sentiment_en"]["decodings"]["greedy"][
            "generated"
        ]
        == 0
    )


# --- issue 27 §2: degenerate statistics are never published ----------------------------


@pytest.mark.parametrize("n_boot", ["1", "2", "39"])
def test_too_few_bootstrap_replicates_are_refused(
    tmp_path: Path, no_model_loads: list[str], n_boot: str
) -> None:
    """`--n-boot 1` or `2` gave zero-width "intervals" that excluded their own estimate."""
    path = write(tmp_path, GOOD, good_rows(4))
    code, out = invoke("--tasks", str(path), "--n-boot", n_boot)
    assert_one_line(code, out, "--n-boot", f"{n_boot} bootstrap replicates", "at least 40")
    assert not no_model_loads


def test_the_python_api_refuses_too_few_replicates_too() -> None:
    from hakari.aggregate import bootstrap
    from hakari.runner import evaluate

    with pytest.raises(HakariInputError, match="at least 40"):
        bootstrap({"0-0": ["a", "b"], "0-1": ["b", "b"]}, ["a", "b"], "accuracy", n_boot=2)
    with pytest.raises(HakariInputError, match="--n-boot"):
        evaluate(models=["fake:x"], tasks=["demo_sentiment_en"], n_boot=2, use_cache=False)


def test_a_budget_of_one_cell_is_refused(tmp_path: Path, no_model_loads: list[str]) -> None:
    """`--budget 1` (one cell of the grid) published a mean and intervals."""
    path = write(tmp_path, GOOD, good_rows(64))
    code, out = invoke("--tasks", str(path), "--budget", "1")
    assert_one_line(code, out, "--budget", "task.yaml")
    assert not no_model_loads


def test_a_template_that_never_ran_has_no_fallback_rate(tmp_path: Path) -> None:
    """A budgeted run's template with no cell showed "fallback 0.0%"."""
    from hakari.backends.fake import FakeBackend
    from hakari.reports.rows import table_rows
    from hakari.runner import evaluate

    path = write(tmp_path, GOOD, good_rows(8))
    results = evaluate(
        models=["m"], tasks=[str(path)], decodings=["greedy"], budget="4", n_boot=0,
        use_cache=False, backend_factory=lambda spec: FakeBackend(lambda r: "maybe"),
    )  # fmt: skip
    task = results.models["m"].tasks["tiny"]
    dec = task.decodings["greedy"]
    assert all(t.n > 0 for t in dec.templates.values())  # 4 cells: 2 for each template
    dec.templates["0-1"] = dec.templates["0-1"].model_copy(update={"n": 0})
    rows = {r[0]: r for r in table_rows(task, dec)}
    assert rows["0-1"][-2] == "not run" and rows["0-0"][-2] == "100.0%"


def test_a_decoding_no_task_can_run(tmp_path: Path, no_model_loads: list[str]) -> None:
    """loglik on text-answer tasks only: nothing would be scored, so the run is refused
    before any model loads (it ended in a traceback after loading every model)."""
    task = mutate(answer_type="number", labels=None, metrics=["pearson"])
    task["fallback"] = {"kind": "number", "value": 0}
    for t in task["templates"]:
        t.pop("answers")
    path = write(tmp_path, task, [{"question": "a", "label": 1.5}, {"question": "b", "label": 2}])
    code, out = invoke("--tasks", str(path), "--decoding", "loglik")
    assert_one_line(code, out, "--decoding", "loglik applies to label tasks only", "number")
    assert not no_model_loads
