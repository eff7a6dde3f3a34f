"""results.json stays byte-for-byte what it was for the same run.

The golden files in tests/fixtures/golden_run/ were written by `main` before the
results.json statistics became typed models (issue 18). The run is rerun here and the
bytes compared after `golden_run.normalize` replaced, in both, only what differs between
two runs of the same command by nature: `config.started`, `output_dir`, every `wall_s`,
`versions` and the folders of the task files. Keys, their order, float formatting and
nulls must all be the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import golden_run


@pytest.mark.parametrize(
    ("golden", "bootstrap"),
    [(golden_run.GOLDEN, True), (golden_run.GOLDEN_NO_BOOTSTRAP, False)],
    ids=["two-models-bootstrap", "one-model-no-bootstrap"],
)
def test_rerun_writes_the_golden_bytes(tmp_path: Path, golden: Path, bootstrap: bool) -> None:
    written = golden_run.run(tmp_path / "run", tmp_path / "cache", bootstrap=bootstrap)
    expected = golden_run.normalize(golden.read_text(encoding="utf-8"))
    assert golden_run.normalize(written.read_text(encoding="utf-8")) == expected
