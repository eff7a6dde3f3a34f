"""User and model text is never read as markup: not by rich (errors, tables, progress
bars, reports) and not by Markdown/HTML (the Markdown report escapes every cell)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from hakari.aggregate import aggregate
from hakari.backends.fake import FakeBackend
from hakari.cli import app
from hakari.reports.markdown import markdown_report
from hakari.reports.terminal import print_report
from hakari.results import EvalResults
from tests.helpers.tasks import mutate

MARKUP = "[/red]x[bold]y[/bold][ab]"
HOSTILE_MODEL = "m|<img src=x onerror=alert(1)>`code`[/red]"


def test_tasks_show_prints_regexes_and_prompts_as_they_are(tmp_path: Path) -> None:
    task = mutate(templates__1__regex="[ab]", templates__1__answers={"a": "yes", "b": "no"})
    task["templates"][1]["prompt"] = "Q: {question} [bold]a[/bold] or [/red] b?"
    task["description"] = MARKUP
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(json.dumps({"question": "q", "label": "yes"}) + "\n")
    result = CliRunner().invoke(app, ["tasks", "show", str(path)])
    assert result.exit_code == 0, result.output
    flat = result.output
    assert "[ab]" in flat and MARKUP in flat
    assert "[bold]a[/bold]" in " ".join(flat.split())


def test_errors_with_markup_characters(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--tasks", "x[/bar],[bold]y"])
    assert result.exit_code == 2 and "'x[/bar]'" in result.output
    missing = tmp_path / "[/red]task.yaml"
    result = CliRunner().invoke(app, ["tasks", "show", str(missing)])
    assert result.exit_code == 2 and "[/red]task.yaml" in result.output


def test_run_with_markup_in_model_spec_task_and_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model folder named with markup, a model that answers in markup: the progress
    bars, the report and the final lines print them as they are."""
    folder = tmp_path / "m[red]" / "[/red][bold]x"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    spec = f"hf:{folder}"
    monkeypatch.setattr(
        "hakari.backends.registry.load_backend",
        lambda s, **kw: FakeBackend(lambda r: "[/red] positive [bold]", name=s),
    )
    out = tmp_path / "out[/x]"
    args = ["run", "--model", spec, "--tasks", "demo_sentiment_en", "--limit", "2"]
    result = CliRunner().invoke(app, [*args, "--no-cache", "--n-boot", "0", "--output", str(out)])
    assert result.exit_code == 0, result.output
    flat = "".join(result.output.split())
    assert "".join(spec.split()) in flat and "[/x]" in flat
    samples = (out / "samples.jsonl").read_text()
    assert "[/red] positive [bold]" in samples


def hostile_results() -> EvalResults:
    from hakari.results import DecodingResult, ModelResult, TaskResult, TemplateResult

    dec = DecodingResult(
        templates={"0-0": TemplateResult(metrics={"accuracy": 0.5}, fallback_rate=0.0, n=2)},
        aggregate={"accuracy": aggregate({"0-0": 0.5})},
    )
    task = TaskResult(language="en", n_instances=2, metrics=["accuracy"], decodings={"greedy": dec})
    models = {
        name: ModelResult(identity={"name": name}, tasks={"t|`x`": task})
        for name in (HOSTILE_MODEL, "plain")
    }
    res = EvalResults(config={}, versions={}, models=models)
    res.alpha_sweep = {
        "t|`x`": {
            "greedy": {
                "accuracy": [
                    {
                        "alpha": 0.0,
                        "scores": {HOSTILE_MODEL: 0.5, "plain": 0.4},
                        "ranking": [HOSTILE_MODEL, "plain"],
                    }
                ]
            }
        }
    }
    return res


def test_markdown_report_escapes_every_cell() -> None:
    md = markdown_report(hostile_results())
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
    assert "`code`" not in md and "\\`code\\`" in md
    tables: list[list[str]] = [[]]
    for line in md.splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    tables = [t for t in tables if t]
    assert len(tables) >= 3  # summary, one per section, the ranking
    for table in tables:
        # unescaped pipes delimit the cells: every row has the header's number of cells
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in table}
        assert len(widths) == 1, table


def test_rich_report_on_a_markup_console() -> None:
    """The Python API may pass its own console (markup on): names still print as they are."""
    buf = io.StringIO()
    print_report(hostile_results(), Console(file=buf, width=300, markup=True))
    text = buf.getvalue()
    assert "[/red]" in text and "<img src=x onerror=alert(1)>" in text


def test_run_summary_and_verdict_on_a_markup_console() -> None:
    """What `hakari run` prints at its end (summary, verdict, warnings) shows hostile
    model and task names as they are, never as console markup."""
    from hakari.reports.terminal import print_summary

    buf = io.StringIO()
    print_summary(hostile_results(), Console(file=buf, width=300, markup=True))
    text = buf.getvalue()
    assert "[/red]" in text and "<img src=x onerror=alert(1)>" in text
