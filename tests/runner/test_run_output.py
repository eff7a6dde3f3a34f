"""Nothing lost: every run gets its own folder, a folder always holds a matching
results.json + samples.jsonl pair, and the models that finished are saved when a later
one fails (fake backend, no model)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.cli import app
from hakari.errors import ModelLoadError
from hakari.runner import evaluate
from hakari.runner.rundir import new_run_dir

TASK = "demo_sentiment_en"


def answer_a(req: GenerationRequest) -> str:
    return "0" if "0" in (req.regex or "0") else "A"


def read_pair(folder: Path) -> tuple[dict, list[dict]]:
    results = json.loads((folder / "results.json").read_text())
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert results["n_samples"] == len(samples)
    return results, samples


def test_runs_in_the_same_second_get_their_own_folders(tmp_path: Path) -> None:
    folders = {new_run_dir(tmp_path / "runs") for _ in range(50)}
    assert len(folders) == 50 and all(f.is_dir() for f in folders)


def test_two_concurrent_runs_never_share_a_folder(tmp_path: Path) -> None:
    barrier = threading.Barrier(2)
    results: list = []

    def run(name: str) -> None:
        backend = FakeBackend(lambda req: "positive", name=name)
        barrier.wait(timeout=10)  # start together
        results.append(
            evaluate(
                models=[name],
                tasks=[TASK],
                decodings=["greedy"],
                new_run_under=tmp_path / "runs",
                use_cache=False,
                n_boot=0,
                backend_factory=lambda spec: backend,
            )
        )

    threads = [threading.Thread(target=run, args=(n,)) for n in ("m1", "m2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2
    dirs = {r.output_dir for r in results}
    assert len(dirs) == 2
    for r in results:
        on_disk, samples = read_pair(Path(r.output_dir))
        assert {s["model"] for s in samples} == set(on_disk["models"])  # one run per folder
        assert len(samples) == 32 * 6


def fails_after(n: int):
    """A responder that raises on its (n+1)-th request."""
    seen = {"n": 0}

    def respond(req: GenerationRequest) -> str:
        seen["n"] += 1
        if seen["n"] > n:
            raise RuntimeError("backend died")
        return "positive"

    return respond


def test_failed_rerun_keeps_the_previous_pair(tmp_path: Path) -> None:
    out = tmp_path / "run"
    common = dict(tasks=[TASK], decodings=["greedy"], output_dir=out, use_cache=False, n_boot=0)
    evaluate(backend_factory=lambda s: FakeBackend(lambda r: "positive"), **common)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(RuntimeError, match="backend died") as info:
        evaluate(backend_factory=lambda s: FakeBackend(fails_after(20)), **common)
    assert "no results were written" in " ".join(info.value.__notes__)
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert after == before  # same pair, no partial files left behind
    read_pair(out)


def test_a_failing_second_model_keeps_the_first(tmp_path: Path) -> None:
    out = tmp_path / "run"

    def factory(spec: str) -> FakeBackend:
        if spec == "good":
            return FakeBackend(lambda r: "positive", name="good")
        return FakeBackend(fails_after(30), name="bad")

    with pytest.raises(RuntimeError) as info:
        evaluate(
            models=["good", "bad", "never"],
            tasks=[TASK],
            decodings=["greedy", "constrained"],
            output_dir=out,
            use_cache=False,
            n_boot=0,
            backend_factory=factory,
        )
    note = " ".join(info.value.__notes__)
    assert "good" in note and str(out / "results.json") in note
    results, samples = read_pair(out)
    assert list(results["models"]) == ["good"]
    assert results["failed"] == {"bad": "failed: backend died", "never": "not run"}
    assert {s["model"] for s in samples} == {"good"}  # the failed model's samples are dropped
    assert len(samples) == 32 * 6 * 2


def test_cli_second_model_fails_to_load_first_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second spec resolves but cannot load (e.g. a hub id that does not exist): one
    error line, exit 2, and a line that says where the first model's results are."""

    def load(spec: str, **kwargs: object) -> FakeBackend:
        if spec == "smollm2-135m":
            return FakeBackend(lambda r: "positive", name=spec)
        raise ModelLoadError(f"cannot load model {spec!r}: 404 not found", field="--model")

    monkeypatch.setattr("hakari.backends.registry.load_backend", load)
    monkeypatch.setattr(
        "hakari.backends.hub.hub_model", lambda repo, revision: False
    )  # hub answers
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            "smollm2-135m",
            "--model",
            "hf:nobody/nothing",
            "--tasks",
            TASK,
            "--limit",
            "4",
            "--no-cache",
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[-2].startswith("error: field --model: cannot load model 'hf:nobody/nothing'")
    assert "smollm2-135m" in lines[-1] and str(out / "results.json") in lines[-1]
    results, _ = read_pair(out)
    assert list(results["models"]) == ["smollm2-135m"]


