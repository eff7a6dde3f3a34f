"""A stand-in for `vllm` (offline `LLM` API) that checks arguments and records calls.

`RESPONDER(prompt_token_ids, params) -> str` gives the model's full raw output (before
stop strings); the stand-in applies `stop` and `max_tokens` the way vLLM does (stop at the
first occurrence of any stop string, even in leading whitespace; the stop string is
left out of the text; `stop_reason` is that string, None at EOS, and the token id of an
end token of the model's generation_config, `END_TOKENS`, where the raw output holds its
text first). Prompt log-probs are a fixed function of the token id and its position:
`fake_logprob(pos, token_id)`. The engine's model config, like vLLM's with transformers ≥
5.18, has no `_commit_hash`; its `dtype` is the one asked for, or for `auto` the
checkpoint's, float32 downcast to bfloat16 (vLLM's rule on a CPU with bf16).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from vllm.engine.arg_utils import EngineArgs
from vllm.inputs import TokensPrompt
from vllm.outputs import CompletionOutput, Logprob, RequestOutput
from vllm.sampling_params import SamplingParams, StructuredOutputsParams

__all__ = ["LLM", "SamplingParams", "StructuredOutputsParams", "TokensPrompt"]
__version__ = "0.33.0+stand-in"

CALLS: list[tuple[str, dict[str, Any]]] = []
RESPONDER: Callable[[list[int], SamplingParams], str] = lambda ids, params: " positive\n"  # noqa: E731

# LLM(...) keyword arguments: its own go into EngineArgs, so do all others (vLLM 0.33).
_LLM_ARGS = {f.name for f in dataclasses.fields(EngineArgs)}
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # vllm/config/lora.py
END_TOKENS = {"<end_of_turn>": 106}  # Gemma's: in generation_config's eos_token_id
# What the engine's child process writes to the shared standard error before the engine
# fails to start (None: it starts): vLLM's parent then raises only its wrapper.
START_FAILURE_LOG: str | None = None


def fake_logprob(pos: int, token_id: int) -> float:
    return -((token_id * 7 + pos) % 11 + 1) / 10


def _engine_dtype(model: str, kwargs: dict[str, Any]) -> torch.dtype:
    asked = kwargs.get("dtype", "auto")
    if asked != "auto":
        return _DTYPES[asked]
    config = json.loads((Path(model) / "config.json").read_text())
    checkpoint = _DTYPES[config.get("dtype") or config.get("torch_dtype") or "float32"]
    return torch.bfloat16 if checkpoint == torch.float32 else checkpoint


class LLM:
    def __init__(self, model: str, **kwargs: Any) -> None:
        unknown = set(kwargs) - _LLM_ARGS
        if unknown:
            raise TypeError(f"LLM() got unexpected keyword arguments {sorted(unknown)}")
        config = kwargs.get("structured_outputs_config")
        if config is not None and config.get("backend") not in (
            "auto", "xgrammar", "guidance", "outlines", "lm-format-enforcer"
        ):  # fmt: skip
            raise ValueError(f"unknown structured outputs backend {config}")
        rank = kwargs.get("max_lora_rank", 16)
        if rank not in MAX_LORA_RANKS:
            raise ValueError(f"max_lora_rank: Input should be one of {MAX_LORA_RANKS}")
        CALLS.append(("LLM", {"model": model, **kwargs}))
        if START_FAILURE_LOG is not None:
            os.write(2, START_FAILURE_LOG.encode())
            raise RuntimeError(
                "Engine core initialization failed. See root cause above. Failed core proc(s): {}"
            )
        self.model = model
        self.kwargs = kwargs
        hf_config = SimpleNamespace(model_type="llama")  # no _commit_hash
        model_config = SimpleNamespace(hf_config=hf_config, dtype=_engine_dtype(model, kwargs))
        engine_core = SimpleNamespace(shutdown=lambda: CALLS.append(("shutdown", {})))
        self.llm_engine = SimpleNamespace(model_config=model_config, engine_core=engine_core)

    def generate(
        self,
        prompts: Sequence[TokensPrompt] | TokensPrompt,
        sampling_params: SamplingParams | Sequence[SamplingParams] | None = None,
        *,
        use_tqdm: bool = True,
        lora_request: Any = None,
    ) -> list[RequestOutput]:
        prompt_list = [prompts] if isinstance(prompts, dict) else list(prompts)
        if isinstance(sampling_params, SamplingParams) or sampling_params is None:
            params_list = [sampling_params or SamplingParams()] * len(prompt_list)
        else:
            params_list = list(sampling_params)
            if len(params_list) != len(prompt_list):
                raise ValueError("The lengths of prompts and sampling_params must be the same.")
        if lora_request is not None and not self.kwargs.get("enable_lora"):
            raise ValueError("LoRA is not enabled! Please set enable_lora=True")
        CALLS.append(
            ("generate", {"prompts": prompt_list, "params": params_list, "lora": lora_request})
        )
        return [
            self._one(i, p["prompt_token_ids"], sp)
            for i, (p, sp) in enumerate(zip(prompt_list, params_list, strict=True))
        ]

    def _one(self, i: int, ids: list[int], params: SamplingParams) -> RequestOutput:
        prompt_logprobs = None
        if params.prompt_logprobs is not None:
            prompt_logprobs = [None] + [
                {tok: Logprob(logprob=fake_logprob(pos, tok), rank=1)}
                for pos, tok in enumerate(ids)
                if pos > 0
            ]
        raw = RESPONDER(ids, params)
        text, finish = raw, "stop"
        stop_reason: str | int | None = None
        stops = [params.stop] if isinstance(params.stop, str) else list(params.stop or [])
        hits: list[tuple[int, str | int]] = [(raw.find(s), s) for s in stops if s in raw]
        hits += [(raw.find(end), token) for end, token in END_TOKENS.items() if end in raw]
        if hits:
            at, which = min(hits, key=lambda hit: hit[0])
            text, stop_reason = raw[:at], which
        limit = params.max_tokens if params.max_tokens is not None else 16
        if len(text) > limit:  # one character a token, in this stand-in
            text, finish, stop_reason = text[:limit], "length", None
        out = CompletionOutput(
            index=0,
            text=text,
            token_ids=list(range(len(text))),
            cumulative_logprob=None,
            logprobs=None,
            finish_reason=finish,
            stop_reason=stop_reason,
        )
        return RequestOutput(
            request_id=str(i),
            prompt=None,
            prompt_token_ids=ids,
            prompt_logprobs=prompt_logprobs,
            outputs=[out],
            finished=True,
        )
