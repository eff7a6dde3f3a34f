"""The house rules on size, for the whole package: no module over 500 lines, no function
or method over 100 (its whole definition: signature, docstring and body; aim for 60).
`runner/` keeps its own tighter limits (test_run_layout.py). A module or a function that
outgrows these is split along a seam, not granted an exception here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

PACKAGE = REPO / "src" / "hakari"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 100


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


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


def test_the_measure_counts_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    tree = ast.parse(f"@decorator\ndef f(\n    a: int,\n) -> None:\n{body}\n")
    assert long_functions(tree, MAX_FUNCTION_LINES) == [f"f:2 has {MAX_FUNCTION_LINES + 3} lines"]
    assert long_functions(tree, MAX_FUNCTION_LINES + 3) == []
