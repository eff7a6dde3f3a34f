"""A prompt space's speed: hakari against lm-evaluation-harness 0.4.13 on the same prompts.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_space.py [--subject marketing]
        [--templates 100] [--limit 3] [--batch-size 32] [--data-dir ../shared/datasets]
        [--lm-eval-python /work/venv-lmeval/bin/python] [--quick]

The workload: a JMMLU subject's `space:N` templates (issue 24; N = 100 by default) on its
first `--limit` questions, the packaged SmolLM2-135M in fp32 on this CPU, completion
prompts. For each decoding, the whole `hakari.evaluate` (prompts rendered and tokenized,
a fresh response cache written, extraction, metrics; `--n-boot 0`) with the model loaded
once beforehand, against lm-evaluation-harness's HF backend (`HFLM`, the same local
model folder, the same batch size, loaded before its clock starts) on the same prompts:

* loglik: the same (context, continuation) pairs hakari scores; the answer is the
  continuation with the highest log-likelihood on both sides and must be identical.
  hakari scores a prompt's letters in one forward pass (they are single tokens after
  the prompt); the bench counts the rows the model ran and prints rows per prompt.
* constrained: hakari's regex-constrained answer against lm-eval's greedy
  `generate_until` (lm-eval has no constrained decoding; stop at a newline, the same
  token budget); agreement of the answers extracted by hakari's extraction is printed.

lm-eval runs in a separate venv (it pins its own dependencies) as a subprocess,
`benchmarks/lm_eval_peer.py`; without it the bench says so in one line and prints
hakari's rows alone. Install: `python3 -m venv /work/venv-lmeval`, then in it
`pip install torch==2.13.0` (CPU wheel), `pip install lm_eval==0.4.13 transformers
accelerate`. Default size: 100 templates × 2 questions (`--limit` for more; every
question of the subject is the full size). `--quick`: 4 templates × 2 questions, loglik
only, a smoke run in seconds plus lm-eval's start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from timing import add_smoke_flag, skip

import hakari
from hakari.backends.base import Backend
from hakari.backends.cache import default_cache_dir
from hakari.backends.hf import HFBackend
from hakari.backends.packaged import SMOLLM2, converted_model
from hakari.backends.registry import load_backend
from hakari.runner.sampling import task_instances
from hakari.runner.settings import PlanOptions
from hakari.tasks.extract import extract_answer
from hakari.tasks.families import load_tasks
from hakari.tasks.loader import Task
from hakari.tasks.prompts import RenderedPrompt, iter_numbered_chunks, select_templates
from hakari.tasks.space import expand_task

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT / "benchmarks" / "lm_eval_peer.py"
DEFAULT_LM_EVAL = Path(os.environ.get("HAKARI_LM_EVAL_PYTHON", "/work/venv-lmeval/bin/python"))
MODEL = "smollm2-135m"


@dataclass
class Workload:
    task_name: str
    task: Task
    templates: str
    limit: int
    data_dir: Path
    prompts: list[RenderedPrompt]


def workload(subject: str, n_templates: int, limit: int, data_dir: Path) -> Workload:
    name = f"jmmlu:{subject}"
    selection = f"space:{n_templates}"
    task = expand_task(load_tasks([name])[0], selection, data_dir=data_dir)
    opts = PlanOptions(limit=limit, data_dir=data_dir)
    numbered = list(task_instances(task, opts))
    templates = select_templates(task.spec, "all")
    prompts = [
        rp
        for chunk in iter_numbered_chunks(task.spec, templates, iter(numbered), 1 << 20)
        for rp in chunk
    ]
    return Workload(name, task, selection, limit, data_dir, prompts)


class KeepOpen:
    """The bench's one model for every `evaluate` call (which closes its backend)."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def close(self) -> None:
        pass


