#!/usr/bin/env bash
# Installs the Debian 12 packages the project needs. Idempotent; quiet when
# everything is already there.
#   scripts/setup-deps.sh          everything the tests use (sanitizers, fuzzers, lintian, real consumers:
#                                  promtool, node_exporter, Node, Chromium, pandas)
#   scripts/setup-deps.sh --build  only what building and running the demo needs (with Node.js and npm:
#                                  the report's charting library, web/package-lock.json, is an npm package)
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(cmake g++ make pkg-config zlib1g-dev libdeflate-dev nlohmann-json3-dev libsimdjson-dev libcli11-dev
      libgtest-dev libgmock-dev libbenchmark-dev binutils nodejs)
if [ "${1:-}" != "--build" ]; then
  pkgs+=(valgrind clang libclang-rt-14-dev python3 python3-pandas python3-yaml python3-jsonschema prometheus prometheus-node-exporter
         chromium shellcheck jq dpkg-dev lintian tmux python3-dev pybind11-dev python3-pybind11 python3-plotly)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Some Node.js builds bundle npm; Debian's nodejs does not.
if ! command -v npm >/dev/null; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm
fi
# Plotly.js, pinned, which the build embeds in nccl-inspector for its HTML report (git-ignored node_modules;
# npm ci again whenever the lock file is newer than the install).
if [ ! -f web/node_modules/.package-lock.json ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  npm ci --prefix web --no-audit --no-fund --loglevel=error
fi
[ "${1:-}" = "--build" ] && exit 0
# Pinned npm packages for the trace/report consumer tests (git-ignored node_modules).
if [ -f tests/js/package-lock.json ] && [ ! -d tests/js/node_modules/@paulirish ]; then
  npm ci --prefix tests/js --no-audit --no-fund --loglevel=error
fi
