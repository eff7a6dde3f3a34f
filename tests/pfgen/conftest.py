"""Shared fixtures: the pfgen-bench copy in ../shared and small synthetic data folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.paths import SHARED as SHARED_ROOT
from tests.helpers.pfgen_data import write_small_data
from tests.helpers.workers import one_process_at_a_time

SHARED = SHARED_ROOT / "pfgen-bench"


@pytest.fixture(scope="session")
def shared_pfgen() -> Path:
    if not (SHARED / "data" / "Q01.json").is_file():
        pytest.skip(f"pfgen-bench data not found at {SHARED}")
    return SHARED.resolve()


@pytest.fixture(scope="session")
def shared_tables(shared_pfgen: Path, hakari_cache_dir: Path):
    from hakari.pfgen.tables import open_tables

    # in HAKARI_CACHE_DIR or the run's shared cache (tests/conftest.py), built once a run:
    # a second worker waits for the first one's tables, then reads them
    with one_process_at_a_time(hakari_cache_dir, "pfgen-tables"):
        return open_tables(shared_pfgen, hakari_cache_dir)


@pytest.fixture
def small_data(tmp_path: Path) -> Path:
    """A two-question data folder with the 50-example file replaced by two examples."""
    return write_small_data(tmp_path / "data")
