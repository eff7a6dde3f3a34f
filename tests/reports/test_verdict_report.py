"""After a run, which model is better (issue 38 §12): `hakari report RUN` prints what
`hakari run` ends with (the summary, the verdict, the warnings), and the HTML page says
the verdict and ranks or bolds a model only where the paired test finds it better:
"tied" otherwise, with the fallback warning beside a model whose answers mostly did not
parse. Two runs: `tied_pair_run` (a lead of 0.01 in Sharpe score, p = 0.88, by a model
with 80% unparsed answers) and a decided one (fake:yes against fake:no)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from hakari.reports.inputs import load_inputs
from hakari.reports.page import build_html
from tests.helpers.report_fixtures import HONEST, PARROT, tied_pair_run
from tests.helpers.tasks import GOOD

runner = CliRunner()


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tied_pair_run(tmp_path_factory.mktemp("tied"))


@pytest.fixture(scope="module")
def decided(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fake:yes answers every row right but the last five, fake:no only those."""
    import json

    folder = tmp_path_factory.mktemp("decided")
    rows = [{"question": f"q{i}", "label": "yes" if i < 15 else "no"} for i in range(20)]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = json.loads(json.dumps(GOOD))
    for template in task["templates"]:
        template["regex"], template["answers"] = "(yes|no)", {"yes": "yes", "no": "no"}
    (folder / "tiny.json").write_text(json.dumps(task))
    run = folder / "run"
    result = runner.invoke(
        app,
        ["run", "-m", "fake:yes", "-m", "fake:no", "--tasks", str(folder / "tiny.json"),
         "--no-cache", "--n-boot", "200", "--quiet", "--output", str(run)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return run


def report(*args: str) -> str:
    result = runner.invoke(app, ["report", *args])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_the_terminal_report_ends_as_the_run_did(tied: Path, decided: Path) -> None:
    out = report(str(tied))
    assert "summary · demo_sentiment_en · greedy" in out
    assert "No model is better: the models are tied on all 2 task × decoding × metric" in out
    out = report(str(decided))
    assert out.index("summary · tiny · greedy") < out.index("fake:yes is better overall")
    assert "warning: fake:no is below a trivial baseline on tiny · greedy" in out


def page_of(run: Path) -> str:
    return build_html(load_inputs([run]), samples_per_template=1)


def leaderboard_rows(html: str) -> list[tuple[str, str, str]]:
    """(rank, model, the rest of the model cell) of the first leaderboard, as text."""
    body = html.split('class="leaderboard"', 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td>", body)
    text = [re.sub(r"<[^>]+>", "|", rank).strip("|") for rank, _ in rows]
    models = [re.search(r'class="model">([^<]*)<', cell) for _, cell in rows]
    flags = [re.sub(r"<[^>]+>", " ", cell.split("</span>", 1)[1]).strip() for _, cell in rows]
    return [(r, m.group(1) if m else "", f) for r, m, f in zip(text, models, flags, strict=True)]


def test_a_tie_is_called_tied_and_nobody_is_bold(tied: Path) -> None:
    html = page_of(tied)
    assert "No model is better: the models are tied on all 2 task" in html
    assert "ov best" not in html  # the overview bolds a model only where a test says so
    rows = leaderboard_rows(html)
    assert [(rank, model) for rank, model, _ in rows] == [("tied", PARROT), ("tied", HONEST)]
    # beside the model that leads on the point estimate: why its score is not its own
    assert rows[0][2] == "80.2% of outputs unparsed: scored as the fallback"
    assert rows[1][2] == ""


def test_a_model_found_better_is_ranked_and_bold(decided: Path) -> None:
    html = page_of(decided)
    assert "fake:yes is better overall: better on 2 of 2 task × decoding × metric cells" in html
    overview = html.split('class="overview"', 1)[1].split("</table>", 1)[0].split("<tr>")
    assert "ov best" in next(row for row in overview if "fake:yes" in row)
    assert "ov best" not in next(row for row in overview if "fake:no" in row)
    assert [(rank, model) for rank, model, _ in leaderboard_rows(html)] == [
        ("1", "fake:yes"),
        ("2", "fake:no"),
    ]
    assert "warning" in html and "fake:no is below a trivial baseline" in html
