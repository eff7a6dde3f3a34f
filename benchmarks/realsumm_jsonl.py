"""Write REALSumm (../shared/human-judgements/realsumm) as one JSONL row per summary, for
`hakari score --input` and `hakari meta`: the upstream row plus `prediction` and
`reference` with the `<t>` sentence tags stripped (one sentence per line, so `rougeLsum`
sees the sentences) and `prompt` (an instruction + the source article, for judges).

    python benchmarks/realsumm_jsonl.py OUT.jsonl [--shared ../shared]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path

DEFAULT_SHARED = Path(__file__).resolve().parents[1].parent / "shared"
_SENTENCE = re.compile(r"<t>(.*?)</t>", re.S)


def strip_tags(text: str) -> str:
    """`<t> a . </t> <t> b . </t>` → "a .\\nb ." (text without tags is kept as one line)."""
    sentences = _SENTENCE.findall(text) or [text]
    return "\n".join(" ".join(s.split()) for s in sentences)


def realsumm_rows(shared: Path = DEFAULT_SHARED) -> Iterator[dict]:
    folder = shared / "human-judgements" / "realsumm"
    with (folder / "documents.jsonl").open(encoding="utf-8") as fh:
        docs = {d["doc_id"]: d for d in map(json.loads, fh)}
    with (folder / "summaries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            doc = docs[row["doc_id"]]
            article = " ".join(re.sub(r"</?t>", " ", doc["source"]).split())
            row["prediction"] = strip_tags(row["summary"])
            row["reference"] = strip_tags(doc["reference"])
            row["prompt"] = f"Summarise the following news article.\n\n{article}"
            yield row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    args = parser.parse_args()
    n = 0
    with args.output.open("w", encoding="utf-8") as fh:
        for row in realsumm_rows(args.shared):
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    print(f"wrote {n} rows to {args.output}")


if __name__ == "__main__":
    main()
