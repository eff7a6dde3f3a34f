"""Hostile outputs of `hakari tasks`: `export` never writes over the task file or data
it reads, writes through a symbolic link and to standard output; `list --json` to a
full standard output is one `error:` line (exit 2), not a traceback.

Hostile input to `hakari tasks list|show|export`: a terminal that cannot show every
character still gets the output (non-ASCII escaped), never a traceback; bad task files
are one `error:` line naming the file and field (exit code 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import hakari
from hakari.cli import app
from hakari.errors import HakariInputError
from hakari.runner import preflight
from hakari.runner.settings import PlanOptions
from hakari.tasks.loader import load_task
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.deadline import within_deadline
from tests.helpers.outputs import hakari_process, open_full_stdout, stderr_lines, stdout_link
from tests.helpers.tasks import GOOD, mutate

runner = CliRunner()


def task_with_data(folder: Path) -> Path:
    task = json.loads(json.dumps(GOOD))
    task["data"] = {
        "splits": {"train": {"file": "train.jsonl", "format": "jsonl"}},
        "eval_split": "train",
    }
    path = folder / "bom.yaml"
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    rows = [{"question": f"q{i}", "label": "yes" if i % 2 else "no"} for i in range(4)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def export(task: Path, output: Path | str) -> tuple[int, str]:
    result = runner.invoke(app, ["tasks", "export", str(task), "--output", str(output)])
    return result.exit_code, result.output


def test_export_over_its_own_task_file_is_refused(tmp_path: Path) -> None:
    task = task_with_data(tmp_path)
    before = task.read_bytes()
    assert_one_line(*export(task, task), "--output", "bom.yaml", "input")
    assert task.read_bytes() == before


def test_export_over_the_tasks_data_file_is_refused(tmp_path: Path) -> None:
    task = task_with_data(tmp_path)
    data = tmp_path / "train.jsonl"
    before = data.read_bytes()
    assert_one_line(*export(task, data), "--output", "train.jsonl", "input")
    assert data.read_bytes() == before


def test_export_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    task = task_with_data(tmp_path)
    link = tmp_path / "latest.jsonl"
    link.symlink_to("exports/train-v1.jsonl")
    (tmp_path / "exports").mkdir()
    code, out = export(task, link)
    assert code == 0, out
    assert link.is_symlink()
    rows = (tmp_path / "exports" / "train-v1.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 8 and json.loads(rows[0])["task"] == "tiny"


@pytest.mark.slow
def test_export_to_standard_output_through_a_link(tmp_path: Path) -> None:
    task = task_with_data(tmp_path)
    link = stdout_link(tmp_path)
    result = hakari_process("tasks", "export", str(task), "--output", str(link))
    assert result.returncode == 0, result.stderr
    assert sum(line.startswith('{"task": "tiny"') for line in result.stdout.splitlines()) == 8
    assert link.is_symlink()


@pytest.mark.slow
def test_list_json_to_a_full_standard_output() -> None:
    with open_full_stdout() as full:
        result = hakari_process("tasks", "list", "--json", stdout=full)
    lines = stderr_lines(result)
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "No space left on device" in lines[0]


HAKARI_SRC = str(Path(hakari.__file__).resolve().parents[1])  # the code under test


def hakari_ascii(*args: str) -> subprocess.CompletedProcess[str]:
    """`hakari ARGS` in a process whose stdout and stderr are ASCII-only."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": HAKARI_SRC}
    return subprocess.run(
        [sys.executable, "-m", "hakari", *args],
        capture_output=True,
        text=True,
        encoding="ascii",
        errors="strict",
        env=env,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [["tasks", "show", "demo_sentiment_ja"], ["tasks", "list"]], ids=["show", "list"]
)
def test_an_ascii_terminal_gets_escaped_text(args: list[str]) -> None:
    done = hakari_ascii(*args)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "demo_sentiment_ja" in done.stdout
    if args[1] == "show":
        assert "\\u" in done.stdout  # the Japanese templates, escaped


@pytest.mark.slow
def test_an_ascii_terminal_gets_errors_as_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t\u00e9.yaml"
    path.write_text(yaml.safe_dump(mutate(name="Bad Name")), encoding="utf-8")
    done = hakari_ascii("tasks", "show", str(path))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "t\\xe9.yaml" in lines[0]


