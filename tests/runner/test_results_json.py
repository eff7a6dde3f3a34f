"""results.json: every statistic is a typed, documented record, and the file stays
byte-for-byte what it was for the same run.

The golden files in tests/fixtures/golden_run/ were written by `main` before the
results.json statistics became typed models (issue 18). The run is rerun here and the
texts compared after `golden_run.normalize` replaced, in both, only what differs between
two runs of the same command by nature: `config.started`, `output_dir`, every `wall_s`,
`versions` and the folders of the task files. Keys, their order, strings, integers and
nulls must all be the same, and every float up to the last bits that differ between two
CPUs' SIMD sums (`golden_run.assert_same_run`: AVX-512 and AVX2 machines give Pearson r
one bit apart).

Published results.json files are read through `EvalResults` and written back: the bytes
must not change. The older results.json of tests/fixtures/older_results/ is in an older
format (no `sharpe_caveat`, `constraint_misses`, `paired`, `failed`, `n_samples`, fewer
config keys) and was committed re-indented with one space where every hakari version
writes two; for it the comparison is of the bytes outside the whitespace between JSON
tokens (keys, order, every number's digits, nulls, string escapes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hakari._util.records import Record
from hakari.errors import HakariInputError
from hakari.results import EvalResults
from tests.helpers import golden_run
from tests.helpers.paths import OLDER_RESULTS, REPO

PUBLISHED = REPO / "docs" / "results"
CURRENT = PUBLISHED / "japanese-zero-shot.results.json"
PREVIOUS = OLDER_RESULTS


@pytest.mark.parametrize(
    ("golden", "bootstrap"),
    [(golden_run.GOLDEN, True), (golden_run.GOLDEN_NO_BOOTSTRAP, False)],
    ids=["two-models-bootstrap", "one-model-no-bootstrap"],
)
def test_rerun_writes_the_golden_bytes(tmp_path: Path, golden: Path, bootstrap: bool) -> None:
    written = golden_run.run(tmp_path / "run", tmp_path / "cache", bootstrap=bootstrap)
    golden_run.assert_same_run(
        written.read_text(encoding="utf-8"), golden.read_text(encoding="utf-8")
    )


def _without_layout(text: str) -> str:
    """JSON text without the whitespace between tokens (strings kept as written)."""
    return re.sub(r'("(?:[^"\\]|\\.)*")|\s+', lambda m: m.group(1) or "", text)


@pytest.mark.parametrize(
    "path", [CURRENT, golden_run.GOLDEN, golden_run.GOLDEN_NO_BOOTSTRAP], ids=lambda p: p.name
)
def test_read_then_write_keeps_the_bytes(tmp_path: Path, path: Path) -> None:
    out = tmp_path / "results.json"
    EvalResults.read(path).write(out)
    assert out.read_bytes() == path.read_bytes()


def test_an_older_format_is_written_back_unchanged(tmp_path: Path) -> None:
    original = PREVIOUS.read_text(encoding="utf-8")
    assert original.startswith('{\n "schema_version": 1,\n "config"')  # one-space indent
    results = EvalResults.read(PREVIOUS)
    aggregate = results.models["smollm2-135m"].tasks["jcola"].decodings["greedy"].aggregate
    assert aggregate["accuracy"].sharpe_caveat is None  # absent, and stays absent
    assert results.paired is None and results.config.seed is None
    out = tmp_path / "results.json"
    results.write(out)
    written = out.read_text(encoding="utf-8")
    assert _without_layout(written) == _without_layout(original)
    assert written.startswith('{\n  "schema_version": 1,\n  "config"')  # hakari's indent
    assert "sharpe_caveat" not in written and '"paired"' not in written


def test_unknown_keys_survive_a_round_trip(tmp_path: Path) -> None:
    """Keys of a newer version are kept, after the known keys of their object."""
    text = golden_run.GOLDEN.read_text(encoding="utf-8")
    text = text.replace('"n_samples": 600', '"n_samples": 600,\n  "future": {"x": [1, null]}')
    text = text.replace('"argv": [', '"new_option": "on",\n    "argv": [', 1)
    text = text.replace('"q90": ', '"q95": 0.5,\n                  "q90": ', 1)
    source = tmp_path / "in.json"
    source.write_text(text, encoding="utf-8")
    results = EvalResults.read(source)
    assert results.config.model_extra == {"new_option": "on"}
    results.write(tmp_path / "out.json")
    written = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert written == json.loads(text)
    assert list(written)[-2:] == ["n_samples", "future"]
    assert list(written["config"])[-2:] == ["started", "new_option"]
    steady = written["models"]["steady"]["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
    assert list(steady["aggregate"]["accuracy"])[-2:] == ["ci_clipped", "q95"]


@pytest.mark.parametrize(
    ("find", "replace", "field", "message"),
    [
        ('"sharpe": 0.', '"sharpe": "0.', "aggregate.accuracy.sharpe", "valid number"),
        ('"schema_version": 1', '"schema_version": 99', "schema_version", "schema_version 99"),
        ('"n_boot": 40', '"n_boot": 40.5', "config.n_boot", "valid integer"),
        ('"verdict": "a_better"', '"verdict": "A"', "mean.verdict", "a_better"),
        ('"fallback_rate": 0.0', '"fallback_rate": null', "fallback_rate", "valid number"),
    ],
    ids=["sharpe-string", "schema-99", "n_boot-float", "verdict", "null-rate"],
)
def test_ill_typed_statistics_name_file_and_field(
    tmp_path: Path, find: str, replace: str, field: str, message: str
) -> None:
    text = golden_run.GOLDEN.read_text(encoding="utf-8")
    assert find in text
    if replace.endswith('"0.'):  # close the string the number became
        head, tail = text.split(find, 1)
        number, rest = tail.split(",", 1)
        text = f'{head}{replace}{number}",{rest}'
    else:
        text = text.replace(find, replace, 1)
    bad = tmp_path / "results.json"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(HakariInputError) as caught:
        EvalResults.read(bad)
    error = caught.value
    assert error.file == str(bad) and error.field is not None and field in error.field
    assert message in str(error) and "\n" not in str(error)


def _records(cls: type[Record]) -> list[type[Record]]:
    return [cls, *(r for sub in cls.__subclasses__() for r in _records(sub))]


def test_every_field_of_every_record_has_a_docstring() -> None:
    records = {r for r in _records(Record) if r.__module__.startswith("hakari.")}
    names = {r.__name__ for r in records}
    assert {"EvalResults", "RunConfig", "AggregateStats", "PairedComparison"} <= names
    assert {"PairedStatistic", "AlphaSweepPoint", "GenerationBudget", "RescoredMetric"} <= names
    for record in records:
        assert record.__doc__, record
        for name, field in record.model_fields.items():
            assert field.description, f"{record.__name__}.{name} has no docstring"
