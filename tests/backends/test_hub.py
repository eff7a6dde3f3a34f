"""A hub model is checked before the run with one bounded metadata request
(`hakari.backends.hub`): not cached and not reachable, offline mode without a copy, an unknown
repo or revision are one line each; a cached copy loads without the network wait."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest
from typer.testing import CliRunner

from hakari.backends import hub
from hakari.backends.registry import check_spec
from hakari.backends.weights import resolve_source
from hakari.cli import app
from hakari.errors import ModelLoadError


class FakeHub:
    def __init__(self, *, cached: bool, answer: BaseException | None) -> None:
        self.cached = cached
        self.answer = answer
        self.calls: list[dict[str, Any]] = []

    def try_to_load_from_cache(self, repo_id: str, filename: str, revision: str | None = None):
        return f"/cache/{repo_id}/{filename}" if self.cached else None

    def model_info(self, repo_id: str, **kwargs: Any) -> object:
        self.calls.append({"repo_id": repo_id, **kwargs})
        if self.answer is not None:
            raise self.answer
        return object()


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    hub.hub_model.cache_clear()
    yield
    hub.hub_model.cache_clear()


def install(monkeypatch: pytest.MonkeyPatch, fake: FakeHub, offline: bool = False) -> None:
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", fake.try_to_load_from_cache)
    monkeypatch.setattr(huggingface_hub, "model_info", fake.model_info)
    monkeypatch.setattr(huggingface_hub.constants, "is_offline_mode", lambda: offline)


def not_found(kind: str) -> BaseException:
    from huggingface_hub import errors

    cls = getattr(errors, kind)
    exc = cls.__new__(cls)
    Exception.__init__(exc, "404")
    return exc


def test_unreachable_and_not_cached_is_one_line_after_one_bounded_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeHub(cached=False, answer=OSError("Name or service not known"))
    install(monkeypatch, fake)
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache and the hub"):
        check_spec("hf:owner/model@v1")
    assert fake.calls == [
        {"repo_id": "owner/model", "revision": "v1", "timeout": hub.PROBE_TIMEOUT}
    ]


def test_cached_copy_loads_locally_when_the_hub_is_unreachable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install(monkeypatch, FakeHub(cached=True, answer=OSError("no route to host")))
    check_spec("hf:owner/model")
    source = resolve_source("hf:owner/model")
    assert source.local_files_only and source.source == "owner/model"


def test_offline_mode_never_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeHub(cached=False, answer=None)
    install(monkeypatch, fake, offline=True)
    with pytest.raises(ModelLoadError, match="HF_HUB_OFFLINE"):
        check_spec("hf:owner/model")
    assert fake.calls == []
    hub.hub_model.cache_clear()
    install(monkeypatch, FakeHub(cached=True, answer=None), offline=True)
    assert resolve_source("hf:owner/model").local_files_only


@pytest.mark.parametrize(
    ("kind", "needle"),
    [("RepositoryNotFoundError", "no such model"), ("RevisionNotFoundError", "no revision")],
)
def test_unknown_repo_or_revision(monkeypatch: pytest.MonkeyPatch, kind: str, needle: str) -> None:
    install(monkeypatch, FakeHub(cached=True, answer=not_found(kind)))
    with pytest.raises(ModelLoadError, match=needle):
        check_spec("hf:owner/model@v9")


def test_reachable_hub_downloads_as_usual_and_is_asked_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeHub(cached=False, answer=None)
    install(monkeypatch, fake)
    check_spec("hf:owner/model")
    assert resolve_source("hf:owner/model").local_files_only is False
    assert len(fake.calls) == 1  # preflight and loading share the answer


def test_cli_with_the_real_hub_client_fails_before_any_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No monkeypatched hub: offline here (and in CI) the real client fails at once; on a
    machine with a network the repo does not exist. Either way one line, exit 2, and the
    packaged model before it never loads."""
    loaded: list[str] = []
    monkeypatch.setattr(
        "hakari.backends.registry.load_backend", lambda spec, **kw: loaded.append(spec)
    )
    args = ["run", "--model", "smollm2-135m", "--model", "hf:hakari-no-such-owner/no-such-model",
            "--limit", "1", "--no-cache", "--n-boot", "0"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "hf:hakari-no-such-owner/no-such-model" in lines[0] and loaded == []


def hub_cache(root: Path, repo_id: str, commit: str, files: Path) -> Path:
    """A Hugging Face hub cache holding `files` as `repo_id`'s snapshot at `commit`, with
    `main` pointing at it (the layout `hf download` leaves)."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for item in files.iterdir():
        (snapshot / item.name).symlink_to(item)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return root


def test_cached_commit_reads_the_snapshot_a_revision_resolves_to(tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    files = tmp_path / "files"
    files.mkdir()
    (files / "config.json").write_text("{}")
    cache = str(hub_cache(tmp_path / "hub", "owner/model", commit, files))
    assert hub.cached_commit("owner/model", None, cache_dir=cache) == commit
    assert hub.cached_commit("owner/model", "main", cache_dir=cache) == commit
    assert hub.cached_commit("owner/model", commit, cache_dir=cache) == commit
    assert hub.cached_commit("owner/model", "v2", cache_dir=cache) is None
    assert hub.cached_commit("owner/other", None, cache_dir=cache) is None


@pytest.mark.slow
def test_a_hub_model_is_identified_by_the_commit_it_loaded(
    tmp_path: Path, smollm2_folder: Path
) -> None:
    """transformers ≥ 5.18 no longer keeps config._commit_hash: the identity (and so the
    cache key and results.json) must still name the commit, not just 'main'. Loads
    hf:owner/model from a hub cache on disk, offline, in a fresh process."""
    commit = "89abcdef0123456789abcdef0123456789abcdef"
    cache = hub_cache(tmp_path / "hub", "hakari-test/smollm2", commit, smollm2_folder)
    code = (
        "from hakari.backends.registry import load_backend\n"
        "b = load_backend('hf:hakari-test/smollm2', device='cpu')\n"
        "print(b.identity.name, b.identity.revision)\n"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["hakari-test/smollm2", commit]