def test_a_prompt_with_a_format_spec_is_refused_when_shown(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(
        yaml.safe_dump(mutate(templates__0__prompt="Q: {question:>2000000000}")), "utf-8"
    )
    result = runner.invoke(app, ["tasks", "show", str(path)])
    assert_one_line(result.exit_code, result.output, "task.yaml", "{question:>2000000000}")


# --- issue 17 §1: template regexes in tasks export run in linear time ----------

runner = CliRunner()
EVIL = "a" * 46 + "!"  # with (a+)+$, Python's re backtracks for ever


def _text_task(tmp_path: Path, regex: str, gold: str) -> Path:
    task = {
        "name": "qa_hostile",
        "language": "en",
        "target": "answer",
        "answer_type": "text",
        "fallback": {"kind": "text"},
        "metrics": ["exact_match"],
        "templates": [{"id": "0-0", "prompt": "Q: {q}\nA:", "regex": regex}],
        "data": {
            "splits": {
                "validation": {"file": "data.jsonl"},
                "train": {"file": "data.jsonl"},
            }
        },
    }
    (tmp_path / "data.jsonl").write_text(json.dumps({"q": "x?", "answer": gold}) + "\n")
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    return path


def _invoke(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def test_export_target_check_of_a_catastrophic_regex(tmp_path: Path) -> None:
    """Every exported target must fullmatch its template's regex: `(a+)+$` against a gold
    of 46 `a`s and `!` used to hang there (issue 17 §1)."""
    path = _text_task(tmp_path, "(a+)+$", EVIL)
    args = ["tasks", "export", str(path), "--output", str(tmp_path / "out.jsonl")]
    code, out = within_deadline(lambda: _invoke(args))
    assert_one_line(code, out, "template 0-0", "regex", "cannot be written")


def test_export_refuses_a_regex_the_matcher_cannot_take(tmp_path: Path) -> None:
    path = _text_task(tmp_path, "(?<=Q)[a-z]+", "abc")
    args = ["tasks", "export", str(path), "--output", str(tmp_path / "out.jsonl")]
    assert_one_line(*_invoke(args), "task.yaml", "template 0-0", "look-behind")


# --- issue 27 §3: task files that load but mean something else --------------------


INLINE = [{"question": f"q{i}?", "label": "yes" if i % 2 else "no"} for i in range(6)]


def _inline(task: dict) -> dict:
    task = json.loads(json.dumps(task))
    task["data"] = {"instances": json.loads(json.dumps(INLINE))}
    return task


TASK_FILE_CASES = {
    # YAML keeps the last of two equal keys: the first `name` was silently dropped
    "duplicate-key": (yaml.safe_dump(_inline(GOOD)) + "name: other\n", ["'name'", "twice", "line"]),
    "fallback-kind-of-another-answer-type": (
        yaml.safe_dump(_inline(mutate(fallback={"kind": "number", "value": 1}))),
        ["fallback.kind", "'number'", "label"],
    ),
    "template-without-an-instance-field": (
        yaml.safe_dump(_inline(mutate(templates__1__prompt="Is it yes (0) or no (1)?\nA:"))),
        ["template 0-1", "no field of the instance"],
    ),
    "template-showing-the-gold": (
        yaml.safe_dump(_inline(mutate(templates__0__prompt="Q: {question} ({label})\nA:"))),
        ["template 0-0", "{label}", "target", "answer"],
    ),
    "duplicate-metric": (
        yaml.safe_dump(_inline(mutate(metrics=["accuracy", "accuracy"]))),
        ["field metrics", "'accuracy'", "twice"],
    ),
}


@pytest.mark.parametrize("case", sorted(TASK_FILE_CASES))
def test_task_files_that_mean_something_else_are_refused(
    tmp_path: Path, no_model_loads: list[str], case: str
) -> None:
    text, needles = TASK_FILE_CASES[case]
    path = tmp_path / "task.yaml"
    path.write_text(text, encoding="utf-8")
    assert_one_line(*invoke("--tasks", str(path)), "task.yaml", *needles)
    assert not no_model_loads


def test_a_mapping_where_the_prompt_wants_text_is_refused(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """The prompt showed the row's value as Python writes it: `Q: {'deep': ['x']}`."""
    task = _inline(GOOD)
    task["data"]["instances"][3]["question"] = {"deep": ["x"]}
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    assert_one_line(*invoke("--tasks", str(path)), "row 3", "template 0-0", "'question'", "mapping")
    assert not no_model_loads
    task["data"]["splits"] = {"train": {"file": "train.jsonl"}}
    (tmp_path / "train.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in task["data"].pop("instances")), "utf-8"
    )
    task["data"]["eval_split"] = "train"
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    code, out = export(path, tmp_path / "out.jsonl")
    assert_one_line(code, out, "instance 3", "'question'", "mapping")


# The fuzzer: mutations of a valid task file. Every outcome is a task that passes the
# run's checks or one HakariInputError; never a traceback, a hang, or a task of one of
# the refused classes passing.

_LEAVES = [
    ("name",), ("language",), ("target",), ("answer_type",), ("labels",), ("fallback",),
    ("fallback", "kind"), ("fallback", "value"), ("metrics",), ("templates",),
    ("templates", 0, "id"), ("templates", 0, "prompt"), ("templates", 0, "regex"),
    ("templates", 0, "answers"), ("templates", 1, "answers", "0"), ("templates", 1, "prompt"),
    ("data", "instances", 0, "question"), ("data", "instances", 1, "label"),
    ("max_new_chars",), ("fields",), ("prompt_suffix",),
]  # fmt: skip
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            "",
            "yes",
            "no",
            "0",
            "label",
            "text",
            "number",
            "first_label",
            "Q: {label}",
            "Q: {question}",
            "{{question}}",
            "(yes|no)",
            "[01]",
            "Q:",
            "accuracy",
            "f1",
            "{",
            "x" * 300,
            "ja",
            "0-0",
        ]
    ),
    st.lists(st.sampled_from(["yes", "no", "accuracy", "mcc", 0]), max_size=3),
    st.dictionaries(st.sampled_from(["deep", "kind", "yes", "0"]), st.just(["x"]), max_size=2),
)


