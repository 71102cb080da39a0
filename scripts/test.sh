#!/usr/bin/env bash
# Installs dependencies, builds everything (warnings are errors) and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
BUILD=${BUILD:-build/ci}
# PORTABLE_TOOLS=ON: the analyzer and the emulator must be built to need glibc alone (docs/deployment.md).
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCL_INSPECTOR_WERROR=ON -DNCCL_INSPECTOR_PORTABLE_TOOLS=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)"
