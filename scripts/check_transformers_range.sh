#!/usr/bin/env bash
# The transformers backend on every transformers release pyproject.toml allows: for each
# version, an overlay venv holding only that transformers (everything else, hakari
# included, comes from hakari's venv behind it) runs the fence's test
# (tests/backends/test_hf_internals.py: every call past transformers' public API) and the
# decoding loop's (tests/backends/test_hf_decode.py, test_hf_roomy.py: answers token for
# token those of `generate`).
#
#   bash scripts/check_transformers_range.sh            # the newest patch of each minor release
#   bash scripts/check_transformers_range.sh 5.19.0 5.24.0
#
# Needs the package index (pip). The versions checked last are in docs/dependencies.md.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HAKARI_VENV:-.venv}
py=$venv/bin/python
versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
  mapfile -t versions < <("$py" - <<'EOF'
import re, subprocess, sys, tomllib
from packaging.requirements import Requirement
from packaging.version import Version

deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
spec = next(r for r in map(Requirement, deps) if r.name == "transformers").specifier
listed = subprocess.run(
    [sys.executable, "-m", "pip", "index", "versions", "transformers"],
    capture_output=True, text=True, check=True,
).stdout
found = re.search(r"Available versions: (.*)", listed)
allowed = sorted(v for v in map(Version, found.group(1).split(", ")) if v in spec)
newest = {}
for v in allowed:  # the newest patch of each minor release
    newest[(v.major, v.minor)] = v
print("\n".join(str(v) for v in newest.values()))
EOF
  )
fi
base=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for version in "${versions[@]}"; do
  overlay=$work/transformers-$version
  "$py" -m venv --without-pip "$overlay"
  site=$("$overlay/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # hakari's venv behind this one, its .pth files (hakari's editable install) included
  echo "import site; site.addsitedir('$base')" > "$site/zz-hakari-venv.pth"
  "$py" -m pip install --quiet --no-deps --target "$site" "transformers==$version"
  got=$("$overlay/bin/python" -c 'import transformers; print(transformers.__version__)')
  echo "== transformers $got"
  if ! "$overlay/bin/python" -m pytest -q -p no:cacheprovider \
      tests/backends/test_hf_internals.py tests/backends/test_hf_roomy.py \
      tests/backends/test_hf_decode.py; then
    failed+=("$version")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed on transformers ${failed[*]}" >&2
  exit 1
fi
echo "passed on transformers ${versions[*]}"
