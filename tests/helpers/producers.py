"""The real producers of `hakari import`'s inputs (issue 35), run offline on the packaged
SmolLM2: lm-evaluation-harness (its `hf` model, `--log_samples`), inspect_ai (its `hf/`
provider) and Every Eval Ever (its converters on both logs, then its validator), each in
the venvs of `scripts/install-producers.sh`.

The decision a reader must know: every run happens in a work folder laid out as a user's
would be, with the task files of tests/fixtures/producers/tasks copied in and the
converted model folder linked at `HuggingFaceTB/SmolLM2-135M-Instruct` (the upstream id),
given to both producers as that relative path. So the logs record no machine path, the
file names lm-eval derives from the model name are stable, and Every Eval Ever finds the
model's developer (its lm-eval converter takes it from the `org/` of `pretrained`, and
fails without one). Every process runs in a group of its own, killed on every way out.

`python -m tests.helpers.producers --write-fixtures` (in hakari's main venv) reruns all
three and replaces the committed logs under tests/fixtures/producers/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.paths import FIXTURES, REPO
from tests.helpers.servers import kill_group

VENV = Path(os.environ.get("HAKARI_PRODUCERS_VENV") or REPO / ".venv-producers")
EEE_VENV = VENV / "eee"
STAMP = ".hakari-producers-stamp"
PRODUCERS = FIXTURES / "producers"
TASKS = PRODUCERS / "tasks"
MODEL_LINK = "HuggingFaceTB/SmolLM2-135M-Instruct"
TASK = "demo_sentiment_en"  # the lm-eval group; its subtasks are TASK_<template>
TEMPLATES = ("0-1", "0-2", "1-2")
INSPECT_TASK_FILE = "demo_sentiment_en_inspect.py"
# generous bounds: a loaded 2-core machine runs each in 1-4 min; a hang is forever anyway
LM_EVAL_TIMEOUT_S = 900.0
INSPECT_TIMEOUT_S = 900.0
EEE_TIMEOUT_S = 300.0
# the committed outputs: one folder a tool, as the runs wrote them
OUTPUT_FOLDERS = ("lm-eval", "inspect", "eee")


class ProducerError(RuntimeError):
    """A producer exited non-zero or ran past its bound; the message ends with its log."""


@dataclass(frozen=True)
class ProducerRun:
    name: str
    command: list[str]
    seconds: float
    output: Path  # the folder it wrote


def missing_venv() -> str | None:
    """Why the producers cannot run here, or None when both venvs are built."""
    for python in (VENV / "bin" / "python", EEE_VENV / "bin" / "python"):
        if not python.is_file():
            return f"no producers venv ({python} missing): bash scripts/install-producers.sh"
    if not (VENV / STAMP).is_file():
        return f"the producers venv at {VENV} is unfinished: bash scripts/install-producers.sh"
    return None


def offline_env() -> dict[str, str]:
    """The environment of a producer: no hub, no telemetry, none of this venv's paths."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env |= {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "INSPECT_DISPLAY": "plain",
        "INSPECT_TELEMETRY": "",
        "TOKENIZERS_PARALLELISM": "false",
        "NO_COLOR": "1",
    }
    return env


