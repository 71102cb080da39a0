#!/usr/bin/env bash
# Real-GPU check of the NCCL Inspector plugin (needs an NVIDIA GPU, nvcc and an NCCL library; < 5 minutes):
#  1. builds the plugin (cmake, Release, plugin target only),
#  2. builds scripts/gpu/nccl_check.cu against the NCCL it found (linked, no dlopen),
#  3. runs it with NCCL_PROFILER_PLUGIN=<the plugin>: send/recv to self and grouped P2P on a one-GPU
#     communicator (nranks == 1 collectives produce no profiler events); then a 2-rank communicator on GPU 0 (two
#     processes that NCCL_HOSTID makes two hosts: socket transport) with collectives, Send/Recv and AlltoAll; real
#     collectives over all GPUs when there are several; each op timed with CUDA events,
#  4. checks the records (GPU timing, durations against the CUDA events, the ABI version bound for this NCCL --
#     v7 from 2.31 --, on NCCL >= 2.31 the kernel phases of the 2-rank run's collectives (it runs with
#     NCCL_INSPECTOR_ENABLE_PHASES=1; older releases never send them), no WARN lines, no drops) and prints one
#     summary table. Not checked yet: user tags set through ncclCollConfig_t.userProfilerTag (nccl_check.cu does
#     not call the 2.31 nccl*Config() entry points).
#
# Usage: scripts/gpu-check.sh [--detect-only]
# Environment: CUDA_HOME (default: nvcc on PATH, else /usr/local/cuda), NCCL_HOME (directory with include/nccl.h
# and lib/libnccl.so*; default: the NCCL of the PyTorch wheel (nvidia.nccl), then /usr, then CUDA_HOME),
# NI_GPU_CHECK_DIR (work directory, default build/gpu-check), NI_GPU_CHECK_ITERS (default 20), NI_GPU_CHECK_PLUGIN
# (a plugin .so built elsewhere: skips the plugin build, for GPU machines without libdeflate-dev).
# Exit codes: 0 all checks passed; 1 a check failed; 2 this machine cannot run the check (no GPU, nvcc, NCCL,
# cmake or python3) - nothing was built.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

unavailable() {
  echo "gpu-check: cannot run here: $*" >&2
  echo "gpu-check: needs an NVIDIA GPU with its driver, nvcc (CUDA toolkit) and an NCCL library (exit 2)" >&2
  exit 2
}
detect_only=0
case ${1:-} in
  --detect-only) detect_only=1 ;;
  "") ;;
  *) echo "usage: $0 [--detect-only]" >&2; exit 2 ;;
esac

# --- what is here (cheap checks first; nothing is built until all pass) ----------------------------------------
command -v nvidia-smi >/dev/null 2>&1 || unavailable "no nvidia-smi (no NVIDIA driver)"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
((gpus > 0)) || unavailable "nvidia-smi lists no GPU"

nvcc=""
if [[ -n ${CUDA_HOME:-} ]]; then
  [[ -x $CUDA_HOME/bin/nvcc ]] && nvcc=$CUDA_HOME/bin/nvcc
elif command -v nvcc >/dev/null 2>&1; then
  nvcc=$(command -v nvcc)
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc=/usr/local/cuda/bin/nvcc
fi
[[ -n $nvcc ]] || unavailable "no nvcc (set CUDA_HOME)"
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
cuda_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')

command -v python3 >/dev/null 2>&1 || unavailable "no python3"
command -v cmake >/dev/null 2>&1 || unavailable "no cmake"

# NCCL: header + library from one installation.
nccl_inc="" nccl_lib=""
try_nccl() {  # INCLUDE_DIR LIB_DIR
  if [[ -f $1/nccl.h ]] && compgen -G "$2/libnccl.so*" >/dev/null; then
    nccl_inc=$1 nccl_lib=$2
    return 0
  fi
  return 1
}
if [[ -n ${NCCL_HOME:-} ]]; then
  try_nccl "$NCCL_HOME/include" "$NCCL_HOME/lib" || try_nccl "$NCCL_HOME/include" "$NCCL_HOME/lib64" ||
    unavailable "NCCL_HOME=$NCCL_HOME has no include/nccl.h + lib/libnccl.so*"
else
  wheel=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  { [[ -n $wheel ]] && try_nccl "$wheel/include" "$wheel/lib"; } ||
    try_nccl /usr/include /usr/lib/x86_64-linux-gnu || try_nccl /usr/include /usr/lib/aarch64-linux-gnu ||
    try_nccl /usr/include /usr/lib64 || try_nccl "$cuda_home/include" "$cuda_home/lib64" ||
    try_nccl "$cuda_home/include" "$cuda_home/lib" ||
    unavailable "no NCCL found (nvidia.nccl wheel, /usr, $cuda_home); set NCCL_HOME"
fi
nccl_header_version=$(awk '/#define NCCL_MAJOR/ {a=$3} /#define NCCL_MINOR/ {b=$3} /#define NCCL_PATCH/ {c=$3} END {print a"."b"."c}' "$nccl_inc/nccl.h")
# A wheel ships libnccl.so.2 only: link against that file.
nccl_so=$(compgen -G "$nccl_lib/libnccl.so*" | sort | head -n1)

echo "gpu-check: $gpus GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)"
echo "gpu-check: nvcc $cuda_version ($nvcc)"
echo "gpu-check: NCCL $nccl_header_version (header $nccl_inc/nccl.h, library $nccl_so)"
if ((detect_only)); then exit 0; fi

