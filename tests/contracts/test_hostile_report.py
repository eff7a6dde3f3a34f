"""Hostile outputs of `hakari report`: it never writes over what it reads (a run's
results.json, an input file), writes through a symbolic link, writes a device in place,
and a full disk or a full standard output is one `error:` line (exit 2), not a traceback
or a half-written page.

Hostile input to `hakari report`: every input it accepts is shown (a meta-evaluation
file too), on any terminal; what a foreign or edited results.json holds is shown as text
(the per-template chart included); what it cannot read is one `error:` line naming the
file or field (exit code 2); no model is ever loaded.

`no_model_loads` replaces the model loader with one that fails the test if called."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hakari
from hakari.backends.fake import FakeBackend
from hakari.cli import app
from hakari.meta import BootstrapSettings, load_meta_input, meta_evaluate
from hakari.runner import evaluate
from tests.helpers.cli import assert_one_line
from tests.helpers.deadline import within_deadline
from tests.helpers.html_elements import parse_html
from tests.helpers.outputs import (
    finished_run,
    full_device,
    hakari_process,
    is_char_device,
    open_full_stdout,
    snapshot,
    stderr_lines,
    stdout_link,
)

runner = CliRunner()


def report(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["report", *args])
    return result.exit_code, result.output


def test_html_over_the_runs_results_is_refused(tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run")
    before = snapshot(run)
    code, out = report(str(run), "--html", str(run / "results.json"))
    assert_one_line(code, out, "--html", "results.json", "run")
    assert snapshot(run) == before


def test_html_over_another_runs_samples_is_refused(tmp_path: Path) -> None:
    run, other = finished_run(tmp_path / "run"), finished_run(tmp_path / "other")
    before = snapshot(other)
    assert_one_line(*report(str(run), "--html", str(other / "samples.jsonl")), "samples.jsonl")
    assert snapshot(other) == before


def test_html_over_its_own_input_file_is_refused(tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run")
    copy = tmp_path / "copy.json"
    copy.write_bytes((run / "results.json").read_bytes())
    code, out = report(str(copy), "--html", str(copy))
    assert_one_line(code, out, "--html", "copy.json", "input")
    json.loads(copy.read_text(encoding="utf-8"))


def test_html_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run")
    link = tmp_path / "latest.html"
    link.symlink_to("pages/report.html")
    (tmp_path / "pages").mkdir()
    code, out = report(str(run), "--html", str(link))
    assert code == 0, out
    assert link.is_symlink() and (tmp_path / "pages" / "report.html").read_text().startswith(
        "<!DOCTYPE html>"
    )


@pytest.mark.slow
def test_html_to_a_full_device(tmp_path: Path) -> None:
    """A character device is written in place: ENOSPC is one line, the device stays."""
    run = finished_run(tmp_path / "run")
    device = full_device(tmp_path)
    code, out = report(str(run), "--html", str(device))
    assert_one_line(code, out, "--html", "No space left on device")
    assert is_char_device(device)


@pytest.mark.slow
def test_html_to_standard_output_through_a_link(tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run")
    link = stdout_link(tmp_path)
    result = hakari_process("report", str(run), "--html", str(link))
    assert result.returncode == 0, result.stderr
    assert "<!DOCTYPE html>" in result.stdout
    assert link.is_symlink()


@pytest.mark.slow
def test_markdown_to_a_full_standard_output(tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run")
    with open_full_stdout() as full:
        result = hakari_process("report", str(run), "--markdown", stdout=full)
    lines = stderr_lines(result)
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "No space left on device" in lines[0]


def test_an_answer_text_utf8_cannot_encode_is_shown_escaped(tmp_path: Path) -> None:
    """A sample whose output holds a lone surrogate (JSON "\\ud800") does not stop the
    page: it is written as the escape."""
    run = finished_run(tmp_path / "run")
    samples = run / "samples.jsonl"
    samples.write_text(
        samples.read_text(encoding="utf-8").replace('"output": "positive"', '"output": "p\\ud800"'),
        encoding="utf-8",
    )
    code, out = report(str(run), "--html", str(tmp_path / "page.html"))
    assert code == 0, out
    assert "p\\ud800" in (tmp_path / "page.html").read_text(encoding="utf-8")


HAKARI_SRC = str(Path(hakari.__file__).resolve().parents[1])  # the code under test


@pytest.fixture
def meta_json(tmp_path: Path) -> Path:
    rows = tmp_path / "scores.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"h": h, "rouge[b]": m, "s": s, "g": g}) + "\n"
            for h, m, s, g in [(1, 0.2, "a", "x"), (2, 0.4, "b", "x"), (3, 0.3, "a", "y"),
                               (4, 0.9, "b", "y"), (2, 0.5, "c", "x"), (5, 0.8, "c", "y")]
        ),
        encoding="utf-8",
    )  # fmt: skip
    data = load_meta_input(rows, "h", ["rouge[b]"], "s", "g")
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(meta_evaluate(data, BootstrapSettings(n_boot=50))), "utf-8")
    return path


@pytest.mark.parametrize("markdown", [False, True], ids=["terminal", "markdown"])
def test_a_meta_file_is_shown(meta_json: Path, markdown: bool) -> None:
    """`hakari report meta.json` printed nothing at all (exit 0)."""
    args = ["report", str(meta_json), *(["--markdown"] if markdown else [])]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    metric = "rouge\\[b\\]" if markdown else "rouge[b]"  # Markdown escapes the brackets
    # the file's path may be folded to the terminal's width (a long temp folder)
    assert "meta.json" in result.output.replace("\n", ""), result.output
    for needle in ("pooled", "system", "summary", metric, "pearson", "CAT"):
        assert needle in result.output, (needle, result.output)
    if markdown:
        assert "| metric |" in result.output


@pytest.mark.slow
def test_an_ascii_terminal_gets_the_report(tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": HAKARI_SRC}
    done = subprocess.run(
        [sys.executable, "-m", "hakari", "report", str(run)],
        capture_output=True,
        text=True,
        encoding="ascii",
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "demo_sentiment_en" in done.stdout


# -- the per-template chart ------------------------------------------------------------

CHART_MODEL = '<script>window.__pwned=5</script>$\\alpha$ モデル"'
CHART_TEMPLATE = '<img src=x onerror="window.__pwned=6">$x^2$'
SVG_TAGS = {"svg", "defs", "g", "path", "text", "clippath", "use", "rect", "tspan", "style"}


@pytest.fixture(scope="module")
def one_model_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-model run whose model name and one template id are hostile."""
    run = tmp_path_factory.mktemp("hostile-chart") / "run"
    evaluate(
        models=[CHART_MODEL],
        tasks=["demo_sentiment_en"],
        decodings=["greedy"],
        limit=8,
        output_dir=run,
        use_cache=False,
        n_boot=50,
        backend_factory=lambda spec: FakeBackend(lambda r: "1", name=spec),
    )
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    dec = data["models"][CHART_MODEL]["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
    dec["templates"][CHART_TEMPLATE] = dec["templates"].pop("0-1")
    (run / "results.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return run


def _figure_svg(html: str) -> str:
    found = re.search(r'<figure class="templates">(<svg.*?</svg>)', html, flags=re.S)
    assert found is not None, "no per-template chart"
    return found.group(1)


def test_template_chart_shows_hostile_names_as_text(
    one_model_run: Path, tmp_path: Path, no_model_loads: list[str]
) -> None:
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(one_model_run), "--html", str(out)])
    assert result.exit_code == 0, result.output
    svg = parse_html(_figure_svg(out.read_text(encoding="utf-8")))  # the chart's SVG
    assert svg.tags <= SVG_TAGS, svg.tags - SVG_TAGS  # no element made from a name
    assert not {a for a in svg.attributes if a.startswith("on") or a == "src"}
    text = "".join(svg.text)
    assert CHART_MODEL in text  # the legend: in full, `$` not read as mathtext
    assert CHART_TEMPLATE[:15] in text  # the axis: shortened, as text
    assert no_model_loads == []


