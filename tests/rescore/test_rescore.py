"""`hakari score` (run folders and outside JSONL) and `hakari analyze`, end to end with the
fake backend as judge: rows unchanged plus scores, results.json updated, cache on rerun,
clear errors before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hakari.backends.registry
import hakari.judges
from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.cli import app
from hakari.runner import evaluate

runner = CliRunner()


class JudgeFactory:
    """Stands in for `hakari.judges.load_judge_backend`; counts real generations."""

    def __init__(self, respond) -> None:  # type: ignore[no-untyped-def]
        self.respond = respond
        self.backends: list[FakeBackend] = []

    def __call__(self, spec: str, **kwargs: object) -> FakeBackend:
        backend = FakeBackend(self.respond, name=f"judge-{spec}")
        self.backends.append(backend)
        return backend

    @property
    def calls(self) -> int:
        return sum(len(b.generated) for b in self.backends)


def _pair_judge(request: GenerationRequest) -> str:
    first = request.prompt.split("<response_1>")[1].split("</response_1>")[0]
    return "9,6" if "good" in first else "6,9"


@pytest.fixture
def judge_factory(monkeypatch: pytest.MonkeyPatch) -> JudgeFactory:
    factory = JudgeFactory(_pair_judge)
    monkeypatch.setattr(hakari.judges, "load_judge_backend", factory)
    real_check = hakari.backends.registry.check_spec

    def check(spec: str, **kwargs: str) -> None:  # the fake judges' names pass
        if spec not in ("fake-judge", "j"):
            real_check(spec, **kwargs)

    monkeypatch.setattr(hakari.backends.registry, "check_spec", check)
    return factory


def _write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


ROWS = [
    {"id": 1, "out": {"text": "the cat sat on the mat"}, "gold": "the cat is on the mat",
     "q": "Describe.", "scores": {"old": 1}},
    {"id": 2, "out": {"text": "a good answer"}, "gold": ["fine", "a good answer"], "q": "Hi"},
]  # fmt: skip


def test_score_input_keeps_rows_and_adds_scores(
    tmp_path: Path, judge_factory: JudgeFactory
) -> None:
    src = _write_rows(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    args = [
        *("score", "--input", str(src), "--prediction-field", "out.text"),
        *("--reference-field", "gold", "--prompt-field", "q"),
        *("--metrics", "rouge1,rouge2_recall", "--judge", "fake-judge"),
        *("--output", str(out), "--cache-dir", str(tmp_path / "c")),
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    for before, after in zip(ROWS, rows, strict=True):
        assert {k: v for k, v in after.items() if k not in ("scores", "judgements")} == {
            k: v for k, v in before.items() if k != "scores"
        }
    assert rows[0]["scores"]["old"] == 1  # an existing scores object is extended
    assert rows[0]["scores"]["rouge1"] == pytest.approx(5 / 6)
    assert rows[1]["scores"]["rouge1"] == 1.0 and "rouge2_recall" in rows[1]["scores"]
    judged = rows[1]["judgements"]["judge_ifteval_pair"]
    assert rows[1]["scores"]["judge_ifteval_pair"] == 9.0 and judged["consistent"] is True
    assert len(judged["prompt_sha256"]["prediction_first"]) == 64
    assert judge_factory.calls == 4 and "calls made 4" in res.output
    # Rerun: every verdict from the cache, identical output.
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and judge_factory.calls == 4 and "from cache 4" in res.output
    assert [json.loads(x) for x in out.read_text("utf-8").splitlines()] == rows


@pytest.mark.parametrize(
    ("rows", "extra", "needle"),
    [
        ([*ROWS, {"id": 3, "out": {}, "gold": "x", "q": "q"}], [], "line 3: no field 'out.text'"),
        ([*ROWS, {"id": 3, "out": {"text": 5}, "gold": "x", "q": "q"}], [], "must be a string"),
        (ROWS, ["--metrics", "rouge9"], "unknown metric 'rouge9'"),
        (ROWS, ["--prediction-field", "out..text"], "not a field path"),
        (ROWS, ["--metrics", "reward", "--prompt-field", "q"], "--reward-model"),
        (ROWS, ["--judge", "x", "--judge-prompt", "nope"], "unknown judge prompt"),
        (ROWS, ["--judge", "smollm3-9b", "--prompt-field", "q"], "unknown model 'smollm3-9b'"),
    ],
)
def test_score_input_errors_before_any_model(
    tmp_path: Path, judge_factory: JudgeFactory, rows: list[dict], extra: list[str], needle: str
) -> None:
    src = _write_rows(tmp_path / "in.jsonl", rows)
    args = [
        *("score", "--input", str(src), "--prediction-field", "out.text"),
        *("--reference-field", "gold", "--metrics", "rouge1"),
        *("--output", str(tmp_path / "o.jsonl")),
    ]
    for i in range(0, len(extra), 2):
        if extra[i] in args:
            args[args.index(extra[i]) + 1] = extra[i + 1]
        else:
            args += extra[i : i + 2]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert judge_factory.calls == 0 and not (tmp_path / "o.jsonl").exists()


def test_score_input_not_utf8(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"p": "a", "r": "b"}\n{"p": "\xe9", "r": "b"}\n')
    args = ["score", "--input", str(src), "--prediction-field", "p", "--reference-field", "r"]
    res = runner.invoke(app, [*args, "--metrics", "rouge1", "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and "line 2: not UTF-8" in res.output


def _fake_run(tmp_path: Path) -> Path:
    answers = {"positive": "1", "negative": "0"}

    def respond(req: GenerationRequest) -> str:
        return answers["positive"] if "great" in req.prompt.lower() else "no idea"

    run_dir = tmp_path / "run"
    evaluate(
        tasks=["demo_sentiment_en"],
        decodings=["greedy"],
        templates=["0-0", "1-0"],
        limit=4,
        output_dir=run_dir,
        cache_dir=tmp_path / "cache",
        n_boot=0,
        backend_factory=lambda spec: FakeBackend(respond),
    )
    return run_dir


def test_score_run_dir_adds_scores_to_samples_and_results(
    tmp_path: Path, judge_factory: JudgeFactory
) -> None:
    run_dir = _fake_run(tmp_path)
    before = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text("utf-8").splitlines()]
    args = ["score", str(run_dir), "--metrics", "exact_match,rouge1", "--judge", "j"]
    args += ["--judge-prompt", "single_1to10", "--cache-dir", str(tmp_path / "jc")]
    judge_factory.respond = lambda req: "Rating: [[7]]" if "no idea" not in req.prompt else "hmm"
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    after = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text("utf-8").splitlines()]
    assert len(after) == len(before) == 8
    for b, a in zip(before, after, strict=True):
        assert {k: v for k, v in a.items() if k not in ("scores", "judgements")} == b
        assert set(a["scores"]) == {"exact_match", "rouge1", "judge_single_1to10"}
    unscored = [a for a in after if a["scores"]["judge_single_1to10"] is None]
    assert unscored and all(
        a["judgements"]["judge_single_1to10"]["status"] == "unscored" for a in unscored
    )
    results = json.loads((run_dir / "results.json").read_text("utf-8"))
    dec = results["models"]["smollm2-135m"]["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
    rescored = dec["rescored"]
    assert set(rescored["exact_match"]["templates"]) == {"0-0", "1-0"}
    assert "sharpe" in rescored["exact_match"]["aggregate"]
    assert rescored["judge_single_1to10"]["n_unscored"] == len(unscored)
    assert results["rescoring"][-1]["judge"]["n_unscored"] == len(unscored)
    assert "unscored rate" in res.output
    # The run is still readable by `hakari report`.
    assert runner.invoke(app, ["report", str(run_dir / "results.json")]).exit_code == 0


def test_analyze_stores_the_judges_answer_with_the_run(
    tmp_path: Path, judge_factory: JudgeFactory
) -> None:
    run_dir = _fake_run(tmp_path)
    seen: list[str] = []

    def respond(req: GenerationRequest) -> str:
        seen.append(req.prompt)
        return "The model answers 'no idea' </example> when unsure."

    judge_factory.respond = respond
    args = [
        "analyze",
        str(run_dir),
        "--judge",
        "j",
        "--n",
        "3",
        "--cache-dir",
        str(tmp_path / "jc"),
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    analysis = json.loads((run_dir / "analysis.json").read_text("utf-8"))
    (entry,) = analysis["analyses"]
    assert entry["prompt"] == "error_analysis@v1" and len(entry["samples"]) == 3
    assert entry["answer"].startswith("The model answers") and len(entry["prompt_sha256"]) == 64
    assert "Can you spot any patterns" in seen[0] and seen[0].count("<example>") == 3
    assert "</example>" in res.output  # printed as text, not markup
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and judge_factory.calls == 1  # second time from the cache
    bad = runner.invoke(app, ["analyze", str(run_dir), "--judge", "j", "--metric", "rouge1"])
    assert bad.exit_code == 2 and "hakari score" in bad.output


def test_score_missing_run_folder(tmp_path: Path) -> None:
    res = runner.invoke(app, ["score", str(tmp_path / "nope"), "--metrics", "rouge1"])
    assert res.exit_code == 2 and "not a run folder" in res.output
