"""The README stays short and its commands stay CI's; the documentation site builds with
`--strict` (no broken link or anchor) and its reference pages cover every command and
every results.json field; no file names a docs page that does not exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.doc_blocks import blocks
from tests.helpers.paths import REPO, script_module

README_MAX_BYTES = 10_000
INSTALL = "bash scripts/install.sh"
TEST_COMMAND = ".venv/bin/python -m pytest"


def hooks() -> ModuleType:
    return script_module(REPO / "scripts/mkdocs_hooks.py", "mkdocs_hooks")


def test_readme_fits_on_a_screen_or_two() -> None:
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move details to docs/"


def test_ci_runs_the_readme_commands() -> None:
    first = blocks(REPO / "README.md", "README.md")[0].code
    assert f"{INSTALL} && .venv/bin/hakari run" in first and TEST_COMMAND in first
    ci = (REPO / ".ci/run").read_text(encoding="utf-8")
    assert INSTALL in ci and TEST_COMMAND in ci
    assert "mkdocs build --strict" in ci


def test_readme_links_point_at_files() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links to the docs"
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, missing


def test_no_file_names_a_missing_docs_page() -> None:
    """Comments and docs cite docs pages by path (`docs/pfgen.md`): each must exist (paths
    under `../shared/docs/` are the project's notes beside the checkout, not ours)."""
    cited = re.compile(r"(?<![\w./-])(docs/[\w./-]+\.(?:md|html))")
    roots = ["src", "tests", "benchmarks", "scripts", "docs", ".ci"]
    files = [REPO / "README.md", REPO / "mkdocs.yml", REPO / "pyproject.toml"]
    files += [p for root in roots for p in (REPO / root).rglob("*") if p.is_file()]
    missing = []
    for path in files:
        if path.suffix not in {".py", ".md", ".yml", ".yaml", ".toml", ".sh", ""}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for match in cited.finditer(text):
            if not (REPO / match.group(1)).exists():
                missing.append(f"{path.relative_to(REPO)}: {match.group(1)}")
    assert not missing, "\n".join(missing)


@pytest.mark.slow
def test_the_cli_reference_has_every_command() -> None:
    import typer

    from hakari.cli import app

    page = hooks().render_cli()
    root = typer.main.get_command(app)
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        assert f"## hakari {name}\n" in page
        for sub in getattr(command, "commands", {}):
            assert f"### hakari {name} {sub}\n" in page
    assert "--n-boot" in page and "--decoding" in page  # options, not just headings


def test_the_results_reference_has_every_field() -> None:
    from hakari.results import EvalResults

    module = hooks()
    records: list[type] = []
    module._collect(EvalResults, records)
    names = {r.__name__ for r in records}
    assert {"EvalResults", "RunConfig", "DecodingResult", "AggregateStats"} <= names
    page = module.render_results_json()
    for record in records:
        section = page.split(f"## {record.__name__}\n", 1)[1].split("\n## ", 1)[0]
        for name, field in record.model_fields.items():  # type: ignore[attr-defined]
            assert f"| `{field.alias or name}` |" in section, (record.__name__, name)
    assert "Sharpe score `mean / (alpha * std + 1)`" in page  # the docstrings, not just names


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "site/reference/cli/index.html").is_file()
    assert (tmp_path / "site/reference/results-json/index.html").is_file()
