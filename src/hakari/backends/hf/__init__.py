"""The transformers backend (in-process, batched): `HFBackend` and the option checks the
model loader runs before a slow load.

Modules: `backend.py` (the `Backend` protocol on a transformers model), `loading.py`
(model/tokenizer, dtype, device), `rows.py` (per-row stop strings, regex masks,
samplers inside one batch), `scheduling.py` (batching of generation and log-likelihood
requests).

The engine's own parts: `step.py` (one forward pass as `generate` makes it), `prefill.py` (a
generation batch's prefill, shared prefixes once), `decode.py` (the decoding loop over
several prefilled batches), `roomy.py` (a key/value cache layer with room to grow),
`tree.py` (token rows as a tree of shared prefixes), `loglik.py` (log-likelihood rows, each
shared prefix once), `adapter.py` (a LoRA adapter merged into the weights).
"""

from hakari.backends.hf.backend import HFBackend
from hakari.backends.hf.loading import DTYPES, resolve_device, resolve_dtype

__all__ = ["DTYPES", "HFBackend", "resolve_device", "resolve_dtype"]
