"""The run engine's shape (issue 23 "Done when", issue 37): one loop — the backend factory
and `run_decodings` called from one place each, one finisher that builds a decoding's
numbers — small modules and functions in `runner/`, and the CLI's shared options declared
once. (That every package docstring names exactly its modules is test_package_shape.py's.)"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

RUNNER = REPO / "src" / "hakari" / "runner"


def _trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(RUNNER.rglob("*.py"))}


def _calls(name: str) -> list[str]:
    out = []
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == name:
                    out.append(f"{path.name}:{node.lineno}")
    return out


@pytest.mark.slow
def test_the_factory_and_run_decodings_are_called_from_one_place() -> None:
    assert _calls("run_decodings") == [c for c in _calls("run_decodings") if "loop.py" in c]
    assert len(_calls("run_decodings")) == 1
    assert len(_calls("factory")) == 1 and _calls("factory")[0].startswith("loop.py")
    # one builder of a decoding's numbers and counters, whichever estimator made them
    built = [
        f"{path.relative_to(RUNNER)}:{node.lineno}"
        for path, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", "") == "DecodingResult"
        and not any(k.arg == "skipped" for k in node.keywords)
    ]
    assert [b.split(":")[0] for b in built] == ["estimators/finish.py"], built
    counters = {"refusals", "redacted_secrets", "unreadable_cache_rows", "unencodable_answers"}
    assigned = [
        f"{path.name}:{node.lineno}"
        for path, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Attribute) and target.attr in counters
    ]
    assert assigned == [], assigned  # copied by name in estimators.finish_model only


def test_runner_modules_and_functions_stay_small() -> None:
    for path, tree in _trees().items():
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 300, path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.body
                if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    body = body[1:] or body
                length = (body[-1].end_lineno or 0) - body[0].lineno + 1
                assert length <= 60, f"{path.name}:{node.name} has {length} lines"


def test_hakari_run_takes_grouped_options_and_shared_ones_are_declared_once() -> None:
    from hakari.cli import finetune, pfgen, score
    from hakari.cli.options import CacheDirOption
    from hakari.cli.run import run

    assert len(inspect.signature(run.__wrapped__).parameters) <= 10
    assert len(inspect.signature(run).parameters) == 38  # what typer sees: every option
    for module in (score, finetune, pfgen):
        assert "CacheDirOption" in vars(module), module.__name__
    text = "".join(p.read_text(encoding="utf-8") for p in (REPO / "src/hakari/cli").glob("*.py"))
    assert text.count('"--cache-dir"') == 1
    assert CacheDirOption is not None