def _set(task: dict, path: tuple, value: object) -> bool:
    node: object = task
    for key in path[:-1]:
        try:
            node = node[key]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return False
    if not isinstance(node, dict | list):
        return False
    try:
        if value is _DELETE:
            del node[path[-1]]  # type: ignore[arg-type]
        else:
            node[path[-1]] = value  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return False
    return True


_DELETE = object()


def _check_whole(path: Path) -> None:
    """What `hakari run` checks before any model loads, in its order."""
    task = load_task(path)
    opts = PlanOptions(n_boot=0)
    decodings = ["greedy", "constrained", "loglik"]
    preflight.check_tasks([task], opts, preflight.running_decodings([task], decodings))
    preflight.scan_rows(task, opts, decodings)


def _refused_class(task: dict) -> str | None:
    """The issue's class a mutated task falls in, if it is one."""
    spec = task if isinstance(task, dict) else {}
    metrics = spec.get("metrics")
    if isinstance(metrics, list) and len(metrics) != len({json.dumps(m) for m in metrics}):
        return "duplicate metric"
    templates = spec.get("templates")
    for t in templates if isinstance(templates, list) else []:
        prompt = t.get("prompt") if isinstance(t, dict) else None
        if isinstance(prompt, str) and "{label}" in prompt and spec.get("target") == "label":
            return "the gold in the prompt"
        if prompt in ("Q:", "", "yes", "no", "label", "0-0", "x" * 300):
            return "a prompt without an instance field"
    data = spec.get("data")
    rows = data.get("instances") if isinstance(data, dict) else None
    rows = rows if isinstance(rows, list) else []
    if any(isinstance(r, dict) and isinstance(r.get("question"), dict | list) for r in rows):
        return "a mapping or list in the prompt"
    return None


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(_LEAVES), st.one_of(_VALUES, st.just(_DELETE))),
        min_size=1,
        max_size=3,
    ),
    duplicate_key=st.booleans(),
)
def test_fuzzed_task_files_load_or_are_one_error(
    tmp_path: Path, edits: list[tuple[tuple, object]], duplicate_key: bool
) -> None:
    task = _inline(GOOD)
    for where, value in edits:
        _set(task, where, value)
    text = yaml.safe_dump(task, allow_unicode=True, sort_keys=False)
    duplicate_key = duplicate_key and "language" in task  # an edit may have deleted it
    if duplicate_key:
        text += "language: en\n"
    path = tmp_path / "fuzzed.yaml"
    path.write_text(text, encoding="utf-8")
    refused = "a duplicate key" if duplicate_key else _refused_class(task)
    try:
        within_deadline(lambda: _check_whole(path))
    except HakariInputError as exc:
        line = str(exc)
        assert "\n" not in line and ("fuzzed.yaml" in line or "field" in line), line
        return
    assert refused is None, f"{refused} was accepted:\n{text}"


@pytest.mark.parametrize("which", ["task file", "data file"])
def test_a_task_or_data_file_that_is_a_fifo_is_one_line_not_a_hang(
    tmp_path: Path, which: str
) -> None:
    """A FIFO's open waits for a writer for ever (`hakari._util.infiles` opens without
    waiting and refuses it)."""
    task = task_with_data(tmp_path)
    fifo = task if which == "task file" else tmp_path / "train.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)
    code, out = within_deadline(lambda: invoke("--tasks", str(task), "--model", "hf:/nonexistent"))
    assert "nonexistent" not in out, out
    assert_one_line(code, out, fifo.name, "not a regular file")
