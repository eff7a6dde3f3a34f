"""Every Eval Ever (schema 0.3.0) records of a run: `hakari export RUN --format eee`.

One aggregate record a model × task (`eval.schema.json`) with its instance-level records
beside it (`instance_level_eval.schema.json`), laid out as the EEE datastore wants them:
`OUTPUT/data/<task>/<developer>/<model>/<uuid>.json` and `<uuid>_samples.jsonl` (the uuid
is made from the model and task, so an export is reproducible). The aggregate's
`evaluation_results` hold, per decoding, one result a template × metric (its score, its
bootstrap interval over instances in `uncertainty.confidence_interval`; the template's id
and levels in `metric_config.additional_details`) and one a metric for the **Sharpe
score** over the templates (its two-way bootstrap interval; mean, std, alpha and the rest
in `score_details.details`). Each sample is an instance record linked to its template's
result; its `metadata` keeps what hakari needs to compute the same statistics again
(`hakari.template`, `hakari.answer` and `hakari.gold` as JSON, the task's metrics, levels,
language, the run order of models and tasks), read back by `interop.eee`.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from pathlib import Path
from typing import Any

from hakari._util.atomic import check_output_folder, json_line, json_text, staged_files
from hakari._util.redact import redact_identity
from hakari.interop.export import checked_rows, read_run
from hakari.results import AggregateStats, DecodingResult, EvalResults
from hakari.scoring import corpus

SCHEMA_VERSION = "0.3.0"
META = "hakari."
_NAMESPACE = uuid.UUID("6f5d2b1e-8a3c-4e7f-9b0d-1c2e3f405162")


# ------------------------------------------------------------------ export
def export_eee(run: Path, output: Path) -> list[Path]:
    """Write `run` as Every Eval Ever records under `output/data/...`; returns the files."""
    results, _ = read_run(run)
    check_output_folder(output, "--output", inputs=[run])
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = {}
    ranks = {m: k for k, m in enumerate(results.models)}
    task_ranks = {t: k for k, t in enumerate(results.config.tasks or [])}
    for row in checked_rows(run, with_prompt=True):
        row[f"{META}model_rank"] = str(ranks.get(row["model"], len(ranks)))
        row[f"{META}task_rank"] = str(task_ranks.get(row["task"], len(task_ranks)))
        by_key.setdefault((row["model"], row["task"]), []).append(row)
    written: list[Path] = []
    output.mkdir(parents=True, exist_ok=True)
    with staged_files(output) as staging:
        for k, ((model, task), rows) in enumerate(by_key.items()):
            folder, stem = _place(results, model, task)
            instance_text = "".join(
                json_line(_instance(results, model, task, stem, r)) for r in rows
            )
            aggregate = _aggregate(results, model, task, stem, folder, instance_text, len(rows))
            flat = staging / str(k)
            flat.mkdir()
            (flat / f"{stem}.json").write_text(
                json_text(aggregate, trailing_newline=True), encoding="utf-8"
            )
            (flat / f"{stem}_samples.jsonl").write_text(instance_text, encoding="utf-8")
            written += [output / folder / f"{stem}.json", output / folder / f"{stem}_samples.jsonl"]
        _move_into(staging, output, by_key, results)
    return written


def _move_into(
    staging: Path, output: Path, by_key: dict[tuple[str, str], Any], results: EvalResults
) -> None:
    """The files written under `staging/<k>/` into their datastore folders."""
    for k, (model, task) in enumerate(by_key):
        folder, _ = _place(results, model, task)
        target = output / folder
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted((staging / str(k)).iterdir()):
            path.replace(target / path.name)


def _model_id(results: EvalResults, model: str) -> tuple[str, str]:
    """(model_info.id, developer): the identity's name when it is a hub id (org/name)."""
    name = results.models[model].identity.get("name", model)
    if "/" in name and all(p.strip() for p in name.split("/")):
        return name, name.split("/")[0]
    return name, "unknown"


# The longest folder name written, in UTF-8 bytes: file systems take 255 (a model named
# by a 300-character path failed with "File name too long", leaving empty folders)
MAX_COMPONENT_BYTES = 200


def _component(text: str) -> str:
    """A folder name for `text`: path separators and characters file systems refuse
    replaced; a longer one cut to `MAX_COMPONENT_BYTES` with a digest of the whole, so
    that two long names stay apart (the records themselves keep the names whole)."""
    bad = '<>:"\\|?* '
    out = "".join("_" if c in bad or ord(c) < 32 else c for c in text.replace("/", "_"))
    out = out.strip(".") or "_"
    if len(out.encode("utf-8")) <= MAX_COMPONENT_BYTES:
        return out
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    head = out.encode("utf-8")[: MAX_COMPONENT_BYTES - 17].decode("utf-8", "ignore")
    return f"{head}-{digest}"


