"""Throughput and peak memory of a whole hakari run on a large task, at growing sizes.

Streaming means peak memory must not grow with the number of prompts: this runs the
same task with increasing --limit in fresh processes (each with an empty cache, so every
prompt is really generated) and prints prompts/s, peak RSS and the time a full split
would take. Default: JNLI validation v1.1 (2,434 × 18 templates = 43,812 prompts),
constrained decoding, the default packaged model.

    python benchmarks/bench_stream.py --data-dir ../shared/datasets --limits 20,80
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import add_smoke_flag, skip

CHILD = """
import json, resource, sys, time
from hakari import evaluate
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
res = evaluate(**args)
wall = time.perf_counter() - t0
dec = next(iter(res.models.values())).tasks[args["tasks"][0]].decodings[args["decodings"][0]]
print(json.dumps({"wall": wall, "generated": dec.generated, "gen_wall": dec.wall_s,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_once(args: argparse.Namespace, limit: int, cache_dir: Path) -> dict:
    params = {
        "models": [args.model],
        "tasks": [args.task],
        "decodings": [args.decoding],
        "limit": limit,
        "batch_size": args.batch_size,
        "data_dir": args.data_dir,
        "cache_dir": str(cache_dir),
        "n_boot": 1000,
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(params)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--task", default="jnli")
    parser.add_argument("--decoding", default="constrained")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--limits", default="20,80")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--full-prompts", type=int, default=2434 * 18)
    parser.add_argument("--model-cache", default=None, help="cache dir holding converted models")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:  # two instances of the built-in demo task; the converted model reused
        from hakari.backends.cache import default_cache_dir

        args.task, args.limits, args.data_dir = "demo_sentiment_en", "2", None
        args.model_cache = args.model_cache or str(default_cache_dir())
        (Path(args.model_cache) / "models").mkdir(parents=True, exist_ok=True)
    elif args.data_dir is None and args.task == "jnli":
        skip("JNLI needs --data-dir (../shared/datasets)")

    rows = []
    for limit in (int(x) for x in args.limits.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp)
            if args.model_cache:  # reuse the converted model, not the responses
                (cache / "models").symlink_to(Path(args.model_cache) / "models")
            t0 = time.perf_counter()
            r = run_once(args, limit, cache)
            r["process_wall"] = time.perf_counter() - t0
        r["limit"] = limit
        rows.append(r)

    print(f"\n{args.model} · {args.task} · {args.decoding} · batch {args.batch_size}\n")
    print("| --limit | prompts | generation s | prompts/s | peak RSS MB | full split (est.) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        rate = r["generated"] / r["gen_wall"]
        full_h = args.full_prompts / rate / 3600
        print(
            f"| {r['limit']} | {r['generated']} | {r['gen_wall']:.1f} | {rate:.2f} | "
            f"{r['rss_mb']:.0f} | {full_h:.1f} h |"
        )


if __name__ == "__main__":
    main()
