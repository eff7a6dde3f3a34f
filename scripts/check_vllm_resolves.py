"""Shows that `pip install 'hakari[vllm]'` resolves: hakari declares ranges (torch>=2.6,
transformers>=5.0, llguidance>=1.0, openai 3.x) that leave room for vLLM's exact pins
(vllm 0.33: torch==2.14.0, transformers<5.21, llguidance<1.8, certifi>=2026.10.19).

A full resolution on the package index with uv (`uv pip compile`: ~10 s, it reads wheel
metadata without downloading vLLM's 336 MB wheel; `pip install --dry-run` does the same
resolution in ~3 min), for this machine's platform and Python. Nothing is installed in
the project's environment: uv goes into a throwaway venv.

An index can lag behind vLLM's own pins (this one had certifi only up to 2026.10.18 when
vLLM 0.33 asked for 2026.10.19). That says nothing about hakari, so when the only conflict
is "the index lacks a version vLLM asks for, of a package hakari does not require", the
check resolves again with that package held at the newest version the index has, names it
in a warning, and passes. Any conflict that involves hakari's own requirements fails.

    python3 scripts/check_vllm_resolves.py [--pip] [--project DIR]
    (--pip: also the literal pip dry run; --project: another pyproject.toml, e.g. to see
    that a conflicting range fails)

Exit codes: 0 resolves (maybe with a warning), 1 conflict, 3 could not check (no index,
no uv): .ci/run fails on 1 and warns on 3.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOWN = ("vllm", "torch", "transformers", "llguidance", "openai", "certifi")
# uv's explanation when an index lacks a version: "Because only certifi<=2026.10.18 is
# available and vllm>=0.33.0 depends on certifi>=2026.10.19, ..."
LAGGING = re.compile(
    r"only (?P<name>[A-Za-z0-9_.\-]+)(?:<=|==)(?P<have>[^\s,]+) (?:is|are) available and "
    r"(?P<who>[A-Za-z0-9_.\-]+)\S* depends on (?P=name)(?P<wants>[<>=!~][^\s,]*)"
)


def own_requirements(project_dir: Path) -> set[str]:
    """Names hakari itself requires (core and every extra), lower-case."""
    project = tomllib.loads((project_dir / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    return {re.split(r"[\s\[<>=!~;]", s, maxsplit=1)[0].lower() for s in specs}


def install_uv(folder: Path) -> Path:
    venv.create(folder, with_pip=True)
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", "uv>=0.5"]
    subprocess.run(pip, check=True, timeout=300)
    return folder / "bin" / "uv"


def compile_vllm(
    uv: Path, project_dir: Path, overrides: dict[str, str], out: Path
) -> subprocess.CompletedProcess[str]:
    command = [str(uv), "pip", "compile", "--quiet", "--no-header", "-o", str(out)]
    command += ["--python-version", f"{sys.version_info.major}.{sys.version_info.minor}"]
    if overrides:
        pinned = out.with_suffix(".overrides.txt")
        pinned.write_text("".join(f"{n}=={v}\n" for n, v in overrides.items()))
        command += ["--override", str(pinned)]
    command += [str(project_dir / "pyproject.toml"), "--extra", "vllm"]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def picked_versions(lock: Path) -> dict[str, str]:
    picked = {}
    for line in lock.read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, version = line.split("==", 1)
            picked[name.strip().lower()] = version.split()[0]
    return picked


def resolve(uv: Path, project_dir: Path, folder: Path) -> int:
    own = own_requirements(project_dir)
    overrides: dict[str, str] = {}
    lagging: list[str] = []
    start = time.monotonic()
    for _ in range(5):
        lock = folder / "resolved.txt"
        done = compile_vllm(uv, project_dir, overrides, lock)
        if done.returncode == 0:
            picked = picked_versions(lock)
            for name in SHOWN:
                print(f"{name:14} {picked.get(name, '-')}")
            if "vllm" not in picked:
                print("vllm is not in the resolved set")
                return 1
            took = time.monotonic() - start
            if lagging:
                print(
                    "WARNING: hakari[vllm] resolves once the package index has "
                    + "; ".join(lagging)
                    + f" (held at the index's newest to check the rest; {took:.0f} s)"
                )
            else:
                print(f"hakari[vllm] resolves ({len(picked)} packages, {took:.0f} s)")
            return 0
        message = " ".join(done.stderr.split())
        found = [m for m in LAGGING.finditer(message) if m["name"].lower() not in overrides]
        if not found:
            print(done.stderr.strip())
            if "No solution found" in done.stderr:
                return 1
            return 3  # the index could not be reached, or uv failed otherwise
        for match in found:
            name = match["name"].lower()
            if name in own:
                print(done.stderr.strip())
                print(f"{name} is one of hakari's own requirements: a real conflict")
                return 1
            overrides[name] = match["have"]
            lagging.append(
                f"{name}{match['wants']} (wanted by {match['who']}; newest there: {match['have']})"
            )
    print("too many packages missing from the index")
    return 1


def pip_dry_run(project_dir: Path, folder: Path) -> int:
    target = folder / "pip-venv"
    venv.create(target, with_pip=True)
    command = [str(target / "bin" / "python"), "-m", "pip", "install", "-q", "--dry-run"]
    done = subprocess.run([*command, f"{project_dir}[vllm]"], timeout=900)
    print(f"pip install --dry-run '.[vllm]': exit {done.returncode}")
    return done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pip", action="store_true", help="also run the literal pip dry run")
    parser.add_argument("--project", type=Path, default=ROOT, help="folder with pyproject.toml")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        try:
            uv = install_uv(folder / "uv-venv")
        except (subprocess.SubprocessError, OSError) as exc:
            print(f"could not install uv to check: {exc}")
            return 3
        try:
            code = resolve(uv, args.project.resolve(), folder)
        except subprocess.TimeoutExpired:
            print("the resolution timed out: not checked")
            return 3
        if args.pip:
            pip_dry_run(args.project.resolve(), folder)
    return code


if __name__ == "__main__":
    sys.exit(main())
