"""`hakari report --html/--csv`: the page's content, escaping of every untrusted field,
old results files, meta-evaluation files, CSV and the command's errors (no browser here;
tests/reports/test_browser.py opens the page in Chromium)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from hakari.reports.csv_export import write_csv
from hakari.reports.inputs import load_inputs, read_samples
from hakari.reports.page import build_html
from hakari.reports.views import per_model, template_panels
from hakari.results import EvalResults
from tests.helpers.html_elements import parse_html as parse
from tests.helpers.paths import OLDER_RESULTS
from tests.helpers.report_fixtures import (
    HOSTILE_MODEL,
    HOSTILE_TASK,
    HOSTILE_TEMPLATE,
    INJECT,
    JP_MODEL,
    MODELS,
    add_paired,
    make_hostile_copy,
    make_run,
)

OLD_RESULTS = OLDER_RESULTS
OUR_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "h5",
    "p", "nav", "a", "section", "pre", "div", "dl", "dt", "dd", "table", "caption", "thead",
    "tbody", "tr", "th", "td", "span", "small", "b", "br", "code", "figure", "figcaption",
    "details", "summary", "ul", "li", "input", "label", "article", "footer",
    # inline SVG from matplotlib
    "svg", "defs", "g", "path", "text", "clippath", "use", "rect", "tspan",
}  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("report")
    run = make_run(folder, limit=8, n_boot=50)
    add_paired(run)
    return run, make_hostile_copy(run, folder)


@pytest.mark.slow
def test_page_has_every_section_and_the_run_numbers(runs: tuple[Path, Path]) -> None:
    run, _ = runs
    data = load_inputs([run])
    html = build_html(data, samples_per_template=2)
    results = EvalResults.read(run / "results.json")
    assert html.count('class="decoding"') == 3 * 3  # tasks × decodings
    assert html.count('class="leaderboard"') == 3 * 3 * 2  # × metrics
    assert html.count('class="heatmap"') == 3 * 3 * 2
    # per task × decoding: the per-template chart and the bump chart
    assert html.count('<figure class="templates">') == html.count('<figure class="bump">') == 3 * 3
    assert html.count('<svg class="chart"') == 2 * 3 * 3
    assert html.count('class="samplebox"') == 3
    assert 'id="overview"' in html and 'id="runs"' in html
    # the leaderboard shows the results' own numbers
    agg = results.models["oracle-7b"].tasks["demo_sentiment_en"].decodings["greedy"].aggregate
    assert f"{agg['accuracy'].sharpe:.3f}".replace("-", "−") in html
    assert f"{agg['accuracy'].ci_low:.3f}".replace("-", "−") in html
    assert "hakari run --model oracle-7b" in html  # the command, rebuilt from the config
    assert results.versions["numpy"] in html
    # no script, no external resource
    elements = parse(html)
    assert "script" not in elements.tags and "link" not in elements.tags
    assert not {a for a in elements.attributes if a.startswith("on") or a == "src"}
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', ""
    )


@pytest.mark.slow
def test_one_model_gets_the_per_template_chart_with_its_intervals(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    run, _ = runs
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    data["models"] = {"oracle-7b": data["models"]["oracle-7b"]}
    for key in ("paired", "alpha_sweep", "model_groups"):  # of the models dropped
        data.pop(key, None)
    one = tmp_path / "one"
    one.mkdir()
    (one / "results.json").write_text(json.dumps(data), encoding="utf-8")
    loaded = load_inputs([one])
    html = build_html(loaded)
    assert html.count('<figure class="templates">') == 3 * 3 and 'class="bump"' not in html
    assert "bars: 95% bootstrap interval of each template" in html
    # what the chart draws is what results.json holds, in the task's template order
    models = per_model(loaded, "demo_sentiment_en", "greedy")
    (accuracy, mcc) = template_panels(models, ["accuracy", "mcc"], ["0-0", "0-1", "0-2"])
    dec = data["models"]["oracle-7b"]["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
    (series,) = accuracy.series
    assert series.scores == [
        dec["templates"][t]["metrics"]["accuracy"] for t in ("0-0", "0-1", "0-2")
    ]
    assert series.lows == [
        dec["templates"][t]["ci"]["accuracy"]["low"] for t in ("0-0", "0-1", "0-2")
    ]
    assert series.highs == [
        dec["templates"][t]["ci"]["accuracy"]["high"] for t in ("0-0", "0-1", "0-2")
    ]
    assert (series.mean, series.sharpe) == (
        dec["aggregate"]["accuracy"]["mean"],
        dec["aggregate"]["accuracy"]["sharpe"],
    )
    assert accuracy.chance == 0.5 and mcc.metric == "mcc"
    svg = html[html.index('<figure class="templates">') :]
    svg = svg[: svg.index("</svg>")]
    for template in ("0-0", "0-1", "0-2", "1-0", "1-1", "1-2"):
        assert f">{template}</text>" in svg  # axis labels stay text


@pytest.mark.slow
def test_old_results_chart_without_intervals_says_why() -> None:
    html = build_html(load_inputs([OLD_RESULTS]))
    tasks = EvalResults.read(OLD_RESULTS).models["smollm2-135m"].tasks.values()
    expected = sum(len(t.decodings) for t in tasks)  # every task × decoding
    assert html.count('<figure class="templates">') == expected == 10
    assert "no per-template intervals recorded" in html


@pytest.mark.slow
def test_every_untrusted_field_is_text(runs: tuple[Path, Path]) -> None:
    _, hostile = runs
    html = build_html(load_inputs([hostile]), samples_per_template=3)
    elements = parse(html)
    assert elements.tags <= OUR_TAGS, elements.tags - OUR_TAGS
    assert not {a for a in elements.attributes if a.startswith("on")}
    text = "".join(elements.text)
    for s in (INJECT, HOSTILE_MODEL, JP_MODEL, HOSTILE_TEMPLATE, HOSTILE_TASK, "<i>yes</i>"):
        assert s in text, s  # shown as text, in full
    assert 'run <b>&"x"</b> 日本' in text  # the file name


@pytest.mark.slow
def test_paired_differences_from_results(runs: tuple[Path, Path]) -> None:
    run, _ = runs
    html = build_html(load_inputs([run]))
    paired = json.loads((run / "results.json").read_text(encoding="utf-8"))["paired"]
    first = paired["demo_sentiment_en"]["greedy"][0]
    assert html.count('class="paired"') == 3 * 3 * 2  # task × decoding × metric
    assert f"{first['mean']['diff']:.3f}".replace("-", "−") in html
    assert f"{first['sharpe']['ci_high']:.3f}".replace("-", "−") in html
    # old files have no `paired`: the section is left out
    assert 'class="paired"' not in build_html(load_inputs([OLD_RESULTS]))


@pytest.mark.slow
def test_page_is_deterministic(runs: tuple[Path, Path]) -> None:
    run, _ = runs
    assert build_html(load_inputs([run])) == build_html(load_inputs([run]))


def test_samples_first_n_per_template(runs: tuple[Path, Path]) -> None:
    run, _ = runs
    blocks = read_samples(load_inputs([run]), per_template=2)
    en = blocks["demo_sentiment_en"]
    assert len(en) == 6 * 2  # 6 templates × first 2 instances
    assert {b.index for b in en} == {0, 1}
    assert all(len(b.rows) == 3 * 3 for b in en)  # every model × decoding
    labels = {r.model for b in en for r in b.rows}
    assert labels == set(MODELS)
    assert any(r.correct for b in en for r in b.rows)
    assert any(r.correct is False for b in en for r in b.rows)


@pytest.mark.slow
def test_old_results_without_samples_render() -> None:
    html = build_html(load_inputs([OLD_RESULTS]))
    results = EvalResults.read(OLD_RESULTS)
    assert 'class="samplebox"' not in html  # no samples.jsonl beside it
    expected = sum(
        len(t.metrics) * len(t.decodings) for t in results.models["smollm2-135m"].tasks.values()
    )
    assert html.count('class="leaderboard"') == expected == 16
    assert "smollm2-135m" in html and "jcommonsenseqa" in html


def test_two_runs_merge_and_duplicate_models_are_kept(runs: tuple[Path, Path]) -> None:
    run, _ = runs
    data = load_inputs([run, run / "results.json"])
    assert list(data.models) == [*MODELS, *(f"{m} (2)" for m in MODELS)]


def _meta() -> dict[str, object]:
    coef = {"value": 0.61, "ci_low": 0.2, "ci_high": 0.85}
    return {
        "levels": {
            "system": {
                "rouge<script>": {"pearson": coef, "spearman": coef, "kendall": coef, "n": 8},
                "bertscore": {"pearson": coef, "spearman": coef, "kendall": coef, "n": 8},
            },
            "pooled": {"rouge<script>": {"pearson": coef, "n": 400, "undefined": None}},
        },
        "skipped_levels": {"summary": "needs --group-by"},
        "ifteval": {
            "CAT": {"bertscore": {"value": 0.4}},
            "CIT": {"bertscore": {"value": 0.3, "n_groups": 5}},
        },
        "matrices": {
            "pooled_spearman": {
                "rouge<script>": {"rouge<script>": 1.0, "bertscore": 0.5, "human": 0.3},
                "bertscore": {"rouge<script>": 0.5, "bertscore": 1.0, "human": None},
                "human": {"rouge<script>": 0.3, "bertscore": None, "human": 1.0},
            }
        },
    }


def test_meta_evaluation_sections(tmp_path: Path) -> None:
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(_meta()), encoding="utf-8")
    html = build_html(load_inputs([path]))
    assert 'id="meta"' in html and "system level" in html and "pooled level" in html
    assert "CAT (Spearman)" in html and "needs --group-by" in html
    assert html.count('<svg class="chart"') == 1
    elements = parse(html)
    assert "script" not in elements.tags
    assert "rouge<script>" in "".join(elements.text)


def test_csv_export(runs: tuple[Path, Path], tmp_path: Path) -> None:
    _, hostile = runs
    paths = write_csv(load_inputs([hostile]), tmp_path / "csv")
    with paths[0].open(encoding="utf-8") as fh:
        summary = list(csv.DictReader(fh))
    assert len(summary) == 3 * 3 * 3 * 2
    row = next(r for r in summary if r["model"] == "oracle-7b" and r["decoding"] == "greedy")
    assert float(row["sharpe"]) <= float(row["mean"]) + 1e-12 or float(row["mean"]) < 0
    with paths[2].open(encoding="utf-8") as fh:
        sweep = list(csv.DictReader(fh))
    assert {r["alpha"] for r in sweep} >= {"0.0", "1.0", "2.0"}
    with paths[1].open(encoding="utf-8", newline="") as fh:
        assert HOSTILE_TEMPLATE in {r["template_id"] for r in csv.DictReader(fh)}


def test_csv_guards_formulas(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    run, _ = runs
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    data["models"] = {"=HYPERLINK(1)": data["models"]["oracle-7b"]}
    data.pop("model_groups", None)  # of the models dropped
    (tmp_path / "results.json").write_text(json.dumps(data), encoding="utf-8")
    paths = write_csv(load_inputs([tmp_path]), tmp_path / "csv")
    assert "'=HYPERLINK(1)" in paths[0].read_text(encoding="utf-8")


@pytest.mark.slow
def test_cli_html_csv_and_markdown(
    runs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, _ = runs
    monkeypatch.chdir(tmp_path)  # missing folders are made inside the working folder only
    out = tmp_path / "sub" / "report.html"
    result = CliRunner().invoke(
        app, ["report", str(run), "--html", str(out), "--csv", str(tmp_path / "c")]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (tmp_path / "c" / "summary.csv").exists()
    md = CliRunner().invoke(app, ["report", str(run), "--markdown"])
    assert md.exit_code == 0 and "| oracle-7b | demo_sentiment_en |" in md.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "cannot read"),
        ('{"models": {}}', "not a hakari results.json"),
    ],
)
def test_cli_errors_name_the_file(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(app, ["report", str(path), "--html", str(tmp_path / "o.html")])
    assert result.exit_code == 2
    assert message in result.output and "bad.json" in result.output
    assert not (tmp_path / "o.html").exists()


@pytest.mark.slow
def test_overview_first_and_only_the_settings_that_apply_collapsed_last(
    runs: tuple[Path, Path],
) -> None:
    run, _ = runs
    html = build_html(load_inputs([run]), samples_per_template=2)
    overview, first_task = html.index('id="overview"'), html.index('class="task"')
    assert overview < first_task < html.index('id="runs"')
    settings = html[html.index('<details class="settings">') :]
    assert settings.index("data and settings") < settings.index("</details>")
    # in-process models: no server or vLLM engine field applies
    for field in ("request_timeout", "concurrency", "gpu_memory_utilization", "regex_field"):
        assert field not in html


def test_theserving_settings_shown_are_those_of_the_models_served() -> None:
    from hakari.reports.page import serving_settings
    from hakari.results import RunConfig

    config = RunConfig.model_construct(
        models=["openai:m@http://h"], serving={"concurrency": 32, "gpu_memory_utilization": 0.9}
    )
    assert serving_settings(config) == {"concurrency": 32}
    config = RunConfig.model_construct(
        models=["vllm:x", "smollm2-135m"],
        serving={"concurrency": 32, "gpu_memory_utilization": 0.9, "max_model_len": None},
    )
    assert serving_settings(config) == {"gpu_memory_utilization": 0.9}


def test_an_estimated_template_point_has_its_interval() -> None:
    from hakari.reports.views import template_panels
    from hakari.results import DecodingResult, TaskResult, TemplateResult

    dec = DecodingResult.model_construct(
        templates={
            "0-0": TemplateResult(
                metrics={"accuracy": 0.6}, fallback_rate=0.0, n=10, estimated=True,
                metrics_ci={"accuracy": [0.4, 0.8]},
            )
        },
        aggregate={},
    )  # fmt: skip
    task = TaskResult.model_construct(metrics=["accuracy"], chance={})
    (panel,) = template_panels({"m": (task, dec)}, ["accuracy"], ["0-0"])
    assert panel.series[0].lows == [0.4] and panel.series[0].highs == [0.8]
