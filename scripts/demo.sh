#!/usr/bin/env bash
# The main job, end to end on a machine without a GPU:
#  1. installs the Debian packages the build needs,
#  2. builds the plugin, the emulator and the analyzer (Release),
#  3. runs an emulated 8-GPU training job (2 "nodes" x 4 GPUs, as two
#     processes like a launcher would start them) with the real plugin loaded
#     through NCCL's profiler interface, writing logs to out/demo/logs,
#  4. analyses the logs: summary, stragglers, anomalies, iterations (the job's
#     training loop marks each of its 10 iterations), and an HTML report.
# The job has planted problems (a late rank, a congestion window, protocol
# bimodality) for the analyzer to find. Usage: scripts/demo.sh [NCCL_VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."
NCCL_VERSION=${1:-2.30}
BUILD=${BUILD:-build/demo}
OUT=out/demo

scripts/setup-deps.sh --build
echo "== building (Release) in $BUILD"
# NCCL_INSPECTOR_WERROR=ON (CI) makes any warning of this Release/LTO build an error.
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNCCL_INSPECTOR_TESTS=OFF -DNCCL_INSPECTOR_BENCHMARKS=OFF \
  -DNCCL_INSPECTOR_WERROR="${NCCL_INSPECTOR_WERROR:-OFF}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target nccl-profiler-inspector nccl-emu nccl-inspector >/dev/null
PLUGIN=$PWD/$BUILD/lib/libnccl-profiler-inspector.so

rm -rf "$OUT"
mkdir -p "$OUT"
echo "== running an emulated job (NCCL $NCCL_VERSION, 8 ranks in 2 processes) with $PLUGIN"
export NCCL_INSPECTOR_DUMP_DIR=$PWD/$OUT/logs
export NCCL_INSPECTOR_ENABLE_NET=1          # network bytes, step time split, per-HCA traffic
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
pids=()
start_at=$(( $(date +%s%N) + 500000000 ))  # one time origin for both processes of the job
for ranks in 0-3 4-7; do
  "$BUILD/bin/nccl-emu" --plugin "$PLUGIN" --nccl "$NCCL_VERSION" --workload scripts/demo-job.json \
    --world 8 --ranks "$ranks" --pace realtime --seed 42 --start-at "$start_at" --truth "$OUT/truth-$ranks.jsonl" \
    >"$OUT/emu-$ranks.log" 2>&1 &
  pids+=("$!")
done
for p in "${pids[@]}"; do wait "$p"; done
grep -h "bound ncclProfiler" "$OUT"/emu-*.log | sort -u
ls -l "$OUT/logs"

INSPECT=$BUILD/bin/nccl-inspector
echo
echo "== nccl-inspector summary $OUT/logs"
"$INSPECT" summary "$OUT/logs"
echo
echo "== nccl-inspector stragglers $OUT/logs"
"$INSPECT" stragglers "$OUT/logs"
echo
echo "== nccl-inspector anomalies $OUT/logs"
"$INSPECT" anomalies "$OUT/logs"
echo
echo "== nccl-inspector iterations $OUT/logs"
"$INSPECT" iterations "$OUT/logs"
echo
echo "== nccl-inspector report $OUT/logs -o $OUT/report.html"
"$INSPECT" report "$OUT/logs" -o "$OUT/report.html"
echo
echo "Logs: $OUT/logs  (zcat $OUT/logs/*.jsonl.gz | jq -c . | head)"
echo "Report: $OUT/report.html (one file, opens offline in any browser)"
