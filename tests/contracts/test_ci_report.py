"""The end of `.ci/run` (scripts/ci_report.py): each part against its budget, a part over
budget a warning and never a failure, and the slowest tests from the JUnit record."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.paths import REPO, script_module


def _report() -> ModuleType:
    return script_module(REPO / "scripts" / "ci_report.py", "ci_report")


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.a" name="test_fast" time="0.5"/>
<testcase classname="tests.b" name="test_slowest" time="90.25"/>
<testcase classname="tests.c" name="test_middle" time="12.0"><skipped message="x"/></testcase>
</testsuite></testsuites>"""


def test_parts_over_budget_warn_and_the_slowest_tests_come_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    times = tmp_path / "times.tsv"
    times.write_text("install\t200\t360\nsuite\t1900\t1800\nbad line\nvLLM (beside)\t300\t420\n")
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    assert _report().main([str(times), str(junit), "--slowest", "2"]) == 0
    out = capsys.readouterr().out
    warned = [line for line in out.splitlines() if "WARNING" in line]
    assert len(warned) == 1 and warned[0].lstrip().startswith("suite")
    assert "2100" in out  # the sequential total leaves out what ran beside the install
    slow = out[out.index("slowest") :].splitlines()[1:]
    assert [line.split()[1] for line in slow] == ["tests.b::test_slowest", "tests.c::test_middle"]


def test_a_missing_record_is_no_failure(tmp_path: Path) -> None:
    assert _report().main([str(tmp_path / "none.tsv"), str(tmp_path / "none.xml")]) == 0
