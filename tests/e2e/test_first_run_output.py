"""The first run converts the packaged model (issue 38 §11): transformers de-quantises the
GGUF under a tqdm bar of its own, which `--quiet` and `--json` must not print (scripts
read their output) and a person at a terminal gets as one status line instead."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hakari.cli.common import QUIET_LIBRARIES
from tests.helpers.terminal import screen_of

BAR_TEXT = "Converting and de-quantizing GGUF tensors"
# the same bar transformers draws while it loads a GGUF, made where the CLI's settings
# apply (a fresh process: tqdm reads them when it is imported)
GGUF_BAR = f"""
import sys
from hakari.cli.common import quiet_libraries
quiet_libraries(verbose=sys.argv[1] == "verbose")
from transformers import modeling_gguf_pytorch_utils as gguf
for _ in gguf.tqdm(range(3), desc="{BAR_TEXT}..."):
    pass
"""


@pytest.fixture(autouse=True)
def users_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands start from a shell that never set the quieting variables: a command
    run in this process before (`CliRunner`) set them in os.environ, and a child would
    inherit them (--verbose would show no bar, --json would be quiet without the fix)."""
    for name in QUIET_LIBRARIES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["quiet", "verbose"])
def test_the_gguf_bar_shows_only_with_verbose(mode: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", GGUF_BAR, mode], capture_output=True, text=True, check=True
    )
    assert (BAR_TEXT in done.stderr) == (mode == "verbose"), done.stderr


def one_row(cache: Path, out: Path, *flags: str) -> list[str]:
    return [
        sys.executable, "-m", "hakari", "run", "--tasks", "demo_sentiment_en",
        "--templates", "0-0", "--limit", "1", "--decoding", "greedy", "--n-boot", "0",
        "--cache-dir", str(cache), "--output", str(out), *flags,
    ]  # fmt: skip


@pytest.mark.slow
def test_json_prints_results_only_while_the_model_converts(tmp_path: Path) -> None:
    done = subprocess.run(
        one_row(tmp_path / "cache", tmp_path / "run", "--json"), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout)["models"]["smollm2-135m"]
    assert (tmp_path / "cache" / "models").is_dir()  # it did convert


@pytest.mark.slow
@pytest.mark.exclusive
def test_a_terminal_gets_a_status_line_for_the_conversion(tmp_path: Path) -> None:
    code, lines = screen_of(one_row(tmp_path / "cache", tmp_path / "run"), timeout=600)
    screen = "\n".join(lines)
    assert code == 0, screen
    assert "converting smollm2-135m from its GGUF to a Hugging Face folder, once …" in lines
    assert BAR_TEXT not in screen
