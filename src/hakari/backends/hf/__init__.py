"""The transformers backend (in-process, batched): `HFBackend` and the option checks the
model loader runs before a slow load.

Its scope is the CPU and the reference path: any transformers model, in this process,
every request setting hakari has (per-row regex masks, stop strings, character budgets,
log-likelihoods of given continuations), answers token for token those of `generate`.
GPU throughput is vLLM's job (`backends/vllm/`). It is an engine of its own because
transformers' continuous batching (`generate_batch`) has none of those per-request
settings: docs/architecture.md, "The transformers backend: scope and why it is an
engine", with the numbers.

Modules:
- `backend.py`: `HFBackend`, the `Backend` protocol on a transformers model (prompts,
  chat templates, the generation and log-likelihood entry points);
- `loading.py`: the model and tokenizer, dtype, device, EOS ids, context length, the
  default batch size and the decode pool's limits;
- `adapter.py`: a LoRA adapter merged into the base model (peft);
- `scheduling.py`: generation batches (distinct prompts, token or length order), the
  log-likelihood scheduler, passes of similar length, left padding;
- `prefixes.py`: the token prefixes rows share, as neighbour groups and as a tree;
- `tree.py`: a batch run as that tree, each shared part once;
- `prefill.py`: a generation batch's prefill (one pass, two passes, or the tree);
- `decode.py`: `DecodePool`, the decoding loop (continuous batching: the live rows of
  several batches in one step, each row handed on in the step it ends);
- `rows.py`: each row's stop strings, character budget, regex mask and sampler;
- `roomy.py`: a key/value layer with room to grow, and stacking rows left-padded;
- `step.py`: one forward pass as `generate` makes it;
- `loglik.py`: log-likelihood rows through the tree (or in runs from the root);
- `fasttok.py`: the Rust tokenizer called directly where it gives the wrapper's ids
  and text (encoding batches, decoding rows);
- `pairs.py`: tokenizing in batches: prompts, and log-likelihood requests into model
  inputs and targets by lm-evaluation-harness's boundary rule;
- `splitting.py`: where a tokenizer's ids split exactly at a line break, so a context
  is tokenized once for all its continuations;
- `passcost.py`: a forward pass's cost on the device (fixed, per token), measured at
  load, and attention's share, which cut the batches' passes;
- `internals.py`: every use of transformers past its public API (the cache's layers,
  the decode step's input preparation), the one place a transformers release can break.
"""

from hakari.backends.hf.backend import HFBackend
from hakari.backends.hf.loading import DTYPES, resolve_device, resolve_dtype

__all__ = ["DTYPES", "HFBackend", "resolve_device", "resolve_dtype"]
