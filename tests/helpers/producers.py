"""The real producers of `hakari import`'s inputs (issue 35), run offline on the packaged
SmolLM2: lm-evaluation-harness (its `hf` model, `--log_samples`) and inspect_ai (its `hf/`
provider), both in hakari's own venv (its `dev` extra) on that venv's torch, and Every Eval
Ever (its converters on both logs, then its validator) in the small venv of
`scripts/install-eee.sh` (Python >= 3.12, no torch).

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
import importlib.util
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

# lm-eval and inspect_ai run on the Python of the tests (hakari's venv, `dev` extra)
PYTHON = Path(sys.executable)
EEE_VENV = Path(os.environ.get("HAKARI_EEE_VENV") or REPO / ".venv-eee")
EEE_STAMP = ".hakari-eee-stamp"  # written by scripts/install-eee.sh when the venv is complete
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


def missing_producers() -> str | None:
    """Why the producers cannot run here, or None when they can."""
    for module in ("lm_eval", "inspect_ai"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed here: hakari's dev extra (bash scripts/install.sh)"
    return missing_eee_venv()


def missing_eee_venv() -> str | None:
    """Why Every Eval Ever cannot run here, or None when its venv is complete."""
    if not (EEE_VENV / "bin" / "python").is_file() or not (EEE_VENV / EEE_STAMP).is_file():
        return f"no every-eval-ever venv at {EEE_VENV}: bash scripts/install-eee.sh"
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


def run_bounded(
    command: list[str], *, cwd: Path, timeout: float, log: Path, ok: tuple[int, ...] = (0,)
) -> float:
    """Runs `command` in a process group of its own, its output to `log`; the group is
    killed on every way out (a timeout, an interrupt, an error here). An exit status not
    in `ok` raises ProducerError. Returns seconds."""
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
    if code not in ok:
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
        str(PYTHON), "-m", "lm_eval", "run",
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
    return [str(PYTHON), "-c", INSPECT_SCRIPT]


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
        started = time.monotonic()
        eee_validate(root, log=workdir / f"eee-{folder}-validate.log")
        seconds = time.monotonic() - started
        runs.append(ProducerRun(f"eee-{folder}-valid", ["every_eval_ever", "validate"], seconds,
                                root / "data"))  # fmt: skip
    return runs


def eee_validate(root: Path, *, log: Path) -> list[dict[str, Any]]:
    """Every Eval Ever's validator on every file under root/data (the datastore layout,
    which it checks relative to its working folder): its report a file (`file`, `valid`,
    `errors`, `warnings`). A file it finds invalid raises ProducerError; warnings (exit
    status 2: "valid locally, but not merge-ready") are the caller's to judge."""
    files = sorted(str(p.relative_to(root)) for p in (root / "data").rglob("*") if p.is_file())
    if not files:
        raise ProducerError(f"no Every Eval Ever files under {root / 'data'}")
    command = [str(EEE_VENV / "bin" / "every_eval_ever"), "validate", "--format", "json", *files]
    run_bounded(command, cwd=root, timeout=EEE_TIMEOUT_S, log=log, ok=(0, 2))
    reports = validation_reports(log)
    if sorted(r["file"] for r in reports) != files or not all(r["valid"] for r in reports):
        raise ProducerError(f"Every Eval Ever's validator refused files under {root}: {log}")
    return reports


def validation_reports(log: Path) -> list[dict[str, Any]]:
    """The reports in the log of `every_eval_ever validate --format json`."""
    text = log.read_text()
    reports: list[dict[str, Any]] = json.JSONDecoder().raw_decode(text, text.index("["))[0]
    return reports


def validation_warnings(reports: list[dict[str, Any]]) -> list[str]:
    return [f"{r['file']}: {w}" for r in reports for w in r["warnings"]]


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
    reason = missing_producers()
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