class RowCounter:
    """Rows (sequences) the model's forward pass ran, counted by a pre-hook."""

    def __init__(self, backend: HFBackend) -> None:
        self.rows = 0
        self.calls = 0
        backend.model.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, _module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None:
            self.rows += int(ids.shape[0])
            self.calls += 1

    def reset(self) -> None:
        self.rows = self.calls = 0


def run_hakari(
    work: Workload, backend: Backend, decoding: str, batch_size: int, out: Path
) -> tuple[float, dict[tuple[str, int], str]]:
    """Seconds of the whole evaluate on a fresh cache, and each prompt's output."""
    started = time.perf_counter()
    hakari.evaluate(
        models=[MODEL],
        tasks=[work.task_name],
        templates=work.templates,
        decodings=[decoding],
        limit=work.limit,
        data_dir=work.data_dir,
        prompt_format="completion",
        output_dir=out,
        cache_dir=out / "cache",
        n_boot=0,
        batch_size=batch_size,
        backend_factory=lambda _spec: KeepOpen(backend),  # type: ignore[arg-type,return-value]
    )
    seconds = time.perf_counter() - started
    rows = (json.loads(line) for line in (out / "samples.jsonl").open(encoding="utf-8"))
    return seconds, {(r["template_id"], r["index"]): r["output"] for r in rows}


def run_lm_eval(
    python: Path, work: Workload, folder: Path, batch_size: int, decodings: list[str], tmp: Path
) -> dict[str, Any]:
    pairs = [[rp.text, c] for rp in work.prompts for c in rp.answers or {}]
    generate = [[rp.text, rp.max_new_tokens] for rp in work.prompts]
    request = {
        "folder": str(folder),
        "batch_size": batch_size,
        "threads": torch.get_num_threads(),
        "loglik": pairs if "loglik" in decodings else [],
        "generate": generate if "constrained" in decodings else [],
    }
    (tmp / "requests.json").write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
    subprocess.run(
        [str(python), str(PEER), str(tmp / "requests.json"), str(tmp / "peer.json")], check=True
    )
    result: dict[str, Any] = json.loads((tmp / "peer.json").read_text(encoding="utf-8"))
    return result


def lm_eval_loglik_answers(work: Workload, scores: list[float]) -> list[str]:
    answers, k = [], 0
    for rp in work.prompts:
        options = list(rp.answers or {})
        values = scores[k : k + len(options)]
        k += len(options)
        answers.append(options[max(range(len(options)), key=values.__getitem__)])
    return answers


def agreement(work: Workload, ours: dict[tuple[str, int], str], theirs: list[str]) -> int:
    """Prompts whose extracted answer is the same on both sides."""
    from hakari._util.regex import compile_regex

    same = 0
    for rp, text in zip(work.prompts, theirs, strict=True):
        pattern = compile_regex(rp.regex)
        a = extract_answer(work.task.spec, ours[(rp.template_id, rp.index)], pattern, rp.answers)
        b = extract_answer(work.task.spec, text, pattern, rp.answers)
        same += a.answer == b.answer and a.used_fallback == b.used_fallback
    return same


@dataclass
class Row:
    decoding: str
    hakari_s: float
    peer_s: float | None = None
    same: int | None = None
    note: str = ""


def print_table(work: Workload, rows: list[Row], peer: str) -> None:
    n = len(work.prompts)
    print(f"\n{work.task_name}, {work.templates} × {work.limit} questions = {n} prompts; {peer}")
    header = ["decoding", "hakari s", "hakari prompts/s", "lm-eval s", "lm-eval prompts/s"]
    print(" | ".join([*header, "ratio", "same answers", "note"]))
    for r in rows:
        cells = [r.decoding, f"{r.hakari_s:.1f}", f"{n / r.hakari_s:.1f}"]
        if r.peer_s is None:
            cells += ["–", "–", "–", "–"]
        else:
            ratio = r.peer_s / r.hakari_s
            cells += [f"{r.peer_s:.1f}", f"{n / r.peer_s:.1f}", f"{ratio:.2f}×", f"{r.same}/{n}"]
        print(" | ".join([*cells, r.note]))


