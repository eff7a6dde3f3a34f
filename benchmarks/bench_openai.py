"""The OpenAI-compatible backend's speed: requests/s at concurrency 1, 4 and 16, and
hakari's own client CPU per request, against

* an instant-answer stub server in its own process (tests/helpers/http_doubles.py): what is
  left is hakari's overhead (request building, the openai client, JSON parsing, the
  stop rule, one cache commit per response); it must stay under 2 ms a request;
* `transformers serve` with the packaged SmolLM2 on loopback (CPU), the demo task's
  prompts; and the same prompts through the in-process transformers backend.

Also: the response cache committing one row per transaction (what the server backends
do, so a kill loses only requests in flight) against 64 rows per transaction.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_openai.py [--n-stub 2000] [--limit 4]
        [--no-server]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import REPO, add_smoke_flag

sys.path.insert(0, str(REPO))  # tests.helpers.servers: one way to start and stop a server

from tests.helpers.servers import free_port, wait_ready

from hakari.backends.base import GenerationRequest, GenerationResult
from hakari.backends.cache import ResponseCache, cached_generate, generation_to_payload
from hakari.backends.openai import OpenAIBackend, parse_spec
from hakari.backends.serving import ServingOptions

ROOT = REPO
LEVELS = (1, 4, 16)
PER_REQUEST = (8, 32)  # --prompts-per-request rows, at concurrency 16


def timed_run(backend: OpenAIBackend, requests: list[GenerationRequest]) -> tuple[float, float]:
    """(prompts/s, client CPU ms per prompt) of one cached run on a fresh cache."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "responses.sqlite3")
        wall, cpu = time.perf_counter(), time.process_time()
        _, generated = cached_generate(backend, requests, cache)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        cache.close()
    assert generated == len(requests)
    return len(requests) / wall, 1000 * cpu / len(requests)


def bench_stub(n: int, warm_n: int = 50) -> list[tuple[str, int, int, float, float]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "helpers" / "http_doubles.py"), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    rows = []
    try:
        wait_ready(url, proc)
        settings = [(level, 1) for level in LEVELS] + [(16, per) for per in PER_REQUEST]
        for level, per_request in settings:
            backend = OpenAIBackend(
                parse_spec(f"openai:stub-model@{url}"),
                prompt_format="completion",
                options=ServingOptions(concurrency=level, prompts_per_request=per_request),
            )
            warm = [GenerationRequest(prompt=f"warm {i}", max_new_tokens=5) for i in range(warm_n)]
            backend.generate(warm)
            requests = [
                GenerationRequest(prompt=f"c{level}/{per_request} prompt {i}", max_new_tokens=5)
                for i in range(n)
            ]
            rps, cpu = timed_run(backend, requests)
            rows.append(("instant stub server", level, per_request, rps, cpu))
            backend.close()
    finally:
        proc.terminate()
        proc.wait()
    return rows


def demo_requests(limit: int, use_chat: bool) -> list[GenerationRequest]:
    from hakari.runner.requests import generation_request
    from hakari.tasks.data import iter_rows
    from hakari.tasks.loader import load_task
    from hakari.tasks.prompts import iter_chunks, select_templates

    out = []
    for name in ("demo_sentiment_en", "demo_sentiment_ja"):
        task = load_task(name)
        rows = iter_rows(task.spec, data_dir=None, task_dir=task.task_dir, limit=limit)
        for chunk in iter_chunks(task.spec, select_templates(task.spec, "all"), rows, 64):
            out.extend(generation_request(rp, "greedy", use_chat) for rp in chunk)
    return out


def bench_server(limit: int) -> list[tuple[str, int, int, float, float]]:
    from hakari.backends.cache import default_cache_dir
    from hakari.backends.packaged import SMOLLM2, converted_model
    from hakari.backends.registry import load_backend

    folder = converted_model(SMOLLM2, default_cache_dir()).folder
    requests = demo_requests(limit, use_chat=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "hub").mkdir()
        port = free_port()
        env = os.environ | {"HF_HUB_CACHE": str(Path(tmp) / "hub"), "HF_HUB_OFFLINE": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "transformers.cli.transformers", "serve", str(folder),
             "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--dtype", "float32"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}/v1"
        try:
            wait_ready(url, proc)
            for level in LEVELS:
                backend = OpenAIBackend(
                    parse_spec(f"openai:{folder}@{url}"),
                    options=ServingOptions(concurrency=level, request_timeout=600),
                )
                backend.generate(requests[:2])  # warm the model
                rps, cpu = timed_run(backend, requests)
                rows.append(("transformers serve, SmolLM2 (CPU)", level, 1, rps, cpu))
                backend.close()
        finally:
            proc.terminate()
            proc.wait()
    local = load_backend("smollm2-135m", device="cpu")
    local.generate(requests[:2])
    wall, cpu = time.perf_counter(), time.process_time()
    local.generate(requests, batch_size=8)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rows.append(
        ("in-process HFBackend, batch 8", 0, 0, len(requests) / wall, 1000 * cpu / len(requests))
    )
    local.close()
    return rows


def bench_commits(n: int = 5000) -> list[tuple[str, float]]:
    payload = generation_to_payload(GenerationResult(text=" positive", n_tokens=2))
    out = []
    for per_tx in (1, 64):
        with tempfile.TemporaryDirectory() as tmp:
            cache = ResponseCache(Path(tmp) / "responses.sqlite3")
            items = [(f"key-{i:08d}", payload) for i in range(n)]
            start = time.perf_counter()
            for s in range(0, n, per_tx):
                cache.put_many("generate", items[s : s + per_tx])
            elapsed = time.perf_counter() - start
            cache.close()
        out.append((f"cache commit, {per_tx} row(s) per transaction", 1e6 * elapsed / n))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-stub", type=int, default=2000, help="requests per level, stub")
    parser.add_argument("--limit", type=int, default=4, help="demo instances per task, server")
    parser.add_argument("--no-server", action="store_true", help="skip transformers serve")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:  # the stub server and the cache only: transformers serve takes a minute
        args.n_stub, args.no_server = 20, True
    rows = bench_stub(args.n_stub, warm_n=5 if args.smoke else 50)
    if not args.no_server:
        rows += bench_server(args.limit)
    head = f"{'server':36} {'concurrency':>11} {'prompts/req':>11} {'prompts/s':>10}"
    print(f"\n{head} {'client CPU ms/prompt':>21}")
    for name, level, per_request, rps, cpu in rows:
        shown = str(level) if level else "-"
        per = str(per_request) if per_request else "-"
        print(f"{name:36} {shown:>11} {per:>11} {rps:10.1f} {cpu:21.2f}")
    print(f"\n{'response cache':44} {'µs per row':>10}")
    for name, us in bench_commits(200 if args.smoke else 5000):
        print(f"{name:44} {us:10.1f}")
    print(json.dumps({"cpus": os.cpu_count(), "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
