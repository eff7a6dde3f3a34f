"""The transformers backend (in-process, batched): `HFBackend` and the option checks the
model loader runs before a slow load.

Modules: `backend.py` (the `Backend` protocol on a transformers model), `loading.py`
(model/tokenizer, dtype, device), `rows.py` (per-row stop strings, regex masks,
samplers inside one batch), `scheduling.py` (batching of generation and log-likelihood
requests).
"""

from hakari.backends.hf.backend import HFBackend
from hakari.backends.hf.loading import DTYPES, resolve_device, resolve_dtype

__all__ = ["DTYPES", "HFBackend", "resolve_device", "resolve_dtype"]