def bench(args: argparse.Namespace) -> None:
    work = workload(args.subject, args.templates, args.limit, args.data_dir)
    decodings = args.decodings.split(",")
    backend = load_backend(MODEL, dtype="float32", device="cpu", prompt_format="completion")
    assert isinstance(backend, HFBackend)
    counter = RowCounter(backend)
    rows: dict[str, Row] = {}
    outputs: dict[str, dict[tuple[str, int], str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-space-") as tmp_name:
        tmp = Path(tmp_name)
        for decoding in decodings:
            counter.reset()
            seconds, outputs[decoding] = run_hakari(
                work, backend, decoding, args.batch_size, tmp / decoding
            )
            note = ""
            if decoding == "loglik":
                per_prompt = counter.rows / len(work.prompts)
                note = f"{per_prompt:.2f} model rows per prompt ({counter.calls} forward calls)"
            rows[decoding] = Row(decoding, seconds, note=note)
            # said at once: lm-eval's side can take far longer (or be killed for memory)
            print(f"hakari {decoding}: {seconds:.1f} s {note}", flush=True)
        peer = "lm-eval: not run"
        python = args.lm_eval_python
        if args.skip_lm_eval:
            print("lm-evaluation-harness skipped (--skip-lm-eval)")
        elif not python.exists():
            print(f"lm-evaluation-harness skipped: no {python} (see this file's docstring)")
        else:
            folder = converted_model(SMOLLM2, default_cache_dir()).folder
            result = run_lm_eval(python, work, folder, args.batch_size, decodings, tmp)
            peer = f"lm-eval {result['version']} HFLM (load {result['load_s']:.1f} s, not timed)"
            times = {k: round(v, 1) for k, v in result.items() if k.endswith("_s")}
            print(f"lm-eval: {times}", flush=True)  # before the comparison, which may fail
            compare(work, rows, outputs, result)
    print_table(work, list(rows.values()), peer)


def compare(
    work: Workload,
    rows: dict[str, Row],
    outputs: dict[str, dict[tuple[str, int], str]],
    result: dict[str, Any],
) -> None:
    if "loglik" in rows and "loglik" in result:
        theirs = lm_eval_loglik_answers(work, result["loglik"])
        ours = outputs["loglik"]
        same = 0
        for rp, t in zip(work.prompts, theirs, strict=True):
            mine = ours[(rp.template_id, rp.index)]
            same += mine == t
            if mine != t:  # say which, so a difference can be looked into
                print(f"loglik differs: template {rp.template_id}, question {rp.index}: "
                      f"hakari {mine!r}, lm-eval {t!r}")  # fmt: skip
        rows["loglik"].peer_s, rows["loglik"].same = result["loglik_s"], same
    if "constrained" in rows and "texts" in result:
        row = rows["constrained"]
        row.peer_s = result["generate_s"]
        row.same = agreement(work, outputs["constrained"], result["texts"])
        row.note = (row.note + "; " if row.note else "") + "lm-eval: greedy generate_until"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subject", default="marketing")
    parser.add_argument("--templates", type=int, default=100)
    parser.add_argument("--limit", type=int, default=2, help="questions of the subject")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--decodings", default="loglik,constrained")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--lm-eval-python", type=Path, default=DEFAULT_LM_EVAL)
    parser.add_argument("--skip-lm-eval", action="store_true")
    parser.add_argument("--quick", action="store_true", help="4 templates × 2 questions, loglik")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.quick:
        args.templates, args.limit, args.decodings = 4, 2, "loglik"
    if args.smoke:
        args.templates, args.limit, args.decodings, args.skip_lm_eval = 2, 1, "loglik", True
    if not (args.data_dir / "jmmlu").is_dir():
        skip(f"no JMMLU under {args.data_dir} (--data-dir)")
    bench(args)


if __name__ == "__main__":
    main()
