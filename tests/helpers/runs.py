"""A small finished run folder (results.json + samples.jsonl) made with the fake backend,
for tests of the commands that read runs (`score`, `analyze`, `report`)."""

from __future__ import annotations

from pathlib import Path

from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.runner import evaluate


def _answer(request: GenerationRequest) -> str:
    return "1" if "great" in request.prompt.lower() else "no idea"


def fake_run(folder: Path, *, cache_dir: Path | None = None) -> Path:
    """demo_sentiment_en, greedy, templates 0-0 and 1-0, 4 instances, no bootstrap."""
    evaluate(
        tasks=["demo_sentiment_en"],
        decodings=["greedy"],
        templates=["0-0", "1-0"],
        limit=4,
        output_dir=folder,
        cache_dir=cache_dir or folder.parent / "fake-run-cache",
        n_boot=0,
        backend_factory=lambda spec: FakeBackend(_answer),
    )
    return folder
