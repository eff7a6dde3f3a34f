"""Agreement of hakari's metric values with the REALSumm authors' on the same summaries.

    python benchmarks/realsumm_agreement.py SCORED.jsonl

SCORED.jsonl is `hakari score --input` output over `realsumm_jsonl.py` rows: each row has
hakari's `scores` and the upstream `metric_scores`. Prints, per metric pair, Pearson,
Spearman, mean absolute difference, the share of rows equal to 4 decimals (upstream
rounds ROUGE to 5) and the mean signed difference (hakari − upstream).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

PAIRS = [
    ("rouge1", "rouge_1_f_score"),
    ("rouge2", "rouge_2_f_score"),
    ("rouge2_recall", "rouge_2_recall"),
    ("rougeL", "rouge_l_f_score"),
    ("rougeLsum", "rouge_l_f_score"),
    ("bertscore", "bert_f_score"),
]


def main(path: Path) -> None:
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    cols = "hakari | REALSumm authors | n | Pearson | Spearman | mean abs diff | equal (4 dp)"
    print(f"| {cols} | mean diff |")
    print("|---|---|---|---|---|---|---|---|")
    for ours, theirs in PAIRS:
        if ours not in rows[0]["scores"]:
            continue
        a = np.array([r["scores"][ours] for r in rows], dtype=float)
        b = np.array([r["metric_scores"][theirs] for r in rows], dtype=float)
        print(
            f"| {ours} | {theirs} | {a.size} | {pearsonr(a, b).statistic:.4f} "
            f"| {spearmanr(a, b).statistic:.4f} | {np.abs(a - b).mean():.4f} "
            f"| {(np.abs(a - b) < 5e-5).mean():.1%} | {(a - b).mean():+.4f} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
