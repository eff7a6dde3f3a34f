"""Every kind of bad task input stops with exit code 2 and one message naming the file
(and the template and field where there is one), before any model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hakari.cli import app
from hakari.tasks.loader import load_task
from tests.helpers.tasks import GOOD, mutate

runner = CliRunner()


def write_task(tmp_path: Path, task: dict | str, rows: list[dict] | None = None) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(task if isinstance(task, str) else yaml.safe_dump(task, allow_unicode=True))
    rows = [{"question": "Is water wet?", "label": "yes"}] if rows is None else rows
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run_cli(path: Path) -> tuple[int, str]:
    # a model spec that cannot load proves no model is touched before validation fails
    result = runner.invoke(app, ["run", "--tasks", str(path), "--model", "hf:/nonexistent"])
    return result.exit_code, result.output


def test_good_task_loads(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, GOOD))
    assert [t.id for t in task.spec.templates] == ["0-0", "0-1"]


@pytest.mark.parametrize(
    ("task", "rows", "needles"),
    [
        ("name: [unclosed\n", None, ["not valid YAML"]),
        (mutate(colour="red"), None, ["colour", "unknown field"]),
        (
            mutate(templates__1__regex="[01"),
            None,
            ["template 0-1", "templates[1].regex", "invalid regex"],
        ),
        (
            mutate(templates__0__prompt="Q: {query}\nA:"),
            None,
            ["template 0-0", "{query}", "not a field"],
        ),
        (GOOD, [], ["dataset is empty"]),
        (
            mutate(templates__0__answers={"yes": "yes", "no": "maybe"}),
            None,
            ["template 0-0", "not in labels"],
        ),
        (mutate(target=None), None, ["target", "required field is missing"]),
        (mutate(templates__0__id="zero"), None, ["template zero", "<prompt type>-<answer format>"]),
        (mutate(templates__1__regex="x*"), None, ["template 0-1", "matches the empty string"]),
        (GOOD, [{"question": "Is fire cold?", "label": "perhaps"}], ["gold label 'perhaps'"]),
    ],
    ids=[
        "bad-yaml",
        "unknown-field",
        "invalid-regex",
        "missing-placeholder",
        "empty-data",
        "answer-outside-labels",
        "missing-target",
        "bad-template-id",
        "empty-regex",
        "bad-gold",
    ],
)
def test_bad_input_exit_2_names_file(tmp_path: Path, task, rows, needles) -> None:
    path = write_task(tmp_path, task, rows)
    code, out = run_cli(path)
    flat = " ".join(out.split())
    assert code == 2, out
    assert str(path) in flat or "data.jsonl" in flat
    for needle in needles:
        assert needle in flat, (needle, flat)


def test_regex_that_cannot_constrain_is_named_before_any_model(tmp_path: Path) -> None:
    # octal escapes: read by the matcher (RE2, as Python's re), but not by llguidance
    path = write_task(tmp_path, mutate(templates__1__regex=r"\060|\061"))
    code, out = run_cli(path)
    flat = " ".join(out.split())
    assert code == 2 and "template 0-1" in flat and "cannot constrain decoding" in flat


def test_missing_data_file_is_named(tmp_path: Path) -> None:
    path = write_task(tmp_path, mutate(data={"splits": {"validation": {"file": "nope.jsonl"}}}))
    code, out = run_cli(path)
    assert code == 2 and "nope.jsonl" in out and "not found" in out


def test_malformed_data_line_is_named(tmp_path: Path) -> None:
    path = write_task(tmp_path, GOOD)
    (tmp_path / "data.jsonl").write_text('{"question": "ok", "label": "yes"}\n{oops\n')
    code, out = run_cli(path)
    assert code == 2 and "data.jsonl" in out and "line 2" in out


@pytest.mark.slow
def test_unknown_task_and_template(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--tasks", "no_such_task"])
    assert result.exit_code == 2 and "no_such_task" in result.output
    path = write_task(tmp_path, GOOD)
    result = runner.invoke(
        app, ["run", "--tasks", str(path), "--templates", "9-9", "--model", "hf:/nonexistent"]
    )
    assert result.exit_code == 2 and "9-9" in result.output


@pytest.mark.slow
def test_tasks_list_json_and_show() -> None:
    result = runner.invoke(app, ["tasks", "list", "--json"])
    assert result.exit_code == 0
    items = json.loads(result.output)
    demo = {i["name"]: i for i in items}["demo_sentiment_ja"]
    assert demo["language"] == "ja" and demo["n_templates"] == 6
    shown = runner.invoke(app, ["tasks", "show", "demo_sentiment_en"])
    assert shown.exit_code == 0 and "(positive|negative)" in shown.output
