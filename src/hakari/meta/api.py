"""`hakari meta`: how well each metric agrees with human scores, as one JSON document.

Shape (`--json OUT`):

    {"levels": {"system":  {METRIC: {"pearson": {"value", "ci_low", "ci_high", ...},
                                     "spearman": {...}, "kendall": {...}, "n": ..., ...}},
                "summary": {...}, "pooled": {...}},
     "skipped_levels": {LEVEL: why},         # e.g. no --system-field
     "ifteval": {"CAT": {METRIC: ...}, "CIT": {METRIC: ...}, "TFA": {...}},
     "matrices": {"pooled_spearman": {A: {B: rho}}, "system_spearman": ...},
     "input": {...}, "config": {...}}

The whole file is read and checked first (UTF-8, JSON, every field on every row), so a
bad row fails before any statistic is computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hakari._util.jsonl import label_column, number_column, read_jsonl
from hakari.errors import HakariInputError
from hakari.meta import ifteval
from hakari.meta.correlation import (
    BootstrapSettings,
    correlation_matrix,
    group_means,
    pooled_level,
    summary_level,
    system_level,
)


@dataclass
class MetaInput:
    path: Path
    human_field: str
    human: list[float]
    metrics: dict[str, list[float]]
    systems: list[str] | None
    groups: list[str] | None


def load_meta_input(
    path: Path,
    human: str,
    metrics: Sequence[str],
    system_field: str | None = None,
    group_by: str | None = None,
) -> MetaInput:
    if not metrics:
        raise HakariInputError("no metric field given", field="--metrics")
    rows = read_jsonl(path)
    return MetaInput(
        path=path,
        human_field=human,
        human=number_column(rows, human, path, "--human"),
        metrics={m: number_column(rows, m, path, "--metrics") for m in dict.fromkeys(metrics)},
        systems=label_column(rows, system_field, path, "--system-field") if system_field else None,
        groups=label_column(rows, group_by, path, "--group-by") if group_by else None,
    )


def _column_report(values: Sequence[float] | np.ndarray) -> dict[str, Any]:
    arr = np.asarray(values, dtype=np.float64)
    finite = arr[np.isfinite(arr)]
    return {
        "n_nan": int(arr.size - finite.size),
        "constant": bool(finite.size > 0 and np.all(finite == finite[0])),
        "n_distinct": int(np.unique(finite).size),
    }


def meta_evaluate(
    data: MetaInput,
    boot: BootstrapSettings | None = None,
    *,
    tfa_before: str | None = None,
    tfa_after: str | None = None,
) -> dict[str, Any]:
    boot = boot or BootstrapSettings()
    boot.check(len(data.human))
    if (tfa_before is None) != (tfa_after is None):
        raise HakariInputError("give both --tfa-before and --tfa-after", field="--tfa-before")
    if tfa_before is not None and (data.systems is None or data.groups is None):
        raise HakariInputError(
            "TFA needs --system-field and --group-by (the task)", field="--tfa-before"
        )
    if tfa_before is not None and data.systems is not None:
        for name, option in ((tfa_before, "--tfa-before"), (tfa_after, "--tfa-after")):
            if name not in set(data.systems):
                raise HakariInputError(f"no system {name!r} in the input", field=option)

    levels: dict[str, dict[str, Any]] = {"system": {}, "summary": {}, "pooled": {}}
    skipped: dict[str, str] = {}
    for name, values in data.metrics.items():
        levels["pooled"][name] = pooled_level(values, data.human, boot).to_dict()
        if data.systems is not None:
            levels["system"][name] = system_level(values, data.human, data.systems, boot).to_dict()
        if data.groups is not None:
            levels["summary"][name] = summary_level(values, data.human, data.groups, boot).to_dict()
    if data.systems is None:
        skipped["system"] = "needs --system-field"
        del levels["system"]
    if data.groups is None:
        skipped["summary"] = "needs --group-by (the document / prompt each row answers)"
        del levels["summary"]

    columns: dict[str, Sequence[float] | np.ndarray] = {"human": data.human, **data.metrics}
    matrices: dict[str, Any] = {"pooled_spearman": correlation_matrix(columns)}
    if data.systems is not None:
        matrices["system_spearman"] = correlation_matrix(
            {k: group_means(v, data.systems)[1] for k, v in columns.items()}
        )
    out: dict[str, Any] = {"levels": levels, "skipped_levels": skipped, "matrices": matrices}
    if data.systems is not None and data.groups is not None:
        per_metric = {
            m: ifteval.cat_cit(v, data.human, data.systems, data.groups)
            for m, v in data.metrics.items()
        }
        block: dict[str, Any] = {
            "unit": "system × group mean (IFTEval: model × task)",
            "CAT": {m: r["CAT"] for m, r in per_metric.items()},
            "CIT": {m: r["CIT"] for m, r in per_metric.items()},
        }
        if tfa_before is not None and tfa_after is not None:
            block["TFA"] = {
                "before": tfa_before,
                "after": tfa_after,
                "columns": ifteval.tfa(columns, data.systems, data.groups, tfa_before, tfa_after),
            }
        out["ifteval"] = block
    else:
        skipped["ifteval"] = "CAT/CIT need --system-field and --group-by"
    out["input"] = {
        "file": str(data.path),
        "rows": len(data.human),
        "human": data.human_field,
        "n_systems": len(set(data.systems)) if data.systems else None,
        "n_groups": len(set(data.groups)) if data.groups else None,
        "columns": {k: _column_report(v) for k, v in columns.items()},
    }
    out["config"] = {
        "n_boot": boot.n_boot,
        "confidence": boot.confidence,
        "seed": boot.seed,
        "kendall": "tau-b",
        "spearman": "average ranks for ties",
        "nan": "rows with NaN in the metric or the human score are left out and counted",
    }
    return out
