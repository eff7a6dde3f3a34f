"""lm-evaluation-harness's side of `bench_space.py`, run by the Python of a venv that has
`lm_eval==0.4.13` (and torch, transformers) but not hakari:

    /work/venv-lmeval/bin/python benchmarks/lm_eval_peer.py REQUESTS.json RESULT.json

REQUESTS.json: {"folder": HF model folder, "batch_size": int, "threads": int,
"loglik": [[context, continuation], ...], "generate": [[context, max_gen_toks], ...]}.
Its HF backend (`HFLM`, fp32, CPU) is loaded first, then each request kind is timed on its
own: `loglikelihood` (its one-token continuations share a forward pass per context) and
greedy `generate_until` (stop at a newline). RESULT.json gets the seconds, the
log-likelihoods and the texts. Imports nothing from hakari: the two sides share only the
prompts.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    requests = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    torch.set_num_threads(int(requests["threads"]))
    started = time.perf_counter()
    lm = HFLM(
        pretrained=requests["folder"],
        backend="causal",
        dtype="float32",
        device="cpu",
        batch_size=int(requests["batch_size"]),
    )
    result: dict[str, object] = {"load_s": time.perf_counter() - started}
    loglik = [
        Instance("loglikelihood", {}, (context, continuation), i)
        for i, (context, continuation) in enumerate(requests["loglik"])
    ]
    if loglik:
        started = time.perf_counter()
        scores = lm.loglikelihood(loglik, disable_tqdm=True)
        result["loglik_s"] = time.perf_counter() - started
        result["loglik"] = [float(value) for value, _ in scores]
    generate = [
        Instance(
            "generate_until",
            {},
            (context, {"until": ["\n"], "max_gen_toks": int(budget), "do_sample": False}),
            i,
        )
        for i, (context, budget) in enumerate(requests["generate"])
    ]
    if generate:
        started = time.perf_counter()
        texts = lm.generate_until(generate, disable_tqdm=True)
        result["generate_s"] = time.perf_counter() - started
        result["texts"] = list(texts)
    import lm_eval

    result["version"] = lm_eval.__version__
    Path(sys.argv[2]).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
