"""`SPEC+adapter:DIR`: a LoRA adapter (peft's folder layout) on top of a local model spec.

The spec is split and the folder checked here, before any model loads, so a missing
folder or one that holds no adapter is one clear error. `AdapterRef.sha256` hashes the
adapter's config and weights: it enters the model identity (cache key and results.json),
so a retrained adapter in the same folder never reuses cached answers, and a copy of
the same adapter elsewhere does. Backends that apply adapters themselves (vLLM's
`LoRARequest`) take `AdapterRef.path`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from hakari._util.infiles import open_input, read_input
from hakari.errors import ModelLoadError

ADAPTER_MARK = "+adapter:"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


@dataclass(frozen=True)
class AdapterRef:
    path: Path  # the adapter folder, resolved
    sha256: str  # of adapter_config.json and the weights file
    base_model: str | None = None  # adapter_config.json's base_model_name_or_path

    @property
    def short_hash(self) -> str:
        return self.sha256[:16]


def split_adapter_spec(spec: str) -> tuple[str, Path | None]:
    """`base+adapter:DIR` → (`base`, DIR); a spec without an adapter → (spec, None)."""
    base, mark, folder = spec.strip().partition(ADAPTER_MARK)
    if not mark:
        return spec.strip(), None
    if not base or not folder.strip():
        raise ModelLoadError(
            f"{spec!r}: expected <model spec>+adapter:<adapter folder>", field="--model"
        )
    return base, Path(folder.strip()).expanduser()


def check_adapter(folder: Path) -> AdapterRef:
    """The adapter in `folder`, or a `ModelLoadError` saying what is missing."""
    if not folder.exists():
        raise ModelLoadError(f"adapter folder {folder} does not exist", field="--model")
    if not folder.is_dir():
        raise ModelLoadError(f"adapter {folder} is not a folder", field="--model")
    config_path = folder / ADAPTER_CONFIG
    if not config_path.is_file():
        raise ModelLoadError(
            f"{folder} is not an adapter folder: no {ADAPTER_CONFIG} (train one with "
            "`hakari finetune`, or give the folder peft's save_pretrained wrote)",
            field="--model",
        )
    try:
        config = json.loads(read_input(config_path, field="--model").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{config_path} is not valid JSON: {exc}", field="--model") from None
    if not isinstance(config, dict) or "peft_type" not in config:
        raise ModelLoadError(
            f"{config_path} has no 'peft_type': not a peft adapter", field="--model"
        )
    weights = [folder / name for name in ADAPTER_WEIGHTS if (folder / name).is_file()]
    if not weights:
        raise ModelLoadError(
            f"{folder} has {ADAPTER_CONFIG} but no weights ({' or '.join(ADAPTER_WEIGHTS)})",
            field="--model",
        )
    if weights[0].suffix == ".safetensors":
        _check_safetensors(weights[0])
    base = config.get("base_model_name_or_path")
    return AdapterRef(
        path=folder.resolve(),
        sha256=_hash_files([config_path, weights[0]]),
        base_model=base.strip() if isinstance(base, str) and base.strip() else None,
    )


def check_adapter_base(adapter: AdapterRef, base_spec: str, names: set[str]) -> None:
    """The adapter was trained on the model it is put on: its config's
    `base_model_name_or_path` is one of the model's `names` (hub ids, folder paths,
    packaged names), compared by their last path component, case aside. A packaged
    model's converted folder is named `<name>-<hash>`. An adapter that does not say is
    taken as it is."""
    if adapter.base_model is None:
        return
    known = {_last_part(n) for n in names if n}
    trained_on = _last_part(adapter.base_model)
    if trained_on in known or any(trained_on.startswith(f"{n}-") for n in known):
        return
    raise ModelLoadError(
        f"the adapter {adapter.path} was trained on {adapter.base_model!r} "
        f"({ADAPTER_CONFIG}: base_model_name_or_path), not on {base_spec!r}; put it on "
        "its own base model",
        field="--model",
    )


def _last_part(name: str) -> str:
    return name.strip().rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1].lower()


def _check_safetensors(path: Path) -> None:
    """The weights file's header reads as safetensors (the header only: no tensor is
    loaded), so a damaged file is found before the base model loads."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as weights:
            if not list(weights.keys()):
                raise ModelLoadError(f"{path} holds no tensors", field="--model")
    except (SafetensorError, OSError) as exc:
        raise ModelLoadError(
            f"{path} is not a readable safetensors file ({exc})", field="--model"
        ) from None


def _hash_files(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        with open_input(path, field="--model") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def parse_adapter_spec(spec: str) -> tuple[str, AdapterRef | None]:
    """Split and check: (`base spec`, the checked adapter or None)."""
    base, folder = split_adapter_spec(spec)
    return base, (check_adapter(folder) if folder is not None else None)
