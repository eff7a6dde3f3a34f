"""`hakari meta`: the command over `hakari.meta` (validation first, one error, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from hakari.cli.common import console, fail, split_csv, write_output
from hakari.errors import HakariInputError


def meta(
    input: Annotated[Path, typer.Option("--input", "-i", help="JSONL, one row per scored output.")],
    human: Annotated[str, typer.Option("--human", help="Field of the human score (dotted path).")],
    metrics: Annotated[
        list[str],
        typer.Option("--metrics", help="Metric fields, comma-separated dotted paths."),
    ],
    system_field: Annotated[
        str | None, typer.Option("--system-field", help="Field naming the system (model).")
    ] = None,
    group_by: Annotated[
        str | None,
        typer.Option("--group-by", help="Field naming the group (document / prompt / task)."),
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the JSON here.")] = None,
    n_boot: Annotated[
        int, typer.Option("--n-boot", help="Bootstrap replicates (0: no intervals).")
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap (≥ 0).")] = 0,
    confidence: Annotated[
        float, typer.Option("--confidence", help="Level of the intervals, in (0, 1).")
    ] = 0.95,
    tfa_before: Annotated[
        str | None, typer.Option("--tfa-before", help="TFA: the zero-shot system.")
    ] = None,
    tfa_after: Annotated[
        str | None, typer.Option("--tfa-after", help="TFA: the system trained on the task.")
    ] = None,
) -> None:
    """Correlate metrics with human scores (system, summary, pooled; CIs; CAT/CIT/TFA)."""
    from hakari._util.atomic import check_output
    from hakari.meta import BootstrapSettings, load_meta_input, meta_evaluate, print_meta

    try:
        json_output = check_output(json_out, "--json", inputs=[input]) if json_out else None
        data = load_meta_input(input, human, split_csv(metrics), system_field, group_by)
        result = meta_evaluate(
            data,
            BootstrapSettings(n_boot=n_boot, confidence=confidence, seed=seed),
            tfa_before=tfa_before,
            tfa_after=tfa_after,
        )
    except HakariInputError as exc:
        fail(exc)
    print_meta(result, console)
    if json_output is not None:
        try:
            write_output(json_output, json.dumps(result, indent=2, ensure_ascii=False))
        except HakariInputError as exc:
            fail(exc)
        console.print(f"json: {json_out}", highlight=False, markup=False)
