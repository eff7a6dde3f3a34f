"""Reward-model scores: a transformers sequence-classification model on (prompt, answer).

IFTEval used OpenAssistant's `reward-model-deberta-v3-large-v2` this way: the tokenizer
encodes the pair `(prompt, answer)`, the single logit is the reward. `reward` is that raw
score of the prediction; `reward_softmax` is the paper's "softmaxed RM",
`sigmoid(r_pred - r_ref)`, the probability that the prediction beats the reference
(the first gold when there are several) under a Bradley-Terry reading of the rewards.

`--reward-model` takes a local folder (`hf:` prefix optional) or a hub id with an optional
`@revision`. Decoder models without a pad token get their EOS as pad (the classification
head then reads the last non-pad token). Pairs are sorted by length and scored in
batches; each distinct (prompt, text) pair is scored once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hakari.errors import HakariInputError, ModelLoadError, one_line
from hakari.scoring.samples.neural import resolve_device
from hakari.scoring.samples.registry import MetricInfo, ScoringConfig, register_family

MAX_LENGTH = 2048


def parse_reward_spec(spec: str) -> tuple[str, str | None]:
    """`hf:/path`, `/path`, `owner/name@rev` → (source, revision)."""
    body = spec[3:] if spec.startswith("hf:") else spec
    if Path(body).expanduser().is_dir():
        return str(Path(body).expanduser()), None
    source, _, revision = body.partition("@")
    if not source or "/" not in source:
        raise HakariInputError(
            f"{spec!r} is neither a local folder nor a hub id (owner/name[@revision])",
            field="--reward-model",
        )
    return source, revision or None


class RewardModel:
    """A loaded reward model; `rewards(prompts, texts)` → one float per pair."""

    def __init__(self, spec: str, *, device: str = "auto", batch_size: int = 8) -> None:
        self.spec = spec
        self.source, self.revision = parse_reward_spec(spec)
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self._model: Any = None
        self._tokenizer: Any = None
        self.n_loads = 0

    def load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(self.source, revision=self.revision)
            model = AutoModelForSequenceClassification.from_pretrained(
                self.source, revision=self.revision, num_labels=1
            )
        except (OSError, ValueError) as exc:
            raise ModelLoadError(
                f"reward model {self.spec!r} could not be loaded ({one_line(exc)})",
                field="--reward-model",
            ) from None
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model.config.pad_token_id = tokenizer.pad_token_id
        self._tokenizer, self._model = tokenizer, model.to(self.device).eval()
        self.n_loads += 1

    def rewards(self, prompts: Sequence[str], texts: Sequence[str]) -> list[float]:
        import torch

        self.load()
        pairs = list(zip(prompts, texts, strict=True))
        unique = list(dict.fromkeys(pairs))
        order = sorted(range(len(unique)), key=lambda i: len(unique[i][0]) + len(unique[i][1]))
        values: dict[tuple[str, str], float] = {}
        max_length = min(int(getattr(self._tokenizer, "model_max_length", MAX_LENGTH)), MAX_LENGTH)
        for start in range(0, len(order), self.batch_size):
            batch = [unique[i] for i in order[start : start + self.batch_size]]
            enc = self._tokenizer(
                [p for p, _ in batch],
                [t for _, t in batch],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            ).to(self.device)
            with torch.inference_mode():
                logits = self._model(**enc).logits
            for pair, value in zip(batch, logits[:, 0].float().cpu().tolist(), strict=True):
                values[pair] = float(value)
        return [values[p] for p in pairs]


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


class RewardFamily:
    family = "reward"

    def __init__(self, config: ScoringConfig) -> None:
        if not config.reward_model:
            raise HakariInputError(
                "reward / reward_softmax need --reward-model (a folder or hub id)",
                field="--reward-model",
            )
        self.model = RewardModel(
            config.reward_model, device=config.device, batch_size=min(config.batch_size, 16)
        )

    def prepare(self) -> None:
        self.model.load()

    def score(
        self,
        predictions: Sequence[str],
        references: Sequence[Sequence[str]],
        prompts: Sequence[str] | None,
        metrics: Sequence[str],
    ) -> dict[str, list[float]]:
        if prompts is None:
            raise HakariInputError("reward models score (prompt, answer): give --prompt-field")
        r_pred = self.model.rewards(prompts, predictions)
        out: dict[str, list[float]] = {}
        if "reward" in metrics:
            out["reward"] = r_pred
        if "reward_softmax" in metrics:
            r_ref = self.model.rewards(prompts, [golds[0] for golds in references])
            out["reward_softmax"] = [sigmoid(p - r) for p, r in zip(r_pred, r_ref, strict=True)]
        return out

    def describe(self) -> dict[str, str]:
        return {"model": self.model.spec, "input": "(prompt, answer) pair"}


register_family(
    "reward",
    RewardFamily,
    [
        MetricInfo(
            "reward",
            "reward",
            "reward model raw score of (prompt, prediction)",
            needs_prompt=True,
            needs_reference=False,
        ),
        MetricInfo(
            "reward_softmax", "reward", "sigmoid(r_pred - r_ref), IFTEval's softmaxed RM", True
        ),
    ],
)
