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
# simdjson's source, from Debian's own source package (apt checks it against the signed Sources index): Debian
# ships simdjson only as a shared library, and the analyzer and the emulator are built to need nothing but glibc
# (docs/deployment.md), so the build compiles simdjson into them. Git-ignored, under .deps/; fetched once. Without
# it the build links the system's libsimdjson.so (and scripts/test.sh, which requires the portable tools, stops).
fetch_simdjson() (
  dest=.deps/simdjson
  [ -f "$dest/singleheader/simdjson.cpp" ] && [ -f "$dest/singleheader/simdjson.h" ] && exit 0
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # shellcheck source=/dev/null
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  mirror=${NI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  mkdir -p "$tmp/parts" "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/get"
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$mirror" "$codename" \
    /usr/share/keyrings/debian-archive-keyring.gpg >"$tmp/parts/src.sources"
  apt=(apt-get -qq -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$tmp/parts"
       -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o APT::Sandbox::User=root)
  if ! "${apt[@]}" update >"$tmp/log" 2>&1 || ! (cd "$tmp/get" && "${apt[@]}" source --download-only simdjson >>"$tmp/log" 2>&1); then
    cat "$tmp/log" >&2
    echo "setup-deps: could not fetch Debian's simdjson source from $mirror $codename (NI_DEBIAN_MIRROR=URL names another)" >&2
    exit 1
  fi
  mkdir -p "$tmp/src"
  tar xf "$tmp"/get/simdjson_*.orig.tar.* -C "$tmp/src"
  src=$(find "$tmp/src" -mindepth 1 -maxdepth 1 -type d | head -n1)
  if [ ! -f "$src/singleheader/simdjson.cpp" ] || [ ! -f "$src/singleheader/simdjson.h" ]; then
    echo "setup-deps: no singleheader/simdjson.{cpp,h} in Debian's simdjson source" >&2
    exit 1
  fi
  mkdir -p .deps
  rm -rf "$dest"
  mv "$src" "$dest"
)
fetch_simdjson || echo "setup-deps: WARNING: without simdjson's source the analyzer links libsimdjson.so (docs/deployment.md)" >&2
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