# --- build -------------------------------------------------------------------------------------------------------
start=$(date +%s)
work=${NI_GPU_CHECK_DIR:-$root/build/gpu-check}
iters=${NI_GPU_CHECK_ITERS:-20}
mkdir -p "$work"
if [[ -n ${NI_GPU_CHECK_PLUGIN:-} ]]; then
  # A plugin built elsewhere (a GPU machine without libdeflate-dev or pkg-config can still run the check).
  [[ -f $NI_GPU_CHECK_PLUGIN ]] || { echo "gpu-check: NI_GPU_CHECK_PLUGIN=$NI_GPU_CHECK_PLUGIN: no such file" >&2; exit 1; }
  plugin=$(cd "$(dirname "$NI_GPU_CHECK_PLUGIN")" && pwd)/$(basename "$NI_GPU_CHECK_PLUGIN")
  echo "gpu-check: using the prebuilt plugin $plugin"
else
  echo "gpu-check: building the plugin in $work/plugin-build"
  cmake -S "$root" -B "$work/plugin-build" -DCMAKE_BUILD_TYPE=Release -DNCCL_INSPECTOR_TESTS=OFF \
    -DNCCL_INSPECTOR_BENCHMARKS=OFF -DNCCL_INSPECTOR_ANALYZER=OFF >"$work/cmake.log" 2>&1 ||
    { tail -n 30 "$work/cmake.log" >&2; echo "gpu-check: cmake configure failed (set NI_GPU_CHECK_PLUGIN to a plugin built elsewhere)" >&2; exit 1; }
  cmake --build "$work/plugin-build" -j"$(nproc)" --target nccl-profiler-inspector >>"$work/cmake.log" 2>&1 ||
    { tail -n 30 "$work/cmake.log" >&2; echo "gpu-check: plugin build failed" >&2; exit 1; }
  plugin=$work/plugin-build/lib/libnccl-profiler-inspector.so
fi
echo "gpu-check: building nccl_check against $nccl_so"
"$nvcc" -std=c++17 -O2 -I"$nccl_inc" -o "$work/nccl_check" "$root/scripts/gpu/nccl_check.cu" -L"$nccl_lib" -l:"$(basename "$nccl_so")" \
  -Xlinker -rpath -Xlinker "$nccl_lib" >"$work/nvcc.log" 2>&1 ||
  { cat "$work/nvcc.log" >&2; echo "gpu-check: nvcc failed" >&2; exit 1; }

# --- run -----------------------------------------------------------------------------------------------------------
logs=$work/logs
rm -rf "$logs"
echo "gpu-check: running nccl_check with NCCL_PROFILER_PLUGIN=$plugin"
set +e
NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_DUMP_DIR=$logs NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE LD_LIBRARY_PATH="$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  timeout 240 "$work/nccl_check" "$work/events.csv" "$iters" >"$work/run.log" 2>&1
rc=$?
set -e
if ((rc != 0)); then
  tail -n 40 "$work/run.log" >&2
  echo "gpu-check: nccl_check failed (exit $rc; 124 = timed out after 240 s); log: $work/run.log" >&2
  exit 1
fi
# A 2-rank communicator on GPU 0: two processes that NCCL_HOSTID makes two "hosts" (socket transport over lo), so
# that even a one-GPU machine shows KernelCh GPU timestamps and proxy events of real multi-rank operations.
pair=$work/pair
rm -rf "$pair"
mkdir -p "$pair"
pair_iters=${NI_GPU_CHECK_PAIR_ITERS:-5}
echo "gpu-check: running a 2-rank communicator on GPU 0 (two processes, NCCL_HOSTID apart, socket transport)"
pids=()
for r in 0 1; do
  NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_DUMP_DIR=$pair/logs NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 \
    NCCL_INSPECTOR_ENABLE_NET=1 NCCL_INSPECTOR_ENABLE_PHASES=1 NCCL_INSPECTOR_HOSTNAME=ni-check-host$r NCCL_HOSTID=ni-check-host$r \
    NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,PROFILE \
    LD_LIBRARY_PATH="$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout 240 "$work/nccl_check" --pair $r "$pair/id" "$pair/events$r.csv" "$pair_iters" >"$pair/run$r.log" 2>&1 &
  pids+=($!)
done
pair_rc=0
for p in "${pids[@]}"; do wait "$p" || pair_rc=$?; done
if ((pair_rc != 0)); then
  tail -n 20 "$pair/run0.log" "$pair/run1.log" >&2
  echo "gpu-check: the 2-rank run failed (exit $pair_rc; 124 = timed out after 240 s); logs: $pair/run*.log" >&2
  echo "pair_failed $pair_rc" >>"$work/run.log"
fi
# The GPUs' PCI bus ids, for the check that comm records name their GPU.
nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | sed 's/^/nvidia-smi bus_id /' >>"$work/run.log" || true
code=$(sed -n 's/^nccl_version \([0-9]*\)$/\1/p' "$work/run.log")
ngpu=$(sed -n 's/^gpus \([0-9]*\)$/\1/p' "$work/run.log")
echo "gpu-check: ncclGetVersion() = $code, $ngpu GPU(s), $(($(date +%s) - start)) s so far"
python3 "$root/scripts/gpu/analyze.py" "$logs" "$work/events.csv" "$work/run.log" "$code" "$ngpu" "$pair"
