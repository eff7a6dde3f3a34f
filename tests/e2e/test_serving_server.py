"""The OpenAI-compatible backend against a real server: `transformers serve` with the
packaged SmolLM2 on loopback (offline, CPU), behind a fault-injecting proxy.

* A run whose requests meet 30% faults (429 + Retry-After, 500, a stall past the
  timeout, malformed JSON, a reset connection) completes with the metrics of the
  fault-free run; the server answers each prompt once; a rerun sends nothing.
* kill -9 in the middle of a CLI run, then the same command: only the missing prompts
  reach the server, and the metrics equal the fault-free run's.
* Greedy answers through the server agree with the in-process transformers backend.
* The API key never reaches results, samples, the cache or the logs.

`transformers serve` needs fastapi and uvicorn (the `dev` extra); without them these
tests skip. It ignores `logprobs` and rejects `structured_outputs`, so log-likelihood
and regex constraints over HTTP are tested against scripted servers
(tests/backends/test_openai.py) and would need vLLM to run for real.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hakari
from hakari.backends.serving import ServingOptions
from tests.helpers.cache import kill_once_cached
from tests.helpers.http_doubles import FAULT_KINDS, FaultProxy
from tests.helpers.servers import free_port

pytestmark = pytest.mark.slow
SECRET = "sk-hakari-server-test-9f8e7d6c5b4a"
TASK = "demo_sentiment_en"
LIMIT = 2
TOTAL = LIMIT * 6  # 6 templates


@dataclass
class Served:
    model: str  # the name the server answers to (the folder it was started with)
    host: str
    port: int
    timeout: float  # the client's request timeout: well above this machine's latency


def measure_latency(port: int, model: str) -> float:
    """Seconds for one short chat completion (the first, which warms the model, excluded)."""
    message = {"role": "user", "content": "Is this review positive?"}
    body = json.dumps({"model": model, "max_tokens": 5, "messages": [message]})
    times = []
    for _ in range(2):
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            data=body.encode(),
            headers={"content-type": "application/json"},
        )
        started = time.monotonic()
        urllib.request.urlopen(request, timeout=300).read()
        times.append(time.monotonic() - started)
    return times[-1]


@pytest.fixture(scope="module")
def served(smollm2_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    for module in ("fastapi", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"transformers serve needs {module}: pip install 'hakari[dev]'")
    workdir = tmp_path_factory.mktemp("transformers-serve")
    (workdir / "hub").mkdir()  # /v1/models answers 500 while the hub cache folder is missing
    port = free_port()
    log = (workdir / "serve.log").open("w")
    env = os.environ | {"HF_HUB_CACHE": str(workdir / "hub"), "HF_HUB_OFFLINE": "1"}
    cmd = [
        sys.executable, "-m", "transformers.cli.transformers", "serve", str(smollm2_folder),
        "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--dtype", "float32",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    tail = (workdir / "serve.log").read_text()[-2000:]
                    pytest.fail(f"transformers serve did not start:\n{tail}")
                time.sleep(0.5)
        # A stall is a request that outlives the timeout, so the timeout must sit well above
        # the server's own latency: 10 s on an idle machine, more on a busy one.
        timeout = max(10.0, 10 * measure_latency(port, str(smollm2_folder)))
        yield Served(str(smollm2_folder), "127.0.0.1", port, timeout)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def run(served: Served, proxy: FaultProxy, cache: Path, out: Path) -> hakari.EvalResults:
    return hakari.evaluate(
        models=[f"openai:{served.model}@{proxy.url}"],
        tasks=[TASK],
        decodings=["greedy"],
        limit=LIMIT,
        output_dir=out,
        cache_dir=cache,
        n_boot=0,
        serving=ServingOptions(
            concurrency=2, request_timeout=served.timeout, backoff_base=0.1, backoff_cap=1.0
        ),
    )


def metrics(out: Path) -> dict[str, Any]:
    data = json.loads((out / "results.json").read_text())
    (model,) = data["models"].values()
    dec = model["tasks"][TASK]["decodings"]["greedy"]
    return {"templates": dec["templates"], "aggregate": dec["aggregate"]}


def ask_of(body: dict[str, Any]) -> str:
    """A request as the model sees it: the prompt and the stop strings (a re-ask after an
    answer cut in its leading whitespace has fewer stops: see hakari.backends.serving)."""
    return json.dumps([body.get("messages") or body.get("prompt"), body.get("stop")])


def first_asks(bodies: list[dict[str, Any]]) -> int:
    return sum("stop" in b for b in bodies)


@pytest.fixture(scope="module")
def clean_run(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Path:
    proxy = FaultProxy((served.host, served.port), fault_slots=())
    out = tmp_path_factory.mktemp("clean")
    try:
        run(served, proxy, out / "cache", out / "run")
    finally:
        proxy.close()
    assert first_asks(proxy.upstream_ok) == TOTAL
    assert max(Counter(ask_of(b) for b in proxy.upstream_ok).values()) == 1
    (out / "asks.json").write_text(json.dumps(sorted(ask_of(b) for b in proxy.upstream_ok)))
    return out / "run"


def test_faults_do_not_change_results(
    served: Served,
    clean_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("HAKARI_API_KEY", SECRET)
    proxy = FaultProxy((served.host, served.port), stall=served.timeout + 2, retry_after="1")
    try:
        with caplog.at_level(logging.DEBUG):
            faulty = run(served, proxy, tmp_path / "cache", tmp_path / "faulty")
        assert set(proxy.faults) == set(FAULT_KINDS), proxy.faults
        assert len(proxy.faults) >= 0.25 * len(proxy.seen)
        assert metrics(tmp_path / "faulty") == metrics(clean_run)
        dec = faulty.models[next(iter(faulty.models))].tasks[TASK].decodings["greedy"]
        assert (dec.generated, dec.cached) == (TOTAL, 0)
        # each request reached the model once: faults never cost a second generation
        asks = sorted(ask_of(b) for b in proxy.upstream_ok)
        assert asks == json.loads((clean_run.parent / "asks.json").read_text())

        answered = len(proxy.upstream_ok)
        again = run(served, proxy, tmp_path / "cache", tmp_path / "again")
        dec = again.models[next(iter(again.models))].tasks[TASK].decodings["greedy"]
        assert (dec.generated, dec.cached) == (0, TOTAL)
        assert len(proxy.upstream_ok) == answered  # cached prompts never reach the server
        assert metrics(tmp_path / "again") == metrics(clean_run)
    finally:
        proxy.close()
    # the key was sent, and is nowhere hakari writes
    assert any(s.headers.get("authorization") == f"Bearer {SECRET}" for s in proxy.seen)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("responses.sqlite3") for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in caplog.text


def test_kill_minus_9_then_rerun(served: Served, clean_run: Path, tmp_path: Path) -> None:
    proxy = FaultProxy((served.host, served.port), fault_slots=())
    cache = tmp_path / "cache"

    def cmd(out: str) -> list[str]:
        return [
            sys.executable, "-m", "hakari", "run", "--model", f"openai:{served.model}@{proxy.url}",
            "--tasks", TASK, "--decoding", "greedy", "--limit", str(LIMIT), "--n-boot", "0",
            "--concurrency", "1", "--request-timeout", str(served.timeout),
            "--cache-dir", str(cache), "--output", str(tmp_path / out),
        ]  # fmt: skip

    try:
        done_before = kill_once_cached(
            cmd("killed"), cache, proxy, rows=3, wait_s=240, drain_s=served.timeout
        )
        assert 3 <= done_before < TOTAL
        sent_before = len(proxy.upstream_ok)

        resumed = subprocess.run(cmd("resumed"), capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    finally:
        proxy.close()
    data = json.loads((tmp_path / "resumed" / "results.json").read_text())
    (model,) = data["models"].values()
    dec = model["tasks"][TASK]["decodings"]["greedy"]
    assert (dec["generated"], dec["cached"]) == (TOTAL - done_before, done_before)
    assert first_asks(proxy.upstream_ok[sent_before:]) == TOTAL - done_before
    assert metrics(tmp_path / "resumed") == metrics(clean_run)


def test_greedy_answers_agree_with_the_transformers_backend(
    served: Served, clean_run: Path, tmp_path: Path
) -> None:
    hakari.evaluate(
        models=[f"hf:{served.model}"],  # the folder the server runs
        tasks=[TASK],
        decodings=["greedy"],
        limit=LIMIT,
        output_dir=tmp_path / "hf",
        cache_dir=tmp_path / "cache",
        batch_size=1,
        n_boot=0,
        device="cpu",
    )

    def outputs(run_dir: Path) -> dict[tuple[str, int], str]:
        rows = [json.loads(line) for line in (run_dir / "samples.jsonl").open()]
        return {(r["template_id"], r["index"]): r["output"] for r in rows}

    server, local = outputs(clean_run), outputs(tmp_path / "hf")
    assert server.keys() == local.keys() and len(server) == TOTAL
    agree = sum(server[k] == local[k] for k in server) / len(server)
    print(f"greedy agreement, transformers serve vs in-process: {agree:.3f} of {TOTAL}")
    assert agree >= 0.9, {k: (server[k], local[k]) for k in server if server[k] != local[k]}