def _place(results: EvalResults, model: str, task: str) -> tuple[str, str]:
    model_id, developer = _model_id(results, model)
    name = "_".join(model_id.split("/")[1:]) if "/" in model_id else model_id
    folder = f"data/{_component(task)}/{_component(developer)}/{_component(name)}"
    return folder, _v4(str(uuid.uuid5(_NAMESPACE, f"{model}\x1f{task}")))


def _v4(stem: str) -> str:
    """A uuid with the version-4 and variant bits the datastore's file names require."""
    raw = bytearray(uuid.UUID(stem).bytes)
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


def _evaluation_id(results: EvalResults, model: str, task: str) -> str:
    return f"{task}/{_model_id(results, model)[0]}/{_timestamp(results)}"


def _timestamp(results: EvalResults) -> str:
    from datetime import datetime

    started = results.config.started
    try:
        return str(int(datetime.fromisoformat(started).timestamp())) if started else "0"
    except ValueError:
        return "0"


def _range(metric: str) -> tuple[float, float]:
    try:
        return corpus.get(metric).value_range
    except ValueError:
        return (-math.inf, math.inf)


def _bound(value: float) -> float | str:
    return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")


def _metric_config(
    metric_id: str, name: str, value_range: tuple[float, float], details: dict[str, str]
) -> dict[str, Any]:
    return {
        "metric_id": metric_id,
        "metric_name": name,
        "lower_is_better": False,
        "score_type": "continuous",
        "min_score": _bound(value_range[0]),
        "max_score": _bound(value_range[1]),
        "additional_details": details,
    }


def _aggregate(
    results: EvalResults, model: str, task: str, stem: str, folder: str, instances: str, n_rows: int
) -> dict[str, Any]:
    model_id, developer = _model_id(results, model)
    identity = redact_identity(results.models[model].identity)
    task_result = results.models[model].tasks[task]
    evaluation_results = []
    for decoding, dec in task_result.decodings.items():
        if dec.skipped is not None:
            continue
        evaluation_results += _decoding_results(task, decoding, dec, task_result.n_instances)
    library: dict[str, Any] = {
        "name": "hakari",
        "version": results.versions.get("hakari", "unknown"),
    }
    if results.imported is not None:
        library["additional_details"] = {"imported_from": results.imported.source}
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": _evaluation_id(results, model, task),
        **({"evaluation_timestamp": results.config.started} if results.config.started else {}),
        "retrieved_timestamp": _timestamp(results),
        "source_metadata": {
            "source_name": "hakari",
            "source_type": "evaluation_run",
            "source_organization_name": "hakari",
            "evaluator_relationship": "third_party",
        },
        "eval_library": library,
        "model_info": {
            "name": model,
            "id": model_id,
            "developer": developer,
            "additional_details": {
                "deployment_type": "unknown",
                "model_availability": "unknown",
                **{f"{META}identity.{k}": v for k, v in identity.items()},
                f"{META}model": model,
                **_task_format(results, model, task),
            },
        },
        "evaluation_results": evaluation_results,
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": f"{folder}/{stem}_samples.jsonl",
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(instances.encode("utf-8")).hexdigest(),
            "total_rows": n_rows,
        },
    }


def _task_format(results: EvalResults, model: str, task: str) -> dict[str, str]:
    """How the task's prompts went in: a task's own format (a jaster set's plain text)
    wins over the run's for the model (`identity.prompt_format`); a space's
    `prompt_format` level is in each template's levels."""
    own = (results.config.task_prompt_formats or {}).get(task)
    used = own or results.models[model].identity.get("prompt_format")
    return {f"{META}task_prompt_format": str(used)} if used else {}


def _decoding_results(
    task: str, decoding: str, dec: DecodingResult, n: int
) -> list[dict[str, Any]]:
    out = []
    source = {"dataset_name": task, "source_type": "other"}
    for tid, template in dec.templates.items():
        for metric, value in template.metrics.items():
            details = {
                f"{META}template": tid,
                f"{META}decoding": decoding,
                f"{META}kind": "template",
            }
            details |= {f"{META}level.{d}": v for d, v in (template.levels or {}).items()}
            result: dict[str, Any] = {
                "evaluation_result_id": _result_id(decoding, tid, metric),
                "evaluation_name": task,
                "source_data": source,
                "metric_config": _metric_config(metric, metric, _range(metric), details),
                "score_details": {"score": value, "uncertainty": {"num_samples": template.n}},
            }
            interval = (template.ci or {}).get(metric)
            if interval is not None:
                result["score_details"]["uncertainty"]["confidence_interval"] = {
                    "lower": interval.low,
                    "upper": interval.high,
                    "confidence_level": dec.aggregate[metric].confidence or 0.95,
                    "method": "bootstrap percentile over instances (template fixed)",
                }
            out.append(result)
    for metric, stats in dec.aggregate.items():
        out.append(_sharpe_result(task, decoding, metric, stats, n))
    return out


