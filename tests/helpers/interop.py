"""What the import/export tests compare: the statistics of a results.json as JSON text
(templates, aggregates, prompt-space attribution, paired comparisons, model groups, the
alpha sweep), everything else (the clock, provenance, counters) left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STATISTICS = ("templates", "aggregate", "space")


def statistics(results_json: Path) -> str:
    """The statistics of a run as indented JSON text, in the file's own order."""
    data: dict[str, Any] = json.loads(results_json.read_text(encoding="utf-8"))
    kept: dict[str, Any] = {}
    for model, result in data["models"].items():
        for task, task_result in result["tasks"].items():
            for decoding, dec in task_result["decodings"].items():
                if dec.get("skipped"):
                    continue
                kept[f"{model} | {task} | {decoding}"] = {k: dec.get(k) for k in STATISTICS}
    for key in ("paired", "model_groups", "alpha_sweep"):
        kept[key] = data.get(key)
    return json.dumps(kept, indent=1, ensure_ascii=False)
