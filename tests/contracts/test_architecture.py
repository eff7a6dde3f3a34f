"""The package's shape, checked: layers and cycles (import-linter, the contracts in
pyproject.toml), no module importing another module's `_private` name, and a `hakari
--help` that loads none of the heavy libraries."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

SRC = REPO / "src"
HEAVY = ("scipy", "pandas", "torch", "transformers", "sklearn", "matplotlib")


def _module_name(path: object) -> str:
    rel = path.relative_to(SRC).with_suffix("")  # type: ignore[attr-defined]
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_imports_another_modules_private_name() -> None:
    found = []
    for path in sorted((SRC / "hakari").rglob("*.py")):
        importer = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if not node.module.startswith("hakari") or node.module == importer:
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            found += [f"{importer}: from {node.module} import {name}" for name in private]
    assert found == []


def test_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    done = subprocess.run(
        [lint, "--no-cache"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_help_loads_no_heavy_library() -> None:
    probe = (
        "import json, sys\n"
        "from hakari.cli import app\n"
        "try:\n"
        "    app(['--help'], prog_name='hakari')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert "Usage" in done.stdout
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


READING_A_RUN_MUST_NOT_LOAD = ("scipy", "hakari.aggregate", "hakari.runner")
# the run's options and their defaults, which every command's help shows (`hakari run`'s
# options read their defaults from them): records, not the code that computes numbers
RUN_OPTIONS = ("hakari.runner", "hakari.runner.options", "hakari.runner.settings")


@pytest.mark.slow
@pytest.mark.parametrize("view", [[], ["--markdown"]], ids=["terminal", "markdown"])
def test_report_of_a_run_loads_neither_scipy_nor_the_aggregation(
    tmp_path: Path, view: list[str]
) -> None:
    """`hakari report RUN_DIR` reads the schema (`hakari.results`) and shows it: the code
    that computed the numbers, and scipy, stay unloaded (the import-linter contract
    "reading-a-run" says the same of the modules' imports; this checks the command)."""
    from tests.helpers import golden_run

    golden_run.run(tmp_path / "run", tmp_path / "cache", bootstrap=True)
    probe = (
        "import json, sys\n"
        "from hakari.cli import app\n"
        "try:\n"
        f"    app(['report', {str(tmp_path / 'run')!r}, *{view!r}], prog_name='hakari')\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        f"banned = {READING_A_RUN_MUST_NOT_LOAD!r}\n"
        f"allowed = {RUN_OPTIONS!r}\n"
        "loaded = [m for m in sys.modules if m not in allowed\n"
        "          and any(m == p or m.startswith(p + '.') for p in banned)]\n"
        "print(json.dumps(sorted(loaded)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert "steady" in done.stdout  # the report was shown
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