def _sharpe_result(
    task: str, decoding: str, metric: str, stats: AggregateStats, n: int
) -> dict[str, Any]:
    low, high = _range(metric)
    details = {
        key: repr(value) if isinstance(value, float) else str(value)
        for key, value in stats.to_dict().items()
        if value is not None and not isinstance(value, list)
    }
    uncertainty: dict[str, Any] = {"num_samples": n}
    if stats.sharpe_ci_low is not None and stats.sharpe_ci_high is not None:
        uncertainty["confidence_interval"] = {
            "lower": stats.sharpe_ci_low,
            "upper": stats.sharpe_ci_high,
            "confidence_level": stats.confidence or 0.95,
            "method": f"two-way bootstrap over templates and instances ({stats.ci_method})",
        }
        uncertainty["num_bootstrap_samples"] = stats.n_boot or 0
    return {
        "evaluation_result_id": _result_id(decoding, "sharpe", metric),
        "evaluation_name": task,
        "source_data": {"dataset_name": task, "source_type": "other"},
        "metric_config": _metric_config(
            f"hakari.sharpe.{metric}",
            f"Sharpe score of {metric} over templates (mean / (alpha * std + 1))",
            (min(low, 0.0), max(high, 0.0)),
            {f"{META}decoding": decoding, f"{META}kind": "sharpe", f"{META}metric": metric},
        ),
        "score_details": {"score": stats.sharpe, "details": details, "uncertainty": uncertainty},
    }


def _result_id(decoding: str, template: str, metric: str) -> str:
    return f"{decoding}/{template}/{metric}"


def _instance(
    results: EvalResults, model: str, task: str, stem: str, row: dict[str, Any]
) -> dict[str, Any]:
    gold, answer = row.get("gold"), row.get("answer")
    reference = (
        [str(g) for g in gold] if isinstance(gold, list) else ([] if gold is None else [str(gold)])
    )
    score = row.get("score")
    first_metric = row["metrics"].split(",")[0] if row.get("metrics") else "score"
    first_metric = first_metric.removeprefix("score:")
    metadata = {
        f"{META}model": model,
        f"{META}template": row["template"],
        f"{META}decoding": row["decoding"],
        f"{META}item": row["item"],
        f"{META}answer": json.dumps(answer, ensure_ascii=False),
        f"{META}gold": json.dumps(gold, ensure_ascii=False),
        f"{META}fallback": "true" if row.get("fallback") else "false",
        f"{META}metrics": row.get("metrics", ""),
        f"{META}language": row.get("language", "en"),
        f"{META}qa_mode": row.get("qa_mode", "first-line"),
    }
    sources = {
        k.removeprefix("score:")
        for k in row.get("metrics", "").split(",")
        if k.startswith("score:")
    }
    if sources:
        metadata[f"{META}scores"] = json.dumps({k: row[k] for k in sorted(sources)})
    if "run" in row:
        metadata[f"{META}run"] = str(row["run"])
    for rank in ("model_rank", "task_rank"):
        metadata[f"{META}{rank}"] = row[f"{META}{rank}"]
    metadata |= {f"{META}{k}": str(v) for k, v in row.items() if k.startswith("level.")}
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": _evaluation_id(results, model, task),
        "model_id": _model_id(results, model)[0],
        "evaluation_name": task,
        "evaluation_result_id": _result_id(row["decoding"], row["template"], first_metric),
        "sample_id": row["item"],
        "interaction_type": "single_turn",
        "input": {"raw": row.get("prompt", ""), "reference": reference},
        "output": {"raw": [row.get("output") or ""]},
        "answer_attribution": [
            {
                "turn_idx": 0,
                "source": "output.raw",
                "extracted_value": "" if answer is None else str(answer),
                "extraction_method": "hakari task regex and fallback",
                "is_terminal": True,
            }
        ],
        "evaluation": {
            "score": float(score) if isinstance(score, int | float) else 0.0,
            "is_correct": isinstance(score, int | float) and score >= 1.0,
        },
        "metadata": metadata,
    }
