"""Hostile round five (issue 43), unbounded work and concurrent imports: --n-boot has a
stated upper bound, a kill by SIGTERM cleans up as Ctrl-C does, and two imports into one
--output never both report success."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hakari._util.checks import MAX_BOOTSTRAP_REPLICATES
from hakari.cli import app
from tests.helpers.cli import assert_one_line, runner

ROOT = Path(__file__).resolve().parents[2]


def _table(tmp_path: Path) -> Path:
    rows = [
        {"model": "m", "task": "x", "template": f"t{t}", "item": i, "score": float(i % 2)}
        for t in range(2)
        for i in range(2)
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_n_boot_has_an_upper_bound(tmp_path: Path) -> None:
    """Item 7: --n-boot 1000000000 on a 4-row table ran 20 s at 1.8 GB."""
    args = ["import", "table", str(_table(tmp_path)), "--output", str(tmp_path / "r")]
    result = runner.invoke(app, [*args, "--n-boot", "1000000000"])
    assert_one_line(
        result.exit_code, result.output, "field --n-boot", f"{MAX_BOOTSTRAP_REPLICATES:,}"
    )
    assert not (tmp_path / "r").exists()


_KILLED = """
import os, signal, sys, time
import hakari.interop.publish as publish
real = publish.samples
def killed(grid):
    for k, sample in enumerate(real(grid)):
        yield sample
        if k == 1:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
publish.samples = killed
from hakari.cli import main
sys.argv = ["hakari", "import", "table", sys.argv[1], "--output", sys.argv[2], "--n-boot", "0"]
main()
"""


def test_sigterm_leaves_no_temporary_files(tmp_path: Path) -> None:
    """Item 7: a kill by SIGTERM left `.tmp` / `.partial` files in the output folder."""
    out = tmp_path / "run"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", _KILLED, str(_table(tmp_path)), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == [], done.stderr


def test_an_import_checks_the_bootstraps_memory_as_run_does(tmp_path: Path, monkeypatch) -> None:
    """Item 7: 100,000 templates × 2 items ran past 55 s at 1.1 GB; `hakari run` checks
    the replicates' memory against the machine's before any work, the import now too."""
    import hakari._util.checks as checks

    monkeypatch.setattr(checks, "available_memory", lambda: 1 << 20)  # 1 MiB left
    args = ["import", "table", str(_table(tmp_path)), "--output", str(tmp_path / "r")]
    result = runner.invoke(app, [*args, "--n-boot", "100000"])
    assert_one_line(result.exit_code, result.output, "field --n-boot", "of memory")
    assert not (tmp_path / "r").exists()


def test_an_import_holds_the_folders_lock_while_it_computes(tmp_path: Path, monkeypatch) -> None:
    """Item 6: two imports into one --output could both exit 0 and print the folder while
    only the second's data was there: the lock was taken only to write, after the
    statistics. It is now held from before the statistics, as `hakari run` holds it."""
    import hakari.interop.publish as publish
    from hakari.errors import HakariInputError
    from hakari.runner.rundir import RunFolderLock

    out = tmp_path / "run"
    seen: list[str] = []
    real = publish.import_results

    def second_import_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            RunFolderLock(out, "--output").release()
            seen.append("a second import got the lock")
        except HakariInputError as exc:
            seen.append(str(exc))
        return real(*args, **kwargs)

    monkeypatch.setattr(publish, "import_results", second_import_meanwhile)
    args = ["import", "table", str(_table(tmp_path)), "--output", str(out), "--n-boot", "0"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len(seen) == 1 and "another hakari command" in seen[0] and "import" in seen[0]


def _rows(models: int, templates: int, items: int) -> list[dict]:
    return [
        {"model": f"m{m}", "task": "x", "template": f"t{t}", "item": i, "score": float(i % 2)}
        for m in range(models)
        for t in range(templates)
        for i in range(items)
    ]


def test_more_models_than_the_pairwise_bound_are_refused_before_the_statistics(
    tmp_path: Path,
) -> None:
    """Item 7, the rest: 150 models ran past 35 s at 1.4 GB (their pairs grow as K²).
    Beyond MAX_COMPARED_MODELS an import with a bootstrap is refused in one line before
    any statistic; with --n-boot 0 nothing is compared and the import runs."""
    from hakari.runner.estimators import MAX_COMPARED_MODELS

    path = tmp_path / "t.jsonl"
    rows = _rows(MAX_COMPARED_MODELS + 1, 2, 2)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["import", "table", str(path), "--output", str(tmp_path / "r")]
    result = runner.invoke(app, [*args, "--n-boot", "100"])
    assert_one_line(
        result.exit_code, result.output, "PATH", f"{MAX_COMPARED_MODELS + 1} models", "at most"
    )
    assert not (tmp_path / "r").exists()
    result = runner.invoke(app, [*args, "--n-boot", "0"])
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_more_templates_than_the_bound_are_refused_before_the_statistics(
    tmp_path: Path,
) -> None:
    """Item 7, the rest: 100,000 templates × 2 items ran past 55 s at 1.1 GB; beyond the
    run's bound on templates (a prompt space's) an import is refused in one line, exit 2."""
    from hakari.tasks.spacesample import MAX_TEMPLATES

    path = tmp_path / "t.jsonl"
    rows = _rows(1, MAX_TEMPLATES + 1, 2)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["import", "table", str(path), "--output", str(tmp_path / "r"), "--n-boot", "0"]
    result = runner.invoke(app, args)
    assert_one_line(result.exit_code, result.output, "PATH", f"{MAX_TEMPLATES + 1:,} templates")
    assert not (tmp_path / "r").exists()
