"""A small deterministic run whose results.json is kept as a golden file.

`tests/fixtures/golden_run/results.json` was written by this run on `main` before the
results.json statistics became typed models (issue 18); `tests/runner/test_results_json.py`
reruns it and compares the texts (floats up to the CPU's rounding: `assert_same_run`).
Two fake models with hash-chosen answers (so `paired` and `alpha_sweep` exist, with
verdicts both ways and a negative MCC mean), three tasks
(label, number, text: loglik is skipped on two), greedy + constrained + loglik, a seeded
`--sample`, a small bootstrap. `normalize` replaces what differs between two runs of the
same command by nature (the clock, the folder, the checkout, the library versions).

Regenerate (only when results.json is meant to change):
`python -m tests.helpers.golden_run` from the repository root.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hakari.backends.base import GenerationRequest, LoglikRequest
from hakari.backends.fake import FakeBackend
from hakari.runner import evaluate
from hakari.tasks.data import iter_rows
from hakari.tasks.loader import load_task
from hakari.tasks.prompts import RenderedPrompt, iter_chunks
from tests.helpers.paths import REPO

FIXTURES = REPO / "tests" / "fixtures" / "golden_run"
GOLDEN = FIXTURES / "results.json"
# one model without a bootstrap: the aggregates without their interval keys
GOLDEN_NO_BOOTSTRAP = FIXTURES / "results-one-model-no-bootstrap.json"
TASKS = ("demo_sentiment_en", str(FIXTURES / "tiny_sts.yaml"), str(FIXTURES / "tiny_qa.yaml"))
MODELS = ("steady", "shaky")
ARGV = ("hakari", "run", "--model", "steady,shaky", "--sample", "10", "--seed", "7")
PLACEHOLDER = "<varies between runs>"


def _unit(*parts: str) -> float:
    """A number in [0, 1) fixed by `parts` (sha256): reproducible coin flips."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _prompts() -> dict[str, RenderedPrompt]:
    table: dict[str, RenderedPrompt] = {}
    for name in TASKS:
        spec = load_task(name).spec
        for chunk in iter_chunks(spec, spec.templates, iter_rows(spec), 100):
            table.update((rp.text, rp) for rp in chunk)
    return table


def _answer(rp: RenderedPrompt, right: bool, salt: str) -> str:
    if rp.answers is not None:  # label: the key of the gold, or another key
        keys = sorted(rp.answers)
        good = [k for k in keys if rp.answers[k] == rp.gold]
        bad = [k for k in keys if rp.answers[k] != rp.gold]
        pool = good if right else bad
        return pool[int(_unit(salt, rp.text) * len(pool))]
    if isinstance(rp.gold, list):  # text: a reference answer, or a wrong phrase
        return str(rp.gold[0]) if right else "no idea"
    noise = 0.0 if right else 2.5 * (_unit("noise", salt, rp.text) - 0.5)
    return f"{min(5.0, max(0.0, float(rp.gold) + noise)):.1f}"


def responder(model: str, table: dict[str, RenderedPrompt]) -> Callable[[GenerationRequest], str]:
    """`steady` is right 80% of the time; `shaky` 55%, chatters around greedy answers on
    prompt type 1, and ignores the constraint on 1 prompt in 10 (constraint misses)."""
    p_right = {"steady": 0.8, "shaky": 0.55}[model]

    def respond(request: GenerationRequest) -> str:
        rp = table[request.prompt]
        right = _unit(model, rp.text) < p_right
        answer = _answer(rp, right, model)
        if model == "shaky":
            if request.regex is None and rp.template_id.startswith("1-"):
                return f"I think: {answer} (not sure)"
            if request.regex is not None and _unit("miss", rp.text) < 0.1:
                return "???"
        return answer

    return respond


def loglik_scorer(model: str) -> Callable[[LoglikRequest, str], float]:
    def score(request: LoglikRequest, continuation: str) -> float:
        return -10.0 * _unit(model, request.prompt, continuation)

    return score