def run_bounded(command: list[str], *, cwd: Path, timeout: float, log: Path) -> float:
    """Runs `command` in a process group of its own, its output to `log`; the group is
    killed on every way out (a timeout, an interrupt, an error here). Returns seconds."""
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(
            command, cwd=cwd, env=offline_env(), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            kill_group(proc, grace=5.0)
    seconds = time.monotonic() - started
    if code != 0:
        what = f"ran past {timeout:.0f} s" if code is None else f"exited {code}"
        tail = log.read_text(errors="replace")[-4000:]
        raise ProducerError(f"{command[0]} {what} ({log}):\n{tail}")
    return seconds


def prepare_workdir(workdir: Path, model_folder: Path) -> Path:
    """The task files and the model link in `workdir`, as a user's run folder holds them."""
    workdir.mkdir(parents=True, exist_ok=True)
    for path in TASKS.iterdir():
        if path.is_file():
            shutil.copy2(path, workdir / path.name)
    link = workdir / MODEL_LINK
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(model_folder.resolve(), target_is_directory=True)
    return workdir


def lm_eval_command() -> list[str]:
    return [
        str(VENV / "bin" / "lm_eval"), "run",
        "--model", "hf",
        "--model_args", f"pretrained={MODEL_LINK},dtype=float32",
        "--device", "cpu", "--batch_size", "4", "--seed", "0",
        "--tasks", TASK, "--include_path", ".",
        "--log_samples", "--output_path", "lm-eval",
    ]  # fmt: skip


def run_lm_eval(workdir: Path) -> ProducerRun:
    """`lm_eval run` on the group: results_<time>.json and one samples_<task>_<time>.jsonl
    a template, under lm-eval/<sanitized model name>/."""
    command = lm_eval_command()
    seconds = run_bounded(command, cwd=workdir, timeout=LM_EVAL_TIMEOUT_S,
                          log=workdir / "lm-eval.log")  # fmt: skip
    return ProducerRun("lm-eval", command, seconds, workdir / "lm-eval")


# inspect's Python API: the three templates as three tasks of one `eval` call, in one
# process (one model load; `inspect eval FILE -T template=...` three times writes the
# same logs at three times the start-up cost).
INSPECT_SCRIPT = f"""
import sys
from inspect_ai import eval
sys.path.insert(0, ".")
from {INSPECT_TASK_FILE.removesuffix(".py")} import demo_sentiment_en
logs = eval(
    [demo_sentiment_en(template=t) for t in {TEMPLATES!r}],
    model="hf/{MODEL_LINK}",
    model_args={{"device": "cpu", "do_sample": False}},
    log_dir="inspect",
    display="plain",
)
sys.exit(0 if all(log.status == "success" for log in logs) else 1)
"""


def inspect_command() -> list[str]:
    return [str(VENV / "bin" / "python"), "-c", INSPECT_SCRIPT]


def run_inspect(workdir: Path) -> ProducerRun:
    """inspect_ai's `eval` on the three templates: one `.eval` log a template under
    inspect/, the template a task argument and every sample's metadata."""
    command = inspect_command()
    seconds = run_bounded(command, cwd=workdir, timeout=INSPECT_TIMEOUT_S,
                          log=workdir / "inspect.log")  # fmt: skip
    return ProducerRun("inspect", command, seconds, workdir / "inspect")


def eee_convert_command(source: str, log_path: str, output_dir: str) -> list[str]:
    return [
        str(EEE_VENV / "bin" / "every_eval_ever"), "convert", source,
        "--log_path", log_path, "--output_dir", output_dir,
        "--source_organization_name", "hakari", "--evaluator_relationship", "third_party",
        *(["--include_samples"] if source == "lm_eval" else []),
    ]  # fmt: skip


# Every Eval Ever's datastore layout, which its validator checks relative to the working
# folder: data/<benchmark>/<developer>/<model>/<uuid>.json (+ <uuid>_samples.jsonl)
EEE_SOURCES = {"lm_eval": ("lm-eval", f"../../lm-eval/{MODEL_LINK.replace('/', '__')}"),
               "inspect": ("inspect", "../../inspect")}  # fmt: skip


def run_eee(workdir: Path) -> list[ProducerRun]:
    """Every Eval Ever's converters on both logs (lm-eval with its samples) into
    eee/<tool>/data/, then its validator on every file they wrote."""
    runs = []
    for source, (folder, log_path) in EEE_SOURCES.items():
        root = workdir / "eee" / folder
        root.mkdir(parents=True, exist_ok=True)
        command = eee_convert_command(source, log_path, "data")
        seconds = run_bounded(command, cwd=root, timeout=EEE_TIMEOUT_S,
                              log=workdir / f"eee-{folder}.log")  # fmt: skip
        runs.append(ProducerRun(f"eee-{folder}", command, seconds, root / "data"))
        files = sorted(str(p.relative_to(root)) for p in (root / "data").rglob("*") if p.is_file())
        command = [str(EEE_VENV / "bin" / "every_eval_ever"), "validate", *files]
        seconds = run_bounded(command, cwd=root, timeout=EEE_TIMEOUT_S,
                              log=workdir / f"eee-{folder}-validate.log")  # fmt: skip
        runs.append(ProducerRun(f"eee-{folder}-valid", command, seconds, root / "data"))
    return runs


# inspect_ai's own reader (`.eval` members are Zstandard-compressed, which Python's
# zipfile cannot read before 3.14): what a log holds, as JSON, for comparing two runs
INSPECT_SUMMARY_SCRIPT = """
import json, sys
from inspect_ai.log import read_eval_log
out = []
for path in sys.argv[2:]:
    log = read_eval_log(path)
    out.append({
        "version": log.version, "status": log.status, "task": log.eval.task,
        "task_registry_name": log.eval.task_registry_name, "task_args": log.eval.task_args,
        "model": log.eval.model, "model_args": log.eval.model_args,
        "scores": {s.name: {k: m.value for k, m in s.metrics.items()} for s in log.results.scores},
        "samples": [{
            "id": s.id, "epoch": s.epoch, "target": s.target, "metadata": s.metadata,
            "fields": sorted(s.model_dump(exclude_none=True)),
            "scores": {k: v.value for k, v in (s.scores or {}).items()},
        } for s in log.samples],
    })
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
"""


def inspect_summaries(logs: list[Path], *, workdir: Path) -> list[dict[str, Any]]:
    """What each inspect log holds (task, arguments, scores, samples), read with
    inspect_ai's `read_eval_log` in the producers venv, in the order given."""
    out = workdir / "inspect-summary.json"
    command = [str(VENV / "bin" / "python"), "-c", INSPECT_SUMMARY_SCRIPT, str(out),
               *(str(p.resolve()) for p in logs)]  # fmt: skip
    run_bounded(command, cwd=workdir, timeout=EEE_TIMEOUT_S, log=workdir / "inspect-summary.log")
    result: list[dict[str, Any]] = json.loads(out.read_text())
    return result


def run_all(workdir: Path, model_folder: Path) -> list[ProducerRun]:
    """Every producer, in order (Every Eval Ever reads the other two's logs)."""
    prepare_workdir(workdir, model_folder)
    return [run_lm_eval(workdir), run_inspect(workdir), *run_eee(workdir)]


def write_fixtures(workdir: Path) -> None:
    """Replaces the committed outputs with those of the run in `workdir`."""
    for name in OUTPUT_FOLDERS:
        target = PRODUCERS / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(workdir / name, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.helpers.producers")
    parser.add_argument(
        "--write-fixtures",
        action="store_true",
        help="replace the committed logs under tests/fixtures/producers/",
    )
    parser.add_argument("--workdir", type=Path, help="keep the run here (default: a temp folder)")
    args = parser.parse_args(argv)  # fmt: skip
    reason = missing_venv()
    if reason:
        print(reason, file=sys.stderr)
        return 1
    from hakari.backends.cache import default_cache_dir
    from hakari.backends.packaged import SMOLLM2, converted_model

    model_folder = converted_model(SMOLLM2, default_cache_dir()).folder
    with tempfile.TemporaryDirectory(prefix="hakari-producers-") as tmp:
        workdir = args.workdir or Path(tmp)
        for run in run_all(workdir, model_folder):
            print(f"{run.name:14s} {run.seconds:7.1f} s  {run.output}")
        if args.write_fixtures:
            write_fixtures(workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
