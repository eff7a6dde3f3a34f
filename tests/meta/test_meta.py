"""Meta-evaluation: levels against scipy and the REALSumm README, CAT/CIT/TFA by hand,
explicit ties / constant / NaN handling, and the CLI's input errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr
from typer.testing import CliRunner

from hakari.cli import app
from hakari.meta import BootstrapSettings, MetaInput, load_meta_input, meta_evaluate
from tests.helpers.paths import SHARED

REALSUMM = SHARED / "human-judgements" / "realsumm" / "summaries.jsonl"
needs_realsumm = pytest.mark.skipif(not REALSUMM.is_file(), reason=f"{REALSUMM} not present")
runner = CliRunner()


def _data(**columns: list[float]) -> MetaInput:
    human = columns.pop("human")
    systems = [str(s) for s in columns.pop("systems", [])] or None  # type: ignore[arg-type]
    groups = [str(g) for g in columns.pop("groups", [])] or None  # type: ignore[arg-type]
    return MetaInput(Path("x.jsonl"), "human", human, dict(columns), systems, groups)


@needs_realsumm
def test_realsumm_levels_match_scipy_and_the_readme() -> None:
    metrics = ["metric_scores.rouge_1_f_score", "metric_scores.rouge_2_recall"]
    data = load_meta_input(REALSUMM, "litepyramid_recall", metrics, "system", "doc_id")
    result = meta_evaluate(data, BootstrapSettings(n_boot=200))
    rows = [json.loads(line) for line in REALSUMM.open(encoding="utf-8")]
    human = np.array([r["litepyramid_recall"] for r in rows])
    r2 = np.array([r["metric_scores"]["rouge_2_recall"] for r in rows])
    r1 = np.array([r["metric_scores"]["rouge_1_f_score"] for r in rows])
    systems = sorted({r["system"] for r in rows})
    sys_h = [human[[r["system"] == s for r in rows]].mean() for s in systems]
    sys_m = [r2[[r["system"] == s for r in rows]].mean() for s in systems]
    level = result["levels"]["system"]["metric_scores.rouge_2_recall"]
    assert level["n"] == 25
    assert level["pearson"]["value"] == pytest.approx(pearsonr(sys_m, sys_h).statistic, abs=1e-12)
    assert level["kendall"]["value"] == pytest.approx(kendalltau(sys_m, sys_h).statistic, abs=1e-12)
    # The README's reference numbers (computed upstream with scipy).
    assert round(level["pearson"]["value"], 3) == 0.962
    assert round(level["kendall"]["value"], 3) == 0.860
    assert level["pearson"]["ci_low"] < level["pearson"]["value"] < level["pearson"]["ci_high"]
    summary = result["levels"]["summary"]["metric_scores.rouge_1_f_score"]
    per_doc = [
        spearmanr(r1[[r["doc_id"] == d for r in rows]], human[[r["doc_id"] == d for r in rows]])
        for d in range(100)
    ]
    expected = np.nanmean([p.statistic for p in per_doc])
    assert summary["spearman"]["value"] == pytest.approx(expected, abs=1e-12)
    assert round(summary["spearman"]["value"], 3) == 0.365
    pooled = result["levels"]["pooled"]["metric_scores.rouge_1_f_score"]
    assert pooled["spearman"]["value"] == pytest.approx(spearmanr(r1, human).statistic)
    assert pooled["n"] == 2500 and pooled["ties"]["human"] > 0
    # IFTEval's CAT with units = single rows is the pooled Spearman, CIT the summary level.
    cat = result["ifteval"]["CAT"]["metric_scores.rouge_1_f_score"]["value"]
    assert cat == pytest.approx(pooled["spearman"]["value"])
    cit = result["ifteval"]["CIT"]["metric_scores.rouge_1_f_score"]["value"]
    assert cit == pytest.approx(summary["spearman"]["value"])


@needs_realsumm
def test_realsumm_abstractive_subset_readme_numbers(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in REALSUMM.open(encoding="utf-8")]
    abstractive = tmp_path / "abs.jsonl"
    abstractive.write_text(
        "".join(json.dumps(r) + "\n" for r in rows if r["system"].startswith("abs/")),
        encoding="utf-8",
    )
    data = load_meta_input(
        abstractive,
        "litepyramid_recall",
        ["metric_scores.rouge_2_recall", "metric_scores.bert_f_score"],
        "system",
        "doc_id",
    )
    result = meta_evaluate(data, BootstrapSettings(n_boot=0))
    system = result["levels"]["system"]
    assert round(system["metric_scores.rouge_2_recall"]["pearson"]["value"], 3) == 0.983
    assert round(system["metric_scores.bert_f_score"]["kendall"]["value"], 3) == 0.495
    summary = result["levels"]["summary"]["metric_scores.bert_f_score"]
    assert round(summary["spearman"]["value"], 3) == 0.427


def test_nan_constant_and_ties_are_reported_not_dropped() -> None:
    data = _data(
        human=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        noisy=[1.0, math.nan, 3.0, 3.0, 5.0, 6.0],
        flat=[2.0] * 6,
        groups=["a", "a", "a", "b", "b", "b"],
        systems=["s1", "s2", "s3", "s1", "s2", "s3"],
    )
    result = meta_evaluate(data, BootstrapSettings(n_boot=50))
    pooled = result["levels"]["pooled"]
    assert pooled["noisy"]["n"] == 5 and pooled["noisy"]["n_missing"] == 1
    assert pooled["noisy"]["ties"]["metric"] == 1
    assert pooled["flat"]["pearson"]["value"] is None
    assert pooled["flat"]["undefined"] == "the metric is constant"
    summary = result["levels"]["summary"]["flat"]
    assert summary["n_undefined_groups"] == 2 and summary["spearman"]["value"] is None
    assert result["input"]["columns"]["flat"]["constant"] is True
    cit = result["ifteval"]["CIT"]["flat"]
    assert cit["value"] is None and set(cit["undefined_groups"]) == {"a", "b"}
    matrix = result["matrices"]["pooled_spearman"]
    assert matrix["human"]["human"] == pytest.approx(1.0) and matrix["flat"]["human"] is None


def test_cat_cit_tfa_by_hand() -> None:
    # Two tasks, three models, two samples per unit.
    systems = ["base", "base", "mid", "mid", "tuned", "tuned"] * 2
    groups = ["t1"] * 6 + ["t2"] * 6
    human = [2.0, 4, 5, 5, 6, 8, 1, 1, 3, 3, 2, 4]
    metric = [1.0, 1, 2, 4, 9, 9, 5, 5, 1, 1, 3, 3]
    data = _data(human=human, m=metric, systems=systems, groups=groups)
    result = meta_evaluate(data, BootstrapSettings(n_boot=0), tfa_before="base", tfa_after="tuned")
    # Units: human t1 (3, 5, 7), t2 (1, 3, 3: a tie); metric t1 (1, 3, 9), t2 (5, 1, 3).
    unit_h = [3, 5, 7, 1, 3, 3]
    unit_m = [1, 3, 9, 5, 1, 3]
    block = result["ifteval"]
    assert block["CAT"]["m"]["value"] == pytest.approx(spearmanr(unit_m, unit_h).statistic)
    cit_t1 = spearmanr(unit_m[:3], unit_h[:3]).statistic
    cit_t2 = spearmanr(unit_m[3:], unit_h[3:]).statistic
    assert block["CIT"]["m"]["value"] == pytest.approx((cit_t1 + cit_t2) / 2)
    tfa = block["TFA"]["columns"]
    assert tfa["m"]["value"] == pytest.approx(((9 - 1) / 1 + (3 - 5) / 5) / 2)
    assert tfa["human"]["value"] == pytest.approx(((7 - 3) / 3 + (3 - 1) / 1) / 2)


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_cli_meta_json_shape_and_table(tmp_path: Path) -> None:
    rows = [
        {"doc": d, "sys": s, "h": (d * 7 + s * 3) % 5 / 4, "m": {"a": (d + s) % 4, "b": s}}
        for d in range(6)
        for s in range(4)
    ]
    src = _write(tmp_path / "in.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "meta.json"
    res = runner.invoke(
        app,
        ["meta", "--input", str(src), "--human", "h", "--metrics", "m.a,m.b",
         "--system-field", "sys", "--group-by", "doc", "--json", str(out), "--n-boot", "100"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    for level in ("system", "summary", "pooled"):
        entry = data["levels"][level]["m.a"]
        assert set(entry["pearson"]) >= {"value", "ci_low", "ci_high"}
        assert {"spearman", "kendall", "n"} <= set(entry)
    assert "pooled level" in res.output and "CAT" in res.output


@pytest.mark.parametrize(
    ("content", "args", "needle"),
    [
        (b'{"h": 1, "m": 2}\n{"h": 1, "m": "\xff"}\n', [], "line 2: not UTF-8"),
        ('{"h": 1, "m": 2}\n' * 40 + '{"h": 1}\n', [], "line 41: no field 'm'"),
        ('{"h": 1, "m": 2}\n{"h": 1, "m": "x"}\n', [], "line 2: field 'm' must be a number"),
        ('{"h": 1, "m": 2}\nnot json\n', [], "line 2: not valid JSON"),
        ('{"h": 1, "m": 2}\n', ["--metrics", "m..x"], "not a field path"),
        ('{"h": 1, "m": 2}\n', ["--tfa-before", "a"], "both --tfa-before"),
    ],
)
def test_cli_meta_errors_name_file_line_field(
    tmp_path: Path, content: str | bytes, args: list[str], needle: str
) -> None:
    src = _write(tmp_path / "bad.jsonl", content)
    base = ["meta", "--input", str(src), "--human", "h"]
    if "--metrics" not in args:
        base += ["--metrics", "m"]
    res = runner.invoke(app, [*base, *args])
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert "bad.jsonl" in res.output or "--" in res.output


def test_cli_meta_escapes_markup_in_field_names(tmp_path: Path) -> None:
    rows = [{"h": i % 3, "[bold]x": i} for i in range(6)]
    src = _write(tmp_path / "in.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(
        app, ["meta", "--input", str(src), "--human", "h", "--metrics", "[bold]x", "--n-boot", "0"]
    )
    assert res.exit_code == 0, res.output
    assert "[bold]x" in res.output
