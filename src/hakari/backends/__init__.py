"""Model backends: what answers the prompts, and the one way a run gets one.

Modules: `base.py` (the `Backend` protocol, its requests and results), `options.py`
(`LoadOptions`, the one record of how a run's models are loaded and asked), `registry.py`
(model specs → backends: every form of `--model` is one `SpecForm`), `weights.py` (where a
local model's weights come from, and their identity), `packaged.py` (real models that pip
installs, converted once), `hub.py` (is a hub model there, asked once before the run),
`adapters.py` (`SPEC+adapter:DIR`: LoRA adapters), `cpu.py` (torch's CPU threads of
in-process models: `--threads` and the default), `cache.py` (the response cache, SQLite),
`constrained.py` (regex-constrained decoding for backends that pick tokens), `serving.py`
(what the serving backends share: options and output rules on engines that stop
differently), `fake.py` (a deterministic backend without a model, for tests); one package
per engine: `hf/` (transformers, in process), `vllm/` (vLLM in process), `openai/`
(OpenAI-compatible servers).
"""
