#!/usr/bin/env bash
# Headless Chromium and the CJK fonts for the HTML report's browser tests
# (tests/test_reports_browser.py), from Debian's own packages: playwright drives the system
# chromium through `executable_path`, so no browser download from playwright's CDN.
# Idempotent and quick when both are there; without root or apt it says so and exits 0
# (the browser tests then skip with a reason).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
dpkg -s fonts-noto-cjk >/dev/null 2>&1 || need+=(fonts-noto-cjk)
if [ ${#need[@]} -eq 0 ]; then
  echo "browser: chromium and fonts-noto-cjk already installed"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "browser: no apt-get; install ${need[*]} yourself (browser tests will skip)" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "browser: not root; install ${need[*]} yourself (browser tests will skip)" >&2
    exit 0
  fi
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
echo "browser: installed ${need[*]}"
