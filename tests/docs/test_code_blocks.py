"""Every code block of README.md and of the guide's pages (the "Guide" section of
mkdocs.yml) runs, each page's blocks in order in one fresh folder that looks like a clone
after the README's install (`.venv` and the repository's files, `../shared` beside it).
How a block is shrunk or why it is not run is a hidden note above it (tests/helpers/doc_blocks.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.doc_blocks import RUN, SHOWN, Block, blocks
from tests.helpers.paths import REPO, SHARED

BLOCK_TIMEOUT_S = 1800  # a loaded 2-core machine runs a shrunk block in minutes, not seconds
MAX_SKIPPED = 6
"""Blocks that need a GPU, a server or the network; a new one must say why, and the list
stays short (it is not a way out of testing an example)."""


def guide_pages() -> list[str]:
    """README.md and every page of the site's Guide section, as paths from the repo root."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    guide = next(item["Guide"] for item in config["nav"] if "Guide" in item)
    pages = [next(iter(entry.values())) for entry in guide]
    return ["README.md", *(f"docs/{page}" for page in pages)]


def all_blocks() -> list[Block]:
    return [b for page in guide_pages() for b in blocks(REPO / page, page)]


def test_every_block_is_labelled_and_few_are_skipped() -> None:
    found = all_blocks()
    unlabelled = [b.where for b in found if b.language not in RUN + SHOWN]
    assert not unlabelled, f"fences need a language ({', '.join(RUN + SHOWN)}): {unlabelled}"
    skipped = [f"{b.where}: {b.skip}" for b in found if b.skip]
    assert len(skipped) <= MAX_SKIPPED, "\n".join(skipped)
    assert sum(1 for b in found if b.language in RUN and not b.skip) >= 10


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A folder like a fresh clone after `bash scripts/install.sh`: the repository's files
    (linked), `.venv` (this interpreter's environment), `../shared` beside it."""
    work = tmp_path / "hakari"
    work.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in {".git", ".venv", "runs", "site"}:
            (work / entry.name).symlink_to(entry)
    (work / ".venv").symlink_to(Path(sys.prefix))
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    return work


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO / "src")
    env["HAKARI_CACHE_DIR"] = str(cache)  # holds the converted packaged models
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.update(COLUMNS="100", NO_COLOR="1")
    return env


def _command(block: Block, work: Path) -> list[str]:
    code = block.runnable()
    if block.language == "bash":
        return ["bash", "-e", "-o", "pipefail", "-c", code]
    if block.language == "python":
        return [sys.executable, "-c", code]
    task = work / f"task-{block.line}.yaml"
    task.write_text(code, encoding="utf-8")
    return [sys.executable, "-m", "hakari", "tasks", "show", str(task)]


def _run_block(block: Block, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One block in a session of its own: a block past its timeout is killed with every
    process it started (`subprocess.run` kills bash only, and its `hakari` child went on
    burning the CPU after the test had failed)."""
    cmd = _command(block, work)
    proc = subprocess.Popen(
        cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(
            f"{block.where} ran past {BLOCK_TIMEOUT_S} s:\n{block.runnable()}\n"
            f"--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}"
        ) from None
    finally:
        with contextlib.suppress(ProcessLookupError):  # what a finished block left behind
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.slow
@pytest.mark.parametrize("page", guide_pages())
def test_the_page_runs_as_written(
    page: str, clone: Path, hakari_cache_dir: Path, smollm2_folder: Path
) -> None:
    page_blocks = [b for b in blocks(REPO / page, page) if b.language in RUN and not b.skip]
    if not page_blocks:
        pytest.skip(f"{page} has no code to run")
    if not SHARED.is_dir() and any("../shared" in b.code for b in page_blocks):
        pytest.skip(f"{page} uses ../shared, which is absent")
    env = _env(hakari_cache_dir)
    for block in page_blocks:
        done = _run_block(block, clone, env)
        assert done.returncode == 0, (
            f"{block.where} failed (exit {done.returncode}):\n{block.runnable()}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )
