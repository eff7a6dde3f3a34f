"""`hakari pfgen leaderboard`: models ranked by score, with honest CIs and flags.

Entries come from hakari summaries (`hakari pfgen score --json`) and from upstream-style
result folders (`config.json` + `result.json`, optionally `trials.jsonl[.xz]`). A folder
with trials is re-scored so its CI comes from its real trials; one without trials shows
the published numbers and no CI. The reference ranks T=0 and T=1 runs, and 1- to
100-trial runs, in one list; hakari flags every entry whose temperature or trial count
differs from the most common one.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hakari._util.infiles import read_input_text
from hakari.errors import HakariInputError
from hakari.pfgen.report import is_summary, partial_label
from hakari.pfgen.scoring import leaderboard_totals


@dataclass
class Entry:
    model: str
    mode: str | None
    temperature: float | None
    num_trials: int
    score: float
    score_std: float
    ci_low: float | None
    ci_high: float | None
    fluency: float
    truthfulness: float
    helpfulness: float
    length: float
    origin: str
    partial: str | None = None  # "partial 1/2": the score covers part of the question set
    flags: tuple[str, ...] = ()


def entry_from_summary(summary: dict[str, Any], origin: str) -> Entry:
    config = summary.get("config") or {}
    u = summary.get("uncertainty") or {}
    return Entry(
        model=str(config.get("model") or summary.get("model")),
        mode=config.get("mode"),
        temperature=config.get("temperature"),
        num_trials=int(summary["num_trials"]),
        score=float(summary["score"]),
        score_std=float(summary["score_std"]),
        ci_low=u.get("ci_low"),
        ci_high=u.get("ci_high"),
        fluency=float(summary["fluency"]),
        truthfulness=float(summary["truthfulness"]),
        helpfulness=float(summary["helpfulness"]),
        length=float(summary["length"]),
        origin=origin,
        partial=partial_label(summary),
    )


def entry_from_result(result: dict[str, Any], origin: str) -> Entry:
    """An upstream `result.json` without trials: published numbers, no CI."""
    config = result.get("config") or {}
    fluency, truthfulness, helpfulness = leaderboard_totals(result["scores"])
    return Entry(
        model=str(config.get("model", origin)),
        mode=config.get("mode"),
        temperature=config.get("temperature"),
        num_trials=int(result["num_trials"]),
        score=float(result["score"]),
        score_std=float(result["score_std"]),
        ci_low=None,
        ci_high=None,
        fluency=fluency,
        truthfulness=truthfulness,
        helpfulness=helpfulness,
        length=float(result["length"]),
        origin=origin,
    )


def find_inputs(dirs: list[Path]) -> tuple[list[Path], list[Path], list[Path]]:
    """(trials files, result.json files without trials, hakari summary files)."""
    trials, results, summaries = [], [], []
    for root in dirs:
        if not root.is_dir():
            raise HakariInputError("not a folder", file=str(root))
        for path in sorted(root.rglob("*.json")):
            if path.name == "result.json":
                found = [p for p in path.parent.glob("trials.jsonl*") if p.is_file()]
                if found:
                    trials.append(sorted(found)[-1])  # .jsonl.xz sorts after .jsonl
                else:
                    results.append(path)
            elif path.name != "config.json":
                summaries.append(path)
        for path in sorted(root.rglob("trials.jsonl*")):
            if not (path.parent / "result.json").exists() and path not in trials:
                trials.append(path)
    return trials, results, summaries


def read_summaries(path: Path) -> list[dict[str, Any]]:
    try:
        obj = json.loads(read_input_text(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    items = obj if isinstance(obj, list) else [obj]
    return [o for o in items if is_summary(o)]


def read_result(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(read_input_text(path))
        if not isinstance(obj, dict):
            raise ValueError("not an object")
        for name in ("score", "score_std", "num_trials", "length", "scores"):
            if name not in obj:
                raise ValueError(f"missing {name}")
        return obj
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HakariInputError(f"not a pfgen result.json: {exc}", file=str(path)) from exc


def _most_common(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return Counter(present).most_common(1)[0][0] if present else None


def flag_and_rank(entries: list[Entry]) -> list[Entry]:
    usual_temperature = _most_common([e.temperature for e in entries])
    usual_trials = _most_common([e.num_trials for e in entries])
    for e in entries:
        flags = [e.partial] if e.partial else []
        if e.temperature != usual_temperature:
            flags.append(f"T={e.temperature}")
        if e.num_trials != usual_trials:
            flags.append(f"{e.num_trials} trials")
        e.flags = tuple(flags)
    return sorted(entries, key=lambda e: -e.score)
