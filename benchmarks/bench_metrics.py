"""Throughput of the reference metrics on the 2,500 REALSumm summaries, on this machine.

    flock /tmp/hakari-heavy.lock python benchmarks/bench_metrics.py [--n 2500] [--batch-size 32]

For each family: the model load (first call), then scoring all summaries against their
reference (the same code path as `hakari score --input`). ROUGE runs rouge1, rouge2 and
rougeLsum in one pass; BERTScore and SBERT use the packaged all-MiniLM-L6-v2 on CPU.
Prints a Markdown table: load seconds, scoring seconds, summaries per second, peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realsumm_jsonl import DEFAULT_SHARED, realsumm_rows
from timing import add_smoke_flag, need_path

from hakari.scoring.samples import MetricSuite, ScoringConfig

CASES = [
    ("ROUGE-1/2/Lsum (rouge-score)", ["rouge1", "rouge2", "rougeLsum"], {}),
    ("ROUGE-1/2/Lsum, Porter stemmer", ["rouge1", "rouge2", "rougeLsum"], {"rouge_stemmer": True}),
    ("BERTScore F1, MiniLM-L6 (layer 6)", ["bertscore"], {"bertscore_model": "minilm"}),
    ("SBERT cosine, MiniLM-L6", ["sbert"], {}),
]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    add_smoke_flag(parser)
    args = parser.parse_args()
    need_path(args.shared / "human-judgements", "REALSumm's summaries: --shared")
    if args.smoke:
        args.n, args.batch_size = 4, 4
    rows = list(realsumm_rows(args.shared))[: args.n]
    preds = [r["prediction"] for r in rows]
    refs = [r["reference"] for r in rows]
    print(f"{len(rows)} summaries, batch size {args.batch_size}, device cpu\n")
    print("| metric | load (s) | score (s) | summaries/s | peak RSS (MB) |")
    print("|---|---|---|---|---|")
    for label, names, options in CASES:
        config = ScoringConfig(device="cpu", batch_size=args.batch_size, **options)
        suite = MetricSuite(names, config, has_prompts=False)
        started = time.perf_counter()
        suite.prepare()
        loaded = time.perf_counter()
        suite.score(preds, refs)
        done = time.perf_counter()
        rate = len(rows) / (done - loaded)
        print(
            f"| {label} | {loaded - started:.1f} | {done - loaded:.1f} | {rate:.0f} "
            f"| {peak_rss_mb():.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
