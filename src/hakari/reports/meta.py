"""Meta-evaluation sections: how well each metric agrees with human scores (`hakari meta
--json`): per level (system, summary, pooled) a table of Pearson / Spearman / Kendall
with CIs, IFTEval's CAT / CIT / TFA, and the metric × metric correlation heatmaps of
Faysse et al. (2023, Figure 1). Every block is optional: what the file lacks is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hakari.reports.charts import correlation_heatmap
from hakari.reports.markup import anchor, ci, esc, num, table

STATS = ("pearson", "spearman", "kendall")


def _coefficient(entry: Any) -> str:
    if not isinstance(entry, Mapping):
        return num(entry)
    return f"{num(entry.get('value'))} {ci(entry.get('ci_low'), entry.get('ci_high'))}"


def _level_table(level: str, metrics: Mapping[str, Any]) -> str:
    rows = []
    for metric, result in metrics.items():
        if not isinstance(result, Mapping):
            continue
        note = result.get("undefined") or ""
        rows.append(
            [
                f'<span class="model">{esc(metric)}</span>',
                *(_coefficient(result.get(s)) for s in STATS),
                esc(result.get("n", "")),
                f'<span class="flag">{esc(note)}</span>' if note else "",
            ]
        )
    header = ["metric", *(f"{s} [95% CI]" for s in STATS), "n", "notes"]
    return f"<h4>{esc(level)} level</h4>" + table(header, rows, numeric_from=1)


def _ifteval(block: Mapping[str, Any]) -> str:
    parts = []
    cat, cit = block.get("CAT") or {}, block.get("CIT") or {}
    names = list(dict.fromkeys([*cat, *cit]))
    if names:
        rows = [
            [
                f'<span class="model">{esc(n)}</span>',
                num((cat.get(n) or {}).get("value")),
                num((cit.get(n) or {}).get("value")),
                esc((cit.get(n) or {}).get("n_groups", "")),
            ]
            for n in names
        ]
        parts.append(
            "<h4>IFTEval: comparability across tasks (CAT) and consistency inside tasks (CIT)</h4>"
            + table(["metric", "CAT (Spearman)", "CIT (mean Spearman)", "groups"], rows)
        )
    tfa = block.get("TFA")
    if isinstance(tfa, Mapping) and isinstance(tfa.get("columns"), Mapping):
        rows = [
            [f'<span class="model">{esc(n)}</span>', num((r or {}).get("value"))]
            for n, r in tfa["columns"].items()
        ]
        parts.append(
            f"<h4>TFA: relative change {esc(tfa.get('before'))} → {esc(tfa.get('after'))}</h4>"
            + table(["column", "mean relative change"], rows)
        )
    return "".join(parts)


def _matrix(name: str, matrix: Mapping[str, Mapping[str, Any]], key: str) -> str:
    names = list(matrix)
    if len(names) < 2:
        return ""
    values: list[Sequence[float | None]] = [
        [v if isinstance(v := (matrix.get(a) or {}).get(b), int | float) else None for b in names]
        for a in names
    ]
    title = name.replace("_", " ")
    svg = correlation_heatmap(names, values, title, key)
    return f'<figure class="matrix">{svg}</figure>'


def meta_section(path: Path, meta: Mapping[str, Any], n: int) -> str:
    parts = [f"<h3>{esc(path.name)}</h3>"]
    source = meta.get("input") or {}
    if isinstance(source, Mapping) and source.get("file"):
        parts.append(
            f'<p class="meta">input {esc(source.get("file"))} · {esc(source.get("rows"))} rows · '
            f"human score {esc(source.get('human'))}</p>"
        )
    for level, metrics in (meta.get("levels") or {}).items():
        if isinstance(metrics, Mapping) and metrics:
            parts.append(_level_table(level, metrics))
    skipped = meta.get("skipped_levels") or {}
    if isinstance(skipped, Mapping) and skipped:
        items = "".join(f"<li>{esc(k)}: {esc(v)}</li>" for k, v in skipped.items())
        parts.append(f'<ul class="note">{items}</ul>')
    if isinstance(meta.get("ifteval"), Mapping):
        parts.append(_ifteval(meta["ifteval"]))
    matrices = meta.get("matrices") or {}
    if isinstance(matrices, Mapping):
        figures = [
            _matrix(str(name), matrix, anchor("meta", n, name))
            for name, matrix in matrices.items()
            if isinstance(matrix, Mapping)
        ]
        parts.append(f'<div class="matrices">{"".join(figures)}</div>')
    return "".join(parts)


def meta_sections(meta: Sequence[tuple[Path, Mapping[str, Any]]]) -> str:
    if not meta:
        return ""
    body = "".join(meta_section(p, m, i) for i, (p, m) in enumerate(meta))
    return (
        '<section id="meta"><h2>Meta-evaluation: agreement with human judgements</h2>'
        '<p class="note">Correlation of each metric with the human score at each level; '
        "95% bootstrap CIs. Heatmaps: metric × metric Spearman ρ.</p>"
        f"{body}</section>"
    )
