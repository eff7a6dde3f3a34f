"""`hakari score --input FILE.jsonl`: score outputs made elsewhere.

OUT.jsonl holds every input row unchanged plus a `scores` object (one value per metric,
F-measures unless the name says otherwise; a judge's unscored item is null) and, with a
judge, a `judgements` object with each verdict's details (status, reason, prompt hash,
raw outputs, both orders for pairs). A `scores` object already in a row is kept and
extended. The output is written whole or not at all, never over the input; text that
UTF-8 cannot encode (a lone surrogate such as JSON's "\\ud800") is kept as its JSON
escape and the rows holding it are counted (`unencodable_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hakari._util.atomic import check_output, json_line, write_jsonl_atomic
from hakari._util.jsonl import read_jsonl, row_line, strip_line, text_column
from hakari._util.unicode import has_unencodable
from hakari.errors import HakariInputError
from hakari.rescore.common import (
    JudgeOptions,
    merged_scores,
    prepare_suite,
    score_samples,
)
from hakari.scoring.samples import ScoringConfig


@dataclass(frozen=True)
class FileFields:
    prediction: str
    reference: str | None
    prompt: str | None = None


def score_file(
    input_path: Path,
    output_path: Path,
    fields: FileFields,
    metrics: list[str],
    config: ScoringConfig,
    judge: JudgeOptions | None = None,
) -> dict[str, Any]:
    """Score every row; returns a summary (rows, metric means, judge summary, rows whose
    text holds characters UTF-8 cannot encode: kept exactly, as JSON escapes)."""
    output = check_output(output_path, "--output", inputs=[input_path])
    suite = prepare_suite(metrics, config, has_prompts=fields.prompt is not None)
    if suite is None and judge is None:
        raise HakariInputError(
            "nothing to compute: give --metrics and/or --judge", field="--metrics"
        )
    rows = read_jsonl(input_path)
    for row in rows:
        if "scores" in row and not isinstance(row["scores"], dict):
            raise HakariInputError(
                f"line {row_line(row)}: field 'scores' exists and is not an object",
                file=str(input_path),
            )
    predictions = text_column(rows, fields.prediction, input_path, "--prediction-field")
    references: list[Any]
    if fields.reference is not None:
        references = text_column(
            rows, fields.reference, input_path, "--reference-field", allow_list=True
        )
    elif suite is not None:
        raise HakariInputError(
            "reference metrics need --reference-field", field="--reference-field"
        )
    else:
        references = [None] * len(rows)
    prompts = (
        text_column(rows, fields.prompt, input_path, "--prompt-field") if fields.prompt else None
    )
    scored = score_samples(suite, judge, predictions, references, prompts)
    out_rows = []
    for i, row in enumerate(rows):
        new = {name: values[i] for name, values in scored.values.items()}
        record = strip_line(row)
        record["scores"] = merged_scores(record, new, f"line {row_line(row)}")
        if scored.judgements:
            record["judgements"] = {k: v[i] for k, v in scored.judgements.items()}
        out_rows.append(record)
    write_jsonl_atomic(output, out_rows)
    unencodable = sum(has_unencodable(json_line(row)) for row in out_rows)
    return {
        "rows": len(rows),
        "unencodable_rows": unencodable,
        **summarise(scored.values),
        **scored.provenance,
    }


def summarise(values: dict[str, list[float | None]]) -> dict[str, Any]:
    means: dict[str, Any] = {}
    for name, vals in values.items():
        got = [v for v in vals if v is not None]
        means[name] = {
            "mean": sum(got) / len(got) if got else None,
            "n": len(got),
            "n_unscored": len(vals) - len(got),
        }
    return {"means": means}
