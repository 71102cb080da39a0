#!/usr/bin/env bash
# Regenerates the screenshots in docs/img/ used by docs/analysis.md:
#  1. runs the demo job (nccl-emu + the real plugin, 8 ranks in 2 processes,
#     verbose: per-channel times, network events: HCAs) into out/screens/logs,
#  2. nccl-inspector trace + report on it,
#  3. screenshots of the report and of the trace in speedscope, in headless
#     Chromium (needs: apt-get install chromium nodejs npm; npm ci --prefix tests/js).
# Usage: BUILD=build scripts/report-screenshots.sh   (BUILD must have the plugin, nccl-emu, nccl-inspector)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=out/screens
for t in lib/libnccl-profiler-inspector.so bin/nccl-emu bin/nccl-inspector; do
  [ -e "$BUILD/$t" ] || { echo "missing $BUILD/$t: cmake --build $BUILD first" >&2; exit 2; }
done
[ -d tests/js/node_modules/playwright-core ] || { echo "missing tests/js/node_modules: npm ci --prefix tests/js" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT"
export NCCL_INSPECTOR_DUMP_DIR=$PWD/$OUT/logs NCCL_INSPECTOR_ENABLE_NET=1 NCCL_INSPECTOR_DUMP_VERBOSE=1 NCCL_DEBUG=WARN
start_at=$(( $(date +%s%N) + 500000000 ))
pids=()
for ranks in 0-3 4-7; do
  "$BUILD/bin/nccl-emu" --plugin "$BUILD/lib/libnccl-profiler-inspector.so" --nccl 2.30 --workload scripts/demo-job.json \
    --world 8 --ranks "$ranks" --pace realtime --seed 42 --start-at "$start_at" >"$OUT/emu-$ranks.log" 2>&1 &
  pids+=("$!")
done
for p in "${pids[@]}"; do wait "$p"; done
"$BUILD/bin/nccl-inspector" trace "$OUT/logs" -o "$OUT/trace.json.gz"
# speedscope shows one track at a time: the screenshot is one rank's tp track (with channels) over 4 ms
"$BUILD/bin/nccl-inspector" trace "$OUT/logs" -o "$OUT/tp-rank1.json" --comm tp --rank 1 --from 0.020 --to 0.024 --no-findings
"$BUILD/bin/nccl-inspector" report "$OUT/logs" -o "$OUT/report.html" --title "nccl-inspector report: demo job (8 GPUs, emulated)"
node scripts/report-screenshots.mjs "$OUT/report.html" "$OUT/tp-rank1.json" docs/img
echo "report: $OUT/report.html  trace: $OUT/trace.json.gz (open in ui.perfetto.dev)"
