"""OpenAI-compatible servers (vLLM, SGLang, `transformers serve`, hosted APIs) as a
hakari backend: `openai:<model>@<base_url>[,<base_url>...]`.

Modules: `spec.py` (the spec, the API key and its redaction), `protocol.py` (request
bodies, response parsing), `faults.py` (what is retried, one-line fatal messages),
`pool.py` (replicas, bounded concurrency, retries, failover), `identity.py` (before the
first prompt: every replica serves the model, whose revision comes from what the servers
report), `backend.py` (the `Backend` protocol).
"""

from hakari.backends.openai.backend import OpenAIBackend
from hakari.backends.openai.spec import PREFIX, OpenAISpec, parse_spec

__all__ = ["PREFIX", "OpenAIBackend", "OpenAISpec", "parse_spec"]