def test_template_interval_out_of_order_is_one_line(
    one_model_run: Path, tmp_path: Path, no_model_loads: list[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    data = json.loads((one_model_run / "results.json").read_text(encoding="utf-8"))
    dec = data["models"][CHART_MODEL]["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
    dec["templates"]["0-0"]["ci"]["accuracy"] = {"low": 0.9, "high": 0.1}
    (run / "results.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    result = runner.invoke(app, ["report", str(run), "--html", str(tmp_path / "r.html")])
    assert_one_line(result.exit_code, result.output, "results.json", "ci.accuracy", "low ≤ high")
    assert not (tmp_path / "r.html").exists()


# --- issue 27 §6: hand-edited or foreign results ---------------------------------------


@pytest.fixture(scope="module")
def budgeted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A budgeted run of three models (model_groups written), half the grid (6 × 32: big
    enough to be estimated; a smaller one runs in full, with no budget record)."""
    run = tmp_path_factory.mktemp("budgeted") / "run"
    evaluate(
        models=["a", "b", "c"],
        tasks=["demo_sentiment_en"],
        decodings=["greedy"],
        budget="0.5",
        output_dir=run,
        use_cache=False,
        n_boot=50,
        backend_factory=lambda spec: FakeBackend(
            lambda r: {"a": "1", "b": "2"}.get(spec, "positive"), name=spec
        ),
    )
    return run


def _edited(run: Path, folder: Path, edit: object) -> Path:
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    edit(data)  # type: ignore[operator]
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def _decodings(data: dict) -> list[dict]:
    return [
        dec
        for model in data["models"].values()
        for task in model["tasks"].values()
        for dec in task["decodings"].values()
    ]


def _cells_run_1e9(data: dict) -> None:
    _decodings(data)[0]["budget"]["design"]["cells_run"] = 10**9


def _no_budget_record(data: dict) -> None:
    for dec in _decodings(data):
        del dec["budget"]


def _group_of_a_stranger(data: dict) -> None:
    groups = data["model_groups"]["demo_sentiment_en"]["greedy"]["accuracy"]
    groups["groups"] = [["a", "ghost"], ["b"], ["c"]]


def _no_models(data: dict) -> None:
    data["models"] = {}


EDIT_CASES = {
    "cells-run-beyond-the-grid": (_cells_run_1e9, ["cells_run", "1000000000", "grid"]),
    "budget-record-removed": (_no_budget_record, ["estimated", "budget record"]),
    "model-group-of-a-model-not-in-the-file": (_group_of_a_stranger, ["model_groups", "'ghost'"]),
    "no-models": (_no_models, ["no model", "nothing to report"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(EDIT_CASES))
@pytest.mark.parametrize("form", ["terminal", "html"])
def test_hand_edited_results_are_one_line(
    tmp_path: Path, budgeted_run: Path, no_model_loads: list[str], case: str, form: str
) -> None:
    edit, needles = EDIT_CASES[case]
    folder = _edited(budgeted_run, tmp_path / "edited", edit)
    extra = ["--html", str(tmp_path / "r.html")] if form == "html" else []
    assert_one_line(*report(str(folder), *extra), "results.json", *needles)
    assert not (tmp_path / "r.html").exists()
    assert not no_model_loads


@pytest.mark.slow
def test_the_budgeted_run_itself_is_reported(budgeted_run: Path, tmp_path: Path) -> None:
    code, out = report(str(budgeted_run), "--html", str(tmp_path / "r.html"))
    assert code == 0, out


@pytest.mark.slow
@pytest.mark.parametrize(
    "garbage", [b"{not json\n", b"[1, 2]\n", b"\xff\xfe garbage\n", b'{"task": {"x": 1}}\n']
)
def test_a_garbage_line_in_samples_keeps_the_browser(tmp_path: Path, garbage: bytes) -> None:
    """One garbage line dropped the whole sample browser, without a word."""
    run = finished_run(tmp_path / "run")
    code, out = report(str(run), "--html", str(tmp_path / "clean.html"))
    assert code == 0, out
    clean = (tmp_path / "clean.html").read_text(encoding="utf-8").count('<article class="blk')
    samples = run / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    samples.write_bytes(b"".join([lines[0], garbage, *lines[1:]]))
    code, out = report(str(run), "--html", str(tmp_path / "r.html"))
    assert code == 0, out
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert clean > 0 and html.count('<article class="blk') == clean
    # the note names the file (a long temp path: folded to the terminal's width)
    assert "samples.jsonl" in out.replace("\n", "") and "line 2" in " ".join(out.split())


@pytest.mark.parametrize("name", ["results.json", "samples.jsonl"])
def test_a_run_file_that_is_a_fifo_is_one_line_not_a_hang(tmp_path: Path, name: str) -> None:
    """A FIFO's open waits for a writer for ever: before `open_input`
    (hakari/_util/infiles.py) the report waited with it."""
    run = finished_run(tmp_path / "run")
    (run / name).unlink()
    os.mkfifo(run / name)
    html = str(tmp_path / "report.html")
    code, out = within_deadline(lambda: report(str(run), "--html", html))
    assert_one_line(code, out, name, "not a regular file (a FIFO)")
