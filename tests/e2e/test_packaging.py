"""hakari's declared dependencies leave room for vLLM: `pip install 'hakari[vllm]'` must be
able to pick vLLM 0.33.0's exact pins (from its package metadata, 2026-11: torch==2.14.0,
transformers>=5.16.1,<5.21, llguidance>=1.7,<1.8, openai>=2.25). The full resolution
against the package index is `scripts/check_vllm_resolves.py` (uv on the index, ~15 s;
.ci/run runs it and fails on a conflict)."""

from __future__ import annotations

import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.helpers.paths import REPO

PYPROJECT = REPO / "pyproject.toml"
# versions vLLM 0.33.0 accepts, one inside each of its ranges
VLLM_033_PICKS = {
    "torch": "2.14.0",
    "transformers": "5.20.0",
    "llguidance": "1.7.3",
    "openai": "3.54.0",
}


def requirements() -> dict[str, Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for r in project["optional-dependencies"]["vllm"]]
    return {r.name.lower(): r for r in reqs}


@pytest.mark.parametrize(("name", "version"), sorted(VLLM_033_PICKS.items()))
def test_hakari_admits_vllm_pins(name: str, version: str) -> None:
    req = requirements()[name]
    assert req.specifier.contains(Version(version)), f"{req} excludes vLLM 0.33's {version}"


def test_vllm_extra_and_no_exact_torch_pin() -> None:
    reqs = requirements()
    assert reqs["vllm"].specifier.contains(Version("0.33.0"))
    assert not any(spec.operator == "==" for spec in reqs["torch"].specifier)
