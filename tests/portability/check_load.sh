#!/usr/bin/env bash
# Runs nccl-emu against the plugin in a scrubbed environment (env -i, LD_LIBRARY_PATH pointing at an empty
# directory, no CUDA anywhere on the path) and checks the plugin bound its ABI and wrote a complete log.
#   check_load.sh NCCL_EMU PLUGIN.so
set -euo pipefail
emu=${1:?usage: check_load.sh NCCL_EMU PLUGIN.so}
so=${2:?usage: check_load.sh NCCL_EMU PLUGIN.so}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty"

for nccl in 2.23 2.28 2.30; do
  out="$tmp/logs-$nccl"
  env -i PATH=/usr/bin:/bin HOME="$tmp" LD_LIBRARY_PATH="$tmp/empty" NCCL_INSPECTOR_DUMP_DIR="$out" \
    NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 NCCL_DEBUG=WARN \
    "$emu" --plugin "$so" --nccl "$nccl" --pace none --iters 5 >"$tmp/emu-$nccl.txt" 2>&1 || {
    cat "$tmp/emu-$nccl.txt" >&2
    echo "FAIL: nccl-emu --nccl $nccl exited non-zero" >&2
    exit 1
  }
  want_abi=$(case $nccl in 2.23) echo 1 ;; 2.28) echo 5 ;; *) echo 6 ;; esac)
  grep -q "bound ncclProfiler_v$want_abi" "$tmp/emu-$nccl.txt" || {
    cat "$tmp/emu-$nccl.txt" >&2
    echo "FAIL: NCCL $nccl did not bind ncclProfiler_v$want_abi" >&2
    exit 1
  }
  if grep -q 'WARN' "$tmp/emu-$nccl.txt"; then
    cat "$tmp/emu-$nccl.txt" >&2
    echo "FAIL: warnings while running NCCL $nccl" >&2
    exit 1
  fi
  shopt -s nullglob
  logs=("$out"/*.jsonl.gz)
  shopt -u nullglob
  ((${#logs[@]} >= 1)) || { echo "FAIL: no log in $out" >&2; exit 1; }
  gzip -dc "${logs[@]}" >"$tmp/all-$nccl.jsonl"
  ops=$(grep -Ec '"type":"(coll|p2p)"' "$tmp/all-$nccl.jsonl" || true)
  ends=$(grep -c '"type":"end"' "$tmp/all-$nccl.jsonl" || true)
  abi=$(grep -c "\"abi_version\":$want_abi" "$tmp/all-$nccl.jsonl" || true)
  echo "NCCL $nccl: ${#logs[@]} log file(s), $ops op records, $ends end record(s), ABI v$want_abi"
  ((ops > 0)) || { echo "FAIL: no op records for NCCL $nccl" >&2; exit 1; }
  ((ends == ${#logs[@]})) || { echo "FAIL: $ends end records for ${#logs[@]} files (incomplete log)" >&2; exit 1; }
  ((abi > 0)) || { echo "FAIL: no record says abi_version $want_abi" >&2; exit 1; }
done
echo "PASS: plugin loads and logs with an empty LD_LIBRARY_PATH"
