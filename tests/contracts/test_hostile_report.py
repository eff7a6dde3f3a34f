"""Hostile input to `hakari report`: what a foreign or edited results.json can hold is
shown as text or refused with one line (exit code 2), and no model is ever loaded.

`no_model_loads` replaces the model loader with one that fails the test if called."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.backends.fake import FakeBackend
from hakari.cli import app
from hakari.runner import evaluate
from tests.helpers.cli import assert_one_line

runner = CliRunner()

# -- the per-template chart ------------------------------------------------------------

CHART_MODEL = '<script>window.__pwned=5</script>$\\alpha$ モデル"'
CHART_TEMPLATE = '<img src=x onerror="window.__pwned=6">$x^2$'
SVG_TAGS = {"svg", "defs", "g", "path", "text", "clippath", "use", "rect", "tspan", "style"}


class _Svg(HTMLParser):
    """The elements and the text of the template chart's SVG."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


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
    svg = _Svg()
    svg.feed(_figure_svg(out.read_text(encoding="utf-8")))
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
