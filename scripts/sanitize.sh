#!/usr/bin/env bash
# Sanitizer and fuzzing gates (run by .ci/run after the normal tests):
#  1. ASan+UBSan build, every test (the emulator drives the real plugin in them)
#  2. TSan build, every test
#  3. clang/libFuzzer builds of the fuzz targets (the code under test
#     instrumented too), each run until its coverage stops growing
#     (scripts/fuzz.sh: FUZZ_ROUND, FUZZ_MAX)
# Any sanitizer report fails the run (-fno-sanitize-recover=all).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
JOBS=$(nproc)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

run_variant() {
  local name=$1 san=$2
  echo "== $name: building"
  cmake -S . -B "build/$name" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCL_INSPECTOR_WERROR=ON \
        -DNCCL_INSPECTOR_SANITIZE="$san" -DNCCL_INSPECTOR_BENCHMARKS=OFF >/dev/null
  cmake --build "build/$name" -j"$JOBS"
  echo "== $name: testing"
  ctest --test-dir "build/$name" --output-on-failure -j"$JOBS" -LE no-sanitizer
}

run_variant asan-ubsan address,undefined
run_variant tsan thread

echo "== fuzz: building with clang/libFuzzer"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCL_INSPECTOR_FUZZ=ON \
  -DNCCL_INSPECTOR_SANITIZE=address,undefined -DNCCL_INSPECTOR_BENCHMARKS=OFF -DNCCL_INSPECTOR_TESTS=ON >/dev/null
targets="core_fuzz reader_fuzz"
# shellcheck disable=SC2086
cmake --build build/fuzz -j"$JOBS" --target $targets
# shellcheck disable=SC2086
scripts/fuzz.sh $targets
echo "sanitizers and fuzzers: clean"