def run(out_dir: Path, cache_dir: Path, *, bootstrap: bool = True) -> Path:
    """The golden run into `out_dir` (`bootstrap=False`: the first model alone, without a
    bootstrap); returns its results.json."""
    table = _prompts()
    models = MODELS if bootstrap else MODELS[:1]
    backends = {
        m: FakeBackend(responder(m, table), name=m, loglik_scorer=loglik_scorer(m)) for m in models
    }
    evaluate(
        models=list(models),
        tasks=list(TASKS),
        decodings=["greedy", "constrained", "loglik"],
        sample=10,
        seed=7,
        n_boot=40 if bootstrap else 0,
        alpha=1.0,
        batch_size=4,
        cache_dir=cache_dir,
        output_dir=out_dir,
        backend_factory=lambda spec: backends[spec],
        argv=list(ARGV),
    )
    return out_dir / "results.json"


def normalize(text: str) -> str:
    """results.json text with what differs between two runs of the same command replaced
    by a placeholder: `config.started` (the clock), `output_dir`, every `wall_s` (timing),
    `versions` (the installed libraries) and the folder of each task file in
    `config.task_files` (the checkout). Everything else (keys, their order, float
    formatting, nulls, indentation) is kept."""
    data: dict[str, Any] = json.loads(text)
    replaced = {
        '"started": ': json.dumps(data["config"]["started"]),
        '"output_dir": ': json.dumps(data["output_dir"]),
    }
    for key, value in replaced.items():
        assert text.count(key + value) == 1, key
        text = text.replace(key + value, key + json.dumps(PLACEHOLDER))
    text = re.sub(r'"wall_s": [0-9.e+-]+', f'"wall_s": "{PLACEHOLDER}"', text)
    versions = json.dumps(data["versions"], indent=2, ensure_ascii=False).replace("\n", "\n  ")
    assert text.count(versions) == 1
    text = text.replace(versions, json.dumps(PLACEHOLDER))
    for path in data["config"]["task_files"].values():
        folder = json.dumps(str(Path(path).parent))[:-1]  # the opening quote and the path
        text = text.replace(folder, json.dumps("<task folder>")[:-1])
    return text


# a JSON float outside the integers (the integers, counts and seeds, must be equal)
_FLOAT = re.compile(r"-?\d+(?:\.\d+(?:[eE][+-]?\d+)?|[eE][+-]?\d+)")
# how far two CPUs' floats may be apart: numpy and OpenBLAS sum in SIMD lanes whose width
# (AVX-512 or AVX2) sets the order of the additions, so a Pearson r can differ in its last
# bit between two machines (0.9990570320527566 on one, ...568 on another); a statistic
# computed from it may carry that difference a few digits further up
FLOAT_TOLERANCE = 1e-12


def assert_same_run(written: str, golden: str) -> None:
    """`written` is the golden results.json (both normalized): every key, its order, every
    string, integer and null the same, and every float equal up to the float rounding of
    the CPU (`FLOAT_TOLERANCE`, relative and absolute)."""
    written, golden = normalize(written), normalize(golden)
    assert _FLOAT.split(written) == _FLOAT.split(golden)  # all but the floats, exactly
    pairs = zip(_FLOAT.findall(written), _FLOAT.findall(golden), strict=True)
    apart = [
        (w, g)
        for w, g in pairs
        if not math.isclose(float(w), float(g), rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)
    ]
    assert not apart, f"{len(apart)} floats differ beyond rounding, e.g. {apart[:3]}"


if __name__ == "__main__":  # regenerate the golden file (see the module docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for golden, bootstrap in ((GOLDEN, True), (GOLDEN_NO_BOOTSTRAP, False)):
            folder = Path(tmp) / golden.stem  # a fresh cache each: `generated` counts
            written = run(folder / "run", folder / "cache", bootstrap=bootstrap)
            golden.write_bytes(written.read_bytes())
            print(f"wrote {golden}", file=sys.stderr)
