"""Hostile round five (issue 43 #22): a custom backend written to the previous protocol
(`generate(..., on_batch=...)`) is named in one line before it is asked anything, instead
of a TypeError traceback from deep inside the runner."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hakari import evaluate
from hakari.backends.fake import FakeBackend
from hakari.errors import HakariInputError


class OldProtocol(FakeBackend):
    asked = 0

    def generate(  # type: ignore[override]
        self, requests: Sequence[Any], *, batch_size: int | None = None, on_batch: Any = None
    ) -> list[Any]:
        OldProtocol.asked += 1
        return super().generate(requests, batch_size=batch_size)


def test_a_backend_of_the_previous_protocol_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(HakariInputError) as caught:
        evaluate(
            tasks=["demo_sentiment_en"],
            decodings=["greedy"],
            templates=["0-0", "1-0"],
            limit=2,
            n_boot=0,
            use_cache=False,
            backend_factory=lambda spec: OldProtocol(lambda req: "1"),
        )
    message = str(caught.value)
    assert "on_batch" in message and "on_results" in message and "\n" not in message
    assert OldProtocol.asked == 0
