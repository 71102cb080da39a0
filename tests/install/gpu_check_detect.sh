#!/usr/bin/env bash
# scripts/gpu-check.sh on a machine without what it needs: it must say what is missing and exit 2 without
# building anything. With a fake nvidia-smi it gets past the GPU check, so the nvcc and NCCL checks are exercised
# too; where this machine has nvcc and NCCL, --detect-only must find them, and scripts/gpu/nccl_check.cu must
# compile and link against that NCCL (it cannot run without a GPU).
#   gpu_check_detect.sh SOURCE_DIR
set -euo pipefail
src=$(cd "${1:?usage: gpu_check_detect.sh SOURCE_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
sys_path=/usr/local/bin:/usr/bin:/bin

expect2() {  # NAME MESSAGE-REGEX ENV... -- runs gpu-check.sh, expects exit 2 and the message
  local name=$1 re=$2 rc=0
  shift 2
  env NI_GPU_CHECK_DIR="$tmp/work" "$@" "$src/scripts/gpu-check.sh" >"$tmp/out" 2>&1 || rc=$?
  ((rc == 2)) || { cat "$tmp/out" >&2; fail "$name: exit $rc, expected 2"; }
  grep -Eq "$re" "$tmp/out" || { cat "$tmp/out" >&2; fail "$name: message does not match '$re'"; }
  [[ ! -e $tmp/work ]] || fail "$name: something was built ($tmp/work exists)"
  echo "ok: $name -> exit 2: $(head -n1 "$tmp/out")"
}

if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "this machine has a GPU: only the fake-GPU paths are checked"
else
  expect2 "no GPU" 'no nvidia-smi|lists no GPU' PATH="$sys_path"
fi
expect2 "GPU, no nvcc" 'no nvcc' PATH="$here/fake-gpu:$sys_path" CUDA_HOME="$tmp/no-cuda"

nvcc=""
for c in "${CUDA_HOME:-}" /usr/local/cuda; do
  [[ -n $c && -x $c/bin/nvcc ]] && { nvcc=$c/bin/nvcc; cuda=$c; break; }
done
if [[ -z $nvcc ]]; then
  echo "note: no CUDA toolkit here; detection with a real nvcc not checked"
  echo "PASS: gpu-check.sh fails cleanly without a GPU/nvcc"
  exit 0
fi
expect2 "GPU + nvcc, no NCCL" 'no NCCL|NCCL_HOME' PATH="$here/fake-gpu:$sys_path" CUDA_HOME="$cuda" NCCL_HOME="$tmp/no-nccl"

out=$(PATH="$here/fake-gpu:$sys_path" CUDA_HOME="$cuda" NI_GPU_CHECK_DIR="$tmp/work" "$src/scripts/gpu-check.sh" --detect-only 2>&1) || {
  echo "$out" >&2
  if grep -q 'no NCCL found' <<<"$out"; then
    echo "note: nvcc but no NCCL here; stopping"
    exit 0
  fi
  fail "--detect-only with a real nvcc"
}
echo "$out"
[[ ! -e $tmp/work ]] || fail "--detect-only built something"
grep -q "nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')" <<<"$out" || fail "nvcc version not reported"
inc=$(sed -n 's/.*(header \(.*\)\/nccl.h, library .*/\1/p' <<<"$out")
so=$(sed -n 's/.*, library \(.*\))$/\1/p' <<<"$out")
[[ -f $inc/nccl.h && -f $so ]] || fail "reported NCCL paths do not exist: '$inc' '$so'"
v=$(awk '/#define NCCL_MAJOR/ {a=$3} /#define NCCL_MINOR/ {b=$3} /#define NCCL_PATCH/ {c=$3} END {print a"."b"."c}' "$inc/nccl.h")
grep -q "NCCL $v " <<<"$out" || fail "NCCL version $v not reported"

# The GPU program builds against that NCCL exactly as gpu-check.sh builds it.
"$nvcc" -std=c++17 -O2 -I"$inc" -o "$tmp/nccl_check" "$src/scripts/gpu/nccl_check.cu" "$so" >"$tmp/nvcc.log" 2>&1 ||
  { cat "$tmp/nvcc.log" >&2; fail "nccl_check.cu does not build with $nvcc against $so"; }
readelf -dW "$tmp/nccl_check" | grep -q 'NEEDED.*libnccl.so' || fail "nccl_check does not link libnccl"
python3 -m py_compile "$src/scripts/gpu/analyze.py" || fail "analyze.py does not compile"
echo "ok: nccl_check.cu builds with nvcc against NCCL $v"
echo "PASS: gpu-check.sh detection"
