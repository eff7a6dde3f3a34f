"""Model specs, the packaged-model conversion cache, and their error messages."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hakari.backends import packaged
from hakari.backends.packaged import (
    MARKER,
    PACKAGED_MODELS,
    SMOLLM2,
    PackagedModel,
    _FileInPackage,
    converted_model,
)
from hakari.backends.registry import list_packaged_models, load_backend
from hakari.backends.weights import folder_revision
from hakari.errors import ModelLoadError


def _no_conversion(*args: object) -> None:
    raise AssertionError("converted again")


def test_conversion_is_cached_by_gguf_hash(
    smollm2_folder: Path, hakari_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = json.loads((smollm2_folder / MARKER).read_text())
    assert smollm2_folder.name == f"smollm2-135m-{marker['gguf_sha256'][:16]}"
    monkeypatch.setattr(packaged, "_convert", _no_conversion)
    again = converted_model(SMOLLM2, hakari_cache_dir)
    assert again.folder == smollm2_folder and again.gguf_sha256 == marker["gguf_sha256"]
    assert not any(p.name.startswith(".tmp-") for p in smollm2_folder.parent.iterdir())


@pytest.mark.slow
def test_packaged_identity_is_the_gguf_hash(smollm2_backend: object, smollm2_folder: Path) -> None:
    marker = json.loads((smollm2_folder / MARKER).read_text())
    identity = smollm2_backend.identity  # type: ignore[attr-defined]
    assert (identity.name, identity.revision) == ("smollm2-135m", marker["gguf_sha256"])
    assert identity.dtype == "float32"


def test_the_converted_tokenizer_ends_where_the_model_does(smollm2_folder: Path) -> None:
    """The chat's end, `<|im_end|>`, not its start (transformers 5.17 read the GGUF's
    BOS as the EOS: one reason hakari needs 5.19)."""
    from transformers import AutoConfig, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2_folder)
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.eos_token_id == AutoConfig.from_pretrained(smollm2_folder).eos_token_id


def test_incomplete_folder_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder without its marker (e.g. copied by hand, half deleted) is not trusted."""
    sha = packaged._GGUF_SOURCES[SMOLLM2.name].sha256()
    folder = tmp_path / "models" / f"smollm2-135m-{sha[:16]}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    calls: list[Path] = []

    def fake_convert(model: PackagedModel, gguf: Path, out: Path, digest: str) -> None:
        calls.append(gguf)
        out.mkdir(exist_ok=True)  # the staged folder
        (out / MARKER).write_text(json.dumps({"gguf_sha256": digest}))

    monkeypatch.setattr(packaged, "_convert", fake_convert)
    result = converted_model(SMOLLM2, tmp_path)
    assert len(calls) == 1 and calls[0].name.endswith(".gguf")
    assert result.folder == folder and (folder / MARKER).is_file()
    assert not (folder / "config.json").exists()
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]


def test_missing_package_names_the_pip_command() -> None:
    ghost = PackagedModel(
        name="ghost",
        description="",
        package="hakari_no_such_package",
        pip_install="pip install hakari-ghost==1.0",
        upstream="",
        chat_template=False,
        model_type="llama",
    )
    with pytest.raises(ModelLoadError, match=r"pip install hakari-ghost==1\.0"):
        _FileInPackage(ghost, "ghost.gguf").sha256()


def test_list_packaged_models() -> None:
    listed = {m.name: installed for m, installed in list_packaged_models()}
    assert listed["smollm2-135m"] is True
    assert set(listed) == {"smollm2-135m", "gemma3-270m"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-17", r"unknown model 'gpt-17'.*smollm2-135m.*hf:<local folder or hub id>"),
        ("HuggingFaceTB/SmolLM2-135M", r"did you mean hf:HuggingFaceTB/SmolLM2-135M\?"),
        ("hf:", r"expected hf:<local folder or hub id>\[@revision\]"),
        ("hf:owner/name@", r"expected hf:"),
        ("hf:./no/such/folder", r"neither a local folder nor a hub id"),
    ],
)
def test_bad_specs_give_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(ModelLoadError, match=message):
        load_backend(spec)


def test_bad_options_fail_before_loading() -> None:
    with pytest.raises(ModelLoadError, match="unknown dtype 'float8'"):
        load_backend("smollm2-135m", dtype="float8")
    with pytest.raises(ModelLoadError, match="unknown device"):
        load_backend("smollm2-135m", device="tpu-ish")


def test_local_folder_errors(
    tiny_random_folder: Path,
) -> None:
    with pytest.raises(ModelLoadError, match="takes no @revision"):
        load_backend(f"hf:{tiny_random_folder}@main")
    with pytest.raises(ModelLoadError, match="holds no model files"):
        load_backend(f"hf:{tiny_random_folder.parent}")


def test_folder_revision_changes_when_a_file_changes(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"x" * 10)
    first = folder_revision(tmp_path)
    assert first == folder_revision(tmp_path) and first.startswith("local-")
    os.utime(tmp_path / "model.safetensors", ns=(1, 1))
    assert folder_revision(tmp_path) != first
    (tmp_path / "notes.md").write_text("not part of the model")
    second = folder_revision(tmp_path)
    (tmp_path / "notes.md").write_text("changed")
    assert folder_revision(tmp_path) == second


def test_hf_folder_loads_with_its_fingerprint(
    tiny_random_backend: object, tiny_random_folder: Path
) -> None:
    identity = tiny_random_backend.identity  # type: ignore[attr-defined]
    assert identity.name == str(tiny_random_folder.resolve())
    assert identity.revision == folder_revision(tiny_random_folder)
    assert identity.prompt_format == "chat"  # the SmolLM2 tokenizer has a chat template


@pytest.mark.slow
def test_packaged_chat_template_flags_match_the_converted_tokenizers(
    smollm2_backend: object, gemma_backend: object
) -> None:
    """The table `--prompt-format chat` is checked against before a run (no load) says
    what the converted tokenizers really carry."""
    from hakari.backends.hf import HFBackend
    from hakari.backends.registry import has_chat_template

    for spec, backend in (("smollm2-135m", smollm2_backend), ("gemma3-270m", gemma_backend)):
        assert isinstance(backend, HFBackend)
        assert has_chat_template(spec) is backend.supports_chat, spec
        # and `model_type`, from which fine-tuning checks --target-modules before a load
        assert PACKAGED_MODELS[spec].model_type == backend.model.config.model_type, spec


def test_chat_template_of_a_local_folder_is_read_from_its_files(tmp_path: Path) -> None:
    from hakari.backends.registry import has_chat_template

    folder = tmp_path / "m"
    folder.mkdir()
    assert has_chat_template(f"hf:{folder}") is None  # no tokenizer config: unknown
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 8}))
    assert has_chat_template(f"hf:{folder}") is False
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ x }}"}))
    assert has_chat_template(f"hf:{folder}") is True
    (folder / "tokenizer_config.json").write_text("{}")
    (folder / "chat_template.jinja").write_text("{{ x }}")
    assert has_chat_template(f"hf:{folder}") is True
    assert has_chat_template("hf:owner/model") is None
    assert has_chat_template("openai:m@http://localhost:8000/v1") is None
