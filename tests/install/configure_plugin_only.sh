#!/usr/bin/env bash
# A plugin-only build (-DNCCL_INSPECTOR_ANALYZER=OFF, as a cluster image that
# ships just the .so would use) configures with its tests on: a test that
# needs the analyzer is left out, not an error. Configure only; the plugin and
# emulator sources are the normal build's.
set -euo pipefail
src=$1
cmake=${2:-cmake}
ctest=${3:-ctest}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! "$cmake" -S "$src" -B "$out" -DNCCL_INSPECTOR_ANALYZER=OFF -DNCCL_INSPECTOR_TESTS=ON \
      -DNCCL_INSPECTOR_BENCHMARKS=OFF > "$out/configure.log" 2>&1; then
  cat "$out/configure.log"
  echo "FAIL: a plugin-only build does not configure"
  exit 1
fi
echo "plugin-only build configures ($("$ctest" --test-dir "$out" -N | tail -1))"
