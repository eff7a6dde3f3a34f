"""Training throughput of `hakari finetune` on CPU for a packaged model, and the cost
of the transformers Trainer over a bare peft loop on the same examples.

Each configuration runs in a fresh process (so peak RSS is its own): `hakari`'s trainer
(`train_adapter`: Trainer, checkpoints every `--save-steps`, loss log) and a bare loop
(peft model, AdamW, the same collated batches, no checkpoints). Examples are JCoLA
training rows (all 14 templates of the first instances of the seeded sample, chat
format) when `--data-dir` has them, else the built-in demo task rendered as training
examples. Prints examples/s, s/step (all steps; the trainer's include its checkpoints), peak RSS.

    python benchmarks/bench_finetune.py --data-dir ../shared/datasets --steps 6 --batch-sizes 1,4,8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import add_smoke_flag

CHILD = r"""
import json, resource, sys, time
from dataclasses import replace
from pathlib import Path
args = json.loads(sys.argv[1])
from hakari.finetune.config import TrainSettings, resolve_runtime
from hakari.finetune.data import nested_sample, task_examples, train_rows
from hakari.tasks.loader import load_task

data_dir = Path(args["data_dir"]) if args["data_dir"] else None
if data_dir and (data_dir / "jcola" / "in_domain_train-v1.0.json").is_file():
    task = load_task("jcola")
    rows = train_rows(task, data_dir=data_dir)
else:
    task = load_task("demo_sentiment_en")
    rows = train_rows(task, split=task.spec.data.eval_split, data_dir=None)
need = args["batch_size"] * args["steps"]
idx = nested_sample(len(rows), min(len(rows), need), 42)
examples = task_examples(task, rows, idx, "all")[:need]
settings = replace(TrainSettings(), batch_size=args["batch_size"], max_steps=args["steps"],
                   save_steps=args["save_steps"], learning_rate=1e-4)
if args["mode"] == "trainer":
    from hakari.finetune.trainer import TrainJob, train_adapter
    job = TrainJob(model=args["model"], output=Path(args["out"]), examples=examples,
                   settings=settings, device="cpu", probe_examples=0)
    summary = train_adapter(job, say=lambda s: None)
    result = {"train_s": summary.train_seconds, "steps": summary.steps}
else:
    import torch
    from transformers import DataCollatorForSeq2Seq
    from hakari.finetune.encode import ExampleEncoder
    from hakari.finetune.model import load_for_training
    runtime = resolve_runtime(settings, "cpu")
    model, tok = load_for_training(args["model"], settings, runtime, cache_dir=None)
    enc, _ = ExampleEncoder(tok, "auto", settings.max_length).encode_all(examples)
    collate = DataCollatorForSeq2Seq(tok, padding=True, label_pad_token_id=-100)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    model.train()
    t0 = time.perf_counter()
    for step in range(args["steps"]):
        chunk = enc[step * args["batch_size"]:(step + 1) * args["batch_size"]]
        batch = collate([e.as_features() for e in chunk])
        loss = model(**batch).loss
        loss.backward(); opt.step(); opt.zero_grad()
    result = {"train_s": time.perf_counter() - t0, "steps": args["steps"]}
result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
result["examples"] = len(examples)
print(json.dumps(result))
"""


def run_once(params: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(params)], capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--save-steps", type=int, default=3)
    parser.add_argument("--batch-sizes", default="1,4,8")
    parser.add_argument("--modes", default="trainer,bare")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.save_steps, args.batch_sizes = 1, 1, "1"
    print(f"model {args.model}, {args.steps} steps, CPU (Table 7 LoRA: r 64, alpha 16)")
    print(f"{'mode':8} {'batch':>5} {'examples/s':>11} {'s/step':>8} {'peak RSS MB':>12}")
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        for mode in args.modes.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                r = run_once(
                    {
                        "mode": mode,
                        "model": args.model,
                        "data_dir": args.data_dir,
                        "batch_size": batch_size,
                        "steps": args.steps,
                        "save_steps": args.save_steps,
                        "out": str(Path(tmp) / "adapter"),
                    }
                )
            per_step = r["train_s"] / r["steps"]
            rate = batch_size / per_step
            print(f"{mode:8} {batch_size:>5} {rate:>11.2f} {per_step:>8.2f} {r['rss_mb']:>12.0f}")


if __name__ == "__main__":
    main()
