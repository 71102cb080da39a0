#!/usr/bin/env bash
# Runs COMMAND in an NGC PyTorch container with the NCCL Inspector plugin mounted from the host and its logs
# written to a host directory, one subdirectory per run:
#
#   run-ngc-pytorch.sh torchrun --nproc-per-node=8 train.py
#
# Settings (environment):
#   NI_PREFIX    host directory where nccl-inspector is installed (default /opt/nccl-inspector); mounted read-only
#   NI_LOG_ROOT  host directory for logs (default ./nccl-inspector-logs); mounted read-write
#   RUN_ID       subdirectory for this run (default: UTC time, e.g. 20250101T120000Z)
#   IMAGE        container image (default nvcr.io/nvidia/pytorch:25.01-py3; any image with NCCL >= 2.23)
#   DOCKER       docker-compatible CLI (default docker; podman works too)
# The plugin depends on glibc only, so it loads whatever CUDA the image brings.
set -euo pipefail

if (($# == 0)); then
  echo "usage: $0 COMMAND [ARGS...]   e.g. $0 torchrun --nproc-per-node=8 train.py" >&2
  exit 2
fi
NI_PREFIX=${NI_PREFIX:-/opt/nccl-inspector}
NI_LOG_ROOT=${NI_LOG_ROOT:-$PWD/nccl-inspector-logs}
RUN_ID=${RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)}
IMAGE=${IMAGE:-nvcr.io/nvidia/pytorch:25.01-py3}
DOCKER=${DOCKER:-docker}

if [[ ! -r $NI_PREFIX/lib/libnccl-profiler-inspector.so ]]; then
  echo "$0: $NI_PREFIX/lib/libnccl-profiler-inspector.so not found (set NI_PREFIX)" >&2
  exit 2
fi
mkdir -p "$NI_LOG_ROOT/$RUN_ID"
echo "nccl-inspector: logs in $NI_LOG_ROOT/$RUN_ID" >&2

exec "$DOCKER" run --gpus all --rm --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 \
  -v "$NI_PREFIX:/opt/nccl-inspector:ro" \
  -v "$NI_LOG_ROOT:/nccl-inspector-logs" \
  -e NCCL_PROFILER_PLUGIN=/opt/nccl-inspector/lib/libnccl-profiler-inspector.so \
  -e NCCL_INSPECTOR_DUMP_DIR="/nccl-inspector-logs/$RUN_ID" \
  "$IMAGE" "$@"
