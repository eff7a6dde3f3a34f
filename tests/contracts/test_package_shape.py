"""The house rules on shape, for the whole package: no module over 500 lines, no function
or method over 100 (its whole definition: signature, docstring and body; aim for 60).
`runner/` keeps its own tighter limits (test_run_layout.py). A module or a function that
outgrows these is split along a seam, not granted an exception here. And every package's
docstring is its map (issue 37 §8): each module or subpackage it names as `name.py` or
`name/` exists, and each that exists is named (so, or as a bare `name`), so that a split
or a new module updates the map in the same commit."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

PACKAGE = REPO / "src" / "hakari"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 100


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py"))


def docstring_map(doc: str, package: Path) -> tuple[set[str], set[str]]:
    """What a package docstring gets wrong: (modules and subpackages of `package` it does
    not name, names it gives as `x.py` or `x/` that are not there). A bare `name` in
    backticks counts as naming a module (a docstring's list of "`summary`: ..."), but only
    the file forms claim that one exists (a bare name may be a function)."""
    as_files = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\.py|/)`", doc))
    bare = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", doc))
    present = {p.stem for p in package.glob("*.py")} - {"__init__", "__main__"}
    present |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return present - as_files - bare, as_files - present


def long_functions(tree: ast.Module, limit: int) -> list[str]:
    """`name:line has N lines` for each function or method of `tree` longer than `limit`
    lines, from its `def` to its last line (decorators not counted)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                out.append(f"{node.name}:{node.lineno} has {length} lines")
    return out


def test_the_package_is_found() -> None:
    assert len(_modules()) > 100, PACKAGE


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_and_functions_stay_small(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f"{path.name}: split it along a seam"
    assert long_functions(ast.parse(text), MAX_FUNCTION_LINES) == []


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_package_docstrings_name_exactly_their_modules(package: Path) -> None:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text("utf-8"))) or ""
    unnamed, absent = docstring_map(doc, package)
    assert not unnamed, f"{package.name}/__init__.py: name {sorted(unnamed)} in its docstring"
    assert not absent, f"{package.name}/__init__.py names modules that are gone: {sorted(absent)}"


def test_the_map_finds_an_unnamed_module_and_a_gone_one(tmp_path: Path) -> None:
    for name in ("__init__.py", "kept.py", "listed.py", "new.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    doc = "Modules: `kept.py` (x), `listed` (y), `sub/`, `gone.py`; `new_function()`."
    assert docstring_map(doc, tmp_path) == ({"new"}, {"gone"})


def test_the_measure_counts_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    tree = ast.parse(f"@decorator\ndef f(\n    a: int,\n) -> None:\n{body}\n")
    assert long_functions(tree, MAX_FUNCTION_LINES) == [f"f:2 has {MAX_FUNCTION_LINES + 3} lines"]
    assert long_functions(tree, MAX_FUNCTION_LINES + 3) == []
