"""The fence around transformers' internals (`backends/hf/internals.py`): every call the
engine makes past transformers' public model and tokenizer API goes through it, and each
of them does what the engine relies on with the transformers installed.

Self-contained (a tiny random Llama and Gemma 3 built here, no tokenizer, no packaged
model) so that `scripts/check_transformers_range.sh` runs it in seconds on every
transformers release pyproject.toml allows.
"""

from __future__ import annotations

import ast
import inspect
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import transformers
from packaging.requirements import Requirement
from packaging.version import Version
from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

from hakari.backends.hf import internals
from hakari.backends.hf.internals import (
    Forward,
    PlainLayer,
    builds_plain_cache,
    cache_layers,
    copy_cache,
    is_plain,
    keep_rows,
    keys_values,
    release_layer,
    repeat_rows,
    set_cache_layers,
)
from hakari.backends.hf.roomy import RoomyLayer, make_roomy
from hakari.backends.hf.step import ModelStep, positions_of
from tests.helpers.paths import REPO

HF = REPO / "src" / "hakari" / "backends" / "hf"
# attributes of transformers' caches, layers and models that only internals.py may touch
FENCED = {
    "layers",
    "batch_select_indices",
    "batch_repeat_interleave",
    "prepare_inputs_for_generation",
    "is_initialized",
}


def test_the_installed_transformers_is_in_the_range_pyproject_allows() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (spec,) = [r for r in map(Requirement, project["dependencies"]) if r.name == "transformers"]
    assert Version(transformers.__version__) in spec.specifier, spec


def _imports_and_attributes(path: Path) -> tuple[set[str], set[str]]:
    """The transformers modules `path` imports from, and the fenced attributes it reads
    or calls on anything but `self` (a layer class implements its own)."""
    modules: set[str] = set()
    touched: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformers"):
            modules.add(node.module or "")
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names if a.name.startswith("transformers"))
        elif isinstance(node, ast.Attribute) and node.attr in FENCED:
            if not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                touched.add(node.attr)
    return modules, touched


def test_only_the_fence_reaches_into_transformers() -> None:
    """Outside internals.py the engine imports only transformers' top-level public names
    and touches no cache or generation internals."""
    for path in sorted(HF.glob("*.py")):
        modules, touched = _imports_and_attributes(path)
        if path.name == "internals.py":
            assert touched, "the fence itself should be where the internals are"
            continue
        assert modules <= {"transformers"}, (path.name, modules)
        assert not touched, (path.name, touched)


@pytest.fixture(scope="module")
def llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        initializer_range=0.5,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture(autouse=True)
def _inference_mode() -> Iterator[None]:
    """As the engine runs the model (`DecodePool`, `TreeWalk`)."""
    with torch.inference_mode():
        yield


def _prefill(model: LlamaForCausalLM, rows: int = 3, width: int = 6) -> tuple[ModelStep, object]:
    step = ModelStep(model)
    ids = torch.arange(rows * width).reshape(rows, width) % 60 + 2
    attention = torch.ones_like(ids)
    _, cache = step(ids, attention, positions_of(attention), cache=None)
    return step, cache


def test_a_plain_models_forward_and_cache(llama: LlamaForCausalLM) -> None:
    forward = Forward.of(llama)
    assert forward.takes_positions and forward.takes_logits_to_keep
    assert forward.cache_name in inspect.signature(llama.prepare_inputs_for_generation).parameters
    assert builds_plain_cache(llama)
    _, cache = _prefill(llama)
    layers = cache_layers(cache)
    assert len(layers) == 2 and all(is_plain(layer) for layer in layers)
    keys, values = keys_values(layers[0])
    assert keys.shape == values.shape and keys.shape[0] == 3 and keys.shape[2] == 6


def test_rows_kept_repeated_and_copied(llama: LlamaForCausalLM) -> None:
    _, cache = _prefill(llama)
    first = keys_values(cache_layers(cache)[0])[0].clone()
    copied = copy_cache(cache)
    keep_rows(cache, torch.tensor([2, 0]))
    kept = keys_values(cache_layers(cache)[0])[0]
    assert torch.equal(kept, first[[2, 0]])
    repeat_rows(cache, 3)
    assert keys_values(cache_layers(cache)[0])[0].shape[0] == 6
    assert torch.equal(keys_values(cache_layers(copied)[0])[0], first)  # the copy kept its rows
    release_layer(copied, 0)
    assert cache_layers(copied)[0] is None


def test_a_decode_step_on_roomy_layers_is_the_plain_one(llama: LlamaForCausalLM) -> None:
    """The roomy layers (a subclass of `PlainLayer`, set in by `set_cache_layers`) give the
    model the same keys and values: the next step's logits are the plain cache's."""
    step, plain = _prefill(llama)
    roomy = copy_cache(plain)
    assert make_roomy(roomy)
    assert all(type(layer) is RoomyLayer for layer in cache_layers(roomy))
    assert issubclass(RoomyLayer, PlainLayer)
    ids = torch.tensor([[5], [6], [7]])
    attention = torch.ones(3, 7, dtype=torch.long)
    positions = torch.full((3, 1), 6)
    want, plain = step(ids, attention, positions, cache=plain)
    got, roomy = step(ids, attention, positions, cache=roomy)
    assert torch.equal(want, got)
    assert all(type(layer) is RoomyLayer for layer in cache_layers(roomy))
    set_cache_layers(roomy, [None, None])
    assert cache_layers(roomy) == [None, None]


def test_the_layer_interface_roomy_layer_implements_is_still_there() -> None:
    """`RoomyLayer` overrides these methods of transformers' layer: each must still exist
    with the parameters the override takes."""
    for name in ("update", "batch_select_indices", "batch_repeat_interleave", "crop"):
        theirs = list(inspect.signature(getattr(PlainLayer, name)).parameters)
        ours = list(inspect.signature(getattr(RoomyLayer, name)).parameters)
        assert theirs[: len(ours)][:2] == ours[:2], (name, theirs, ours)
    for name in ("get_seq_length", "get_mask_sizes", "lazy_initialization"):
        assert callable(getattr(PlainLayer, name, None)), name


def test_a_sliding_window_model_is_not_a_plain_cache() -> None:
    """Gemma 3's local layers keep a window, not every position: such a cache is never
    stacked or given room (the engine decodes a batch at a time)."""
    config = Gemma3TextConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        sliding_window=4,
        layer_types=["sliding_attention", "full_attention"],
    )
    model = Gemma3ForCausalLM(config).eval()
    assert not builds_plain_cache(model)
    _, cache = _prefill(model)  # type: ignore[arg-type]
    assert not all(is_plain(layer) for layer in cache_layers(cache))
    assert not make_roomy(cache)


def test_every_name_of_the_fence_is_tested() -> None:
    public = {
        name
        for name, value in vars(internals).items()
        if not name.startswith("_")
        and getattr(value, "__module__", None) in (internals.__name__, "transformers.cache_utils")
        and name not in ("DynamicCache", "DynamicLayer", "PreTrainedModel")
    }
    tested = set(globals())
    assert public <= tested, public - tested
