"""`hakari score` (per-sample metrics, reward models and judges on finished outputs) and
`hakari analyze` (IFTEval's automatic error analysis)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hakari.backends.base import check_prompt_format
from hakari.cli.common import console, fail, split_csv
from hakari.cli.options import CacheDirOption, DeviceOption, NoCacheOption
from hakari.errors import HakariInputError

Opt = typer.Option


def _print_summary(summary: dict[str, Any]) -> None:
    means = summary.get("means")
    if means:
        table = Table(title="scores (mean over scored samples)", title_justify="left")
        for col in ("metric", "mean", "n", "unscored"):
            table.add_column(col)
        for name, m in means.items():
            mean = "—" if m["mean"] is None else f"{m['mean']:.4f}"
            table.add_row(Text(name), mean, str(m["n"]), str(m["n_unscored"]))
        console.print(table)
    judge = summary.get("judge")
    if judge:
        line = (
            f"judge {judge['judge']} · {judge['prompt']} ({judge['mode']}): "
            f"{judge['n_scored']}/{judge['n']} scored, unscored rate "
            f"{judge['unscored_rate']:.1%}, calls made {judge['generated']}, "
            f"from cache {judge['cached']}"
        )
        if judge.get("inconsistency_rate") is not None:
            line += f", order inconsistency {judge['inconsistency_rate']:.1%}"
        console.print(line, markup=False, highlight=False)
        for reason, count in judge["unscored_reasons"].items():
            console.print(f"  unscored: {count} × {reason}", markup=False, highlight=False)
    for name, count in summary.get("without_gold", {}).items():
        console.print(
            f"note: {count} sample(s) have no gold: unscored by {name} (counted as unscored, "
            "not as 0)",
            markup=False,
            highlight=False,
        )
    if summary.get("unencodable_rows"):
        console.print(
            f"note: {summary['unencodable_rows']} row(s) hold text UTF-8 cannot encode (lone "
            "surrogates, e.g. JSON's \\ud800): written as JSON escapes, unchanged",
            markup=False,
            highlight=False,
        )


def score(
    run_dir: Annotated[
        Path | None, typer.Argument(help="A finished run folder (results.json + samples.jsonl).")
    ] = None,
    metrics: Annotated[
        list[str] | None, Opt("--metrics", help="e.g. rouge1,rouge2_recall,bertscore,sbert,f1")
    ] = None,
    input: Annotated[
        Path | None, Opt("--input", "-i", help="JSONL of outputs made elsewhere.")
    ] = None,
    output: Annotated[Path | None, Opt("--output", "-o", help="With --input: OUT.jsonl.")] = None,
    prediction_field: Annotated[str, Opt("--prediction-field")] = "prediction",
    reference_field: Annotated[str | None, Opt("--reference-field")] = None,
    prompt_field: Annotated[str | None, Opt("--prompt-field")] = None,
    lang: Annotated[str, Opt("--lang", help="en or ja (tokeniser, SBERT model).")] = "en",
    rouge_stemmer: Annotated[
        bool, Opt("--rouge-stemmer", help="Porter stemmer (ROUGE-1.5.5 -m).")
    ] = False,
    bertscore_model: Annotated[
        str | None, Opt("--bertscore-model", help="Hub id, folder, or 'minilm' (packaged).")
    ] = None,
    bertscore_layers: Annotated[
        int | None, Opt("--bertscore-layers", help="BERTScore: the layer to use (1 = the first).")
    ] = None,
    sbert_model: Annotated[str | None, Opt("--sbert-model")] = None,
    reward_model: Annotated[str | None, Opt("--reward-model", help="Folder or hub id.")] = None,
    judge: Annotated[
        str | None, Opt("--judge", help="Judge model spec (any --model form).")
    ] = None,
    judge_prompt: Annotated[
        str, Opt("--judge-prompt", help="ifteval_pair, pfgen_10point, single_1to10 or a .yaml")
    ] = "ifteval_pair",
    judge_reasks: Annotated[
        int, Opt("--judge-reasks", help="Re-asks of an unreadable verdict.")
    ] = 2,
    judge_max_tokens: Annotated[
        int | None, Opt("--judge-max-tokens", help="Tokens a judge answer may have.")
    ] = None,
    prompt_format: Annotated[
        str, Opt("--prompt-format", help="Judge: completion, chat, auto.")
    ] = "auto",
    batch_size: Annotated[int, Opt("--batch-size")] = 32,
    device: DeviceOption = "auto",
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
) -> None:
    """Add metric, reward-model and judge scores to a finished run, or to a JSONL file."""
    from hakari.rescore.common import JudgeOptions
    from hakari.rescore.files import FileFields, score_file
    from hakari.rescore.run_dir import score_run
    from hakari.scoring.samples import ScoringConfig

    names = split_csv(metrics)
    if reward_model and not any(n.startswith("reward") for n in names):
        names += ["reward", "reward_softmax"]
    try:
        check_prompt_format(prompt_format)
        config = ScoringConfig(
            lang=lang,
            rouge_stemmer=rouge_stemmer,
            bertscore_model=bertscore_model,
            bertscore_layers=bertscore_layers,
            sbert_model=sbert_model,
            reward_model=reward_model,
            device=device,
            batch_size=batch_size,
        )
        judge_opts = None
        if judge:
            judge_opts = JudgeOptions(
                spec=judge,
                prompt=judge_prompt,
                max_reasks=judge_reasks,
                batch_size=max(1, min(batch_size, 8)),
                max_new_tokens=judge_max_tokens,
                prompt_format=prompt_format,
                cache_dir=cache_dir,
                use_cache=not no_cache,
                device=device,
                progress=True,
            )
            judge_opts.check()
        config.check()
        if (run_dir is None) == (input is None):
            raise HakariInputError("give either RUN_DIR or --input FILE.jsonl", field="RUN_DIR")
        if input is not None:
            if output is None:
                raise HakariInputError("--input needs --output OUT.jsonl", field="--output")
            fields = FileFields(prediction_field, reference_field, prompt_field)
            summary = score_file(input, output, fields, names, config, judge_opts)
            where = f"wrote {output}"
        else:
            assert run_dir is not None
            summary = score_run(run_dir, names, config, judge_opts)
            where = f"updated {run_dir / 'samples.jsonl'} and {run_dir / 'results.json'}"
    except HakariInputError as exc:
        fail(exc)
    _print_summary(summary)
    console.print(where, markup=False, highlight=False)


def analyze(
    run_dir: Annotated[Path, typer.Argument(help="A finished run folder.")],
    judge: Annotated[str, Opt("--judge", help="Judge model spec.")],
    metric: Annotated[
        str | None, Opt("--metric", help="Pick the lowest by this per-sample score.")
    ] = None,
    n: Annotated[int, Opt("--n", help="Samples per model × task × decoding.")] = 5,
    judge_prompt: Annotated[str, Opt("--judge-prompt")] = "error_analysis",
    judge_max_tokens: Annotated[
        int | None, Opt("--judge-max-tokens", help="Tokens a judge answer may have.")
    ] = None,
    prompt_format: Annotated[str, Opt("--prompt-format")] = "auto",
    device: DeviceOption = "auto",
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
) -> None:
    """IFTEval's automatic error analysis: a judge looks for patterns in the worst samples."""
    from hakari.rescore.analyze import analyze_run
    from hakari.rescore.common import JudgeOptions

    try:
        result = analyze_run(
            run_dir,
            JudgeOptions(
                spec=judge,
                prompt=judge_prompt,
                max_new_tokens=judge_max_tokens,
                prompt_format=prompt_format,
                cache_dir=cache_dir,
                use_cache=not no_cache,
                device=device,
                progress=True,
            ),
            metric=metric,
            n=n,
        )
    except HakariInputError as exc:
        fail(exc)
    for entry in result["analyses"]:
        console.print(
            f"\n{entry['model']} · {entry['task']} · {entry['decoding']} "
            f"({len(entry['samples'])} samples, {entry['selection']}):",
            markup=False,
            highlight=False,
        )
        console.print(entry["answer"], markup=False, highlight=False)
    console.print(
        f"\nstored in {run_dir / 'analysis.json'} (calls made {result['generated']}, "
        f"from cache {result['cached']})",
        markup=False,
        highlight=False,
    )