def test_interrupt_keeps_finished_models(tmp_path: Path) -> None:
    def stop(req: GenerationRequest) -> str:
        raise KeyboardInterrupt

    def factory(spec: str) -> FakeBackend:
        return FakeBackend(lambda r: "positive" if spec == "a" else stop(r), name=spec)

    with pytest.raises(KeyboardInterrupt):
        evaluate(
            models=["a", "b"],
            tasks=[TASK],
            decodings=["greedy"],
            output_dir=tmp_path,
            use_cache=False,
            n_boot=0,
            backend_factory=factory,
        )
    results, _ = read_pair(tmp_path)
    assert list(results["models"]) == ["a"] and "b" in results["failed"]


def test_cli_default_output_is_a_new_folder_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        "hakari.backends.registry.load_backend",
        lambda spec, **kw: FakeBackend(lambda r: "positive"),
    )
    args = ["run", "--tasks", TASK, "--limit", "2", "--no-cache", "--n-boot", "0"]
    for _ in range(2):
        assert CliRunner().invoke(app, args).exit_code == 0
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2
    for folder in runs:
        read_pair(folder)


def test_a_killed_runs_temporary_samples_are_cleaned_up(tmp_path: Path) -> None:
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stale = tmp_path / f".samples.jsonl.{dead.stdout.strip()}-abcd.partial"
    stale.write_text('{"half": ')
    evaluate(
        tasks=[TASK],
        decodings=["greedy"],
        output_dir=tmp_path,
        use_cache=False,
        n_boot=0,
        backend_factory=lambda s: FakeBackend(lambda r: "positive"),
    )
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json", "samples.jsonl"]


def test_a_new_run_folder_is_removed_when_no_model_finished(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        evaluate(
            tasks=[TASK],
            decodings=["greedy"],
            new_run_under=tmp_path / "runs",
            use_cache=False,
            backend_factory=lambda s: FakeBackend(fails_after(3)),
        )
    assert list((tmp_path / "runs").iterdir()) == []


def test_cli_records_the_command_as_typed_without_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config.argv holds the command line (API keys and URL passwords scrubbed); the
    Markdown and HTML reports show it as text, whatever it holds."""
    from hakari.reports.inputs import load_inputs
    from hakari.reports.markdown import markdown_report
    from hakari.reports.page import build_html
    from hakari.results import EvalResults

    secret = "sk-argv-secret-123456"
    monkeypatch.setenv("HAKARI_API_KEY", secret)
    monkeypatch.setattr(
        "hakari.backends.registry.load_backend",
        lambda spec, **kw: FakeBackend(lambda r: "positive"),
    )
    out = tmp_path / "run"
    hostile_dir = tmp_path / "<script>alert(1)|````x"
    hostile_dir.mkdir()
    args = ["run", "--tasks", TASK, "--limit", "2", "--no-cache", "--n-boot", "0",
            "--output", str(out), "--data-dir", str(hostile_dir),
            "--regex-field", f"{secret}.x", "--alpha", "0.5"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    results, _ = read_pair(out)
    argv = results["config"]["argv"]
    assert argv[0] == "hakari" and argv[1:4] == ["run", "--tasks", TASK]
    assert "***.x" in argv and secret not in json.dumps(argv)
    assert argv[-2:] == ["--alpha", "0.5"]

    markdown = markdown_report(EvalResults.read(out / "results.json"))
    assert "<script>" in markdown.split("### Summary")[0]  # inside a code block: text
    fence = next(line for line in markdown.splitlines() if line.startswith("```"))
    assert fence == "`````text"  # longer than the 4 backticks in the folder name
    html = build_html(load_inputs([out]))
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "rebuilt from the run" not in html


def test_recorded_text_loses_keys_tokens_and_url_passwords(monkeypatch: pytest.MonkeyPatch) -> None:
    from hakari._util.redact import redact

    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdef")
    assert redact("--key=sk-live-abcdef") == "--key=***"
    assert redact("hf:https://me:pa55@host/x") == "hf:https://***@host/x"
    assert redact("Authorization: Bearer tok123") == "Authorization: Bearer ***"
    assert redact("openai:m@http://localhost:8000/v1") == "openai:m@http://localhost:8000/v1"
