#!/usr/bin/env bash
# Docker recipes without docker: scripts/docker/run-ngc-pytorch.sh and the `docker run` line of
# docs/deployment.md (the fenced block with info string "sh docker") run against tests/install/fake-bin/docker,
# which checks the mounts and variables a real container would need and runs nccl-emu in place of torchrun.
#   recipe_docker.sh SOURCE_DIR PREFIX
set -euo pipefail
src=${1:?usage: recipe_docker.sh SOURCE_DIR PREFIX}
prefix=$(cd "${2:?usage: recipe_docker.sh SOURCE_DIR PREFIX}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
emu_cmd="\"$prefix/bin/nccl-emu\" --plugin \"\$NCCL_PROFILER_PLUGIN\" --pace none --iters 3 --quiet"

check_logs() {  # DIR WHAT
  shopt -s nullglob
  local logs=("$1"/*.jsonl.gz)
  shopt -u nullglob
  ((${#logs[@]} == 1)) || fail "$2: expected 1 log in $1, found ${#logs[@]}"
  gzip -dc "${logs[0]}" | grep -q '"type":"end"' || fail "$2: log has no end record"
  echo "ok: $2 -> ${logs[0]#"$tmp"/}"
}

# 1. The script.
(cd "$tmp" && PATH="$here/fake-bin:$PATH" DOCKER=docker NI_PREFIX="$prefix" NI_LOG_ROOT="$tmp/logs" RUN_ID=run-a \
  FAKE_DOCKER_CMD="$emu_cmd" NCCL_DEBUG=WARN "$src/scripts/docker/run-ngc-pytorch.sh" torchrun --nproc-per-node=8 train.py) \
  >"$tmp/a.out" 2>&1 || { cat "$tmp/a.out" >&2; fail "run-ngc-pytorch.sh"; }
check_logs "$tmp/logs/run-a" "run-ngc-pytorch.sh"

# 2. The documented one-liner: shellcheck-clean, and consistent (mounts cover the -e paths) once the host-side
#    install prefix is this build's.
awk '/^```sh docker$/ {on=1; next} /^```/ {on=0} on' "$src/docs/deployment.md" >"$tmp/doc.sh"
[[ -s $tmp/doc.sh ]] || fail "no \`\`\`sh docker block in docs/deployment.md"
grep -q -- '--gpus all' "$tmp/doc.sh" || fail "documented line lacks --gpus all"
grep -q 'NCCL_PROFILER_PLUGIN=' "$tmp/doc.sh" || fail "documented line lacks NCCL_PROFILER_PLUGIN"
grep -q 'NCCL_INSPECTOR_DUMP_DIR=' "$tmp/doc.sh" || fail "documented line lacks NCCL_INSPECTOR_DUMP_DIR"
if command -v shellcheck >/dev/null; then
  shellcheck -s bash "$tmp/doc.sh" || fail "shellcheck of the documented docker line"
fi
sed "s#-v /opt/nccl-inspector:#-v $prefix:#" "$tmp/doc.sh" >"$tmp/doc-local.sh"
(cd "$tmp" && PATH="$here/fake-bin:$PATH" FAKE_DOCKER_CMD="$emu_cmd" NCCL_DEBUG=WARN bash "$tmp/doc-local.sh") \
  >"$tmp/b.out" 2>&1 || { cat "$tmp/b.out" >&2; fail "documented docker line"; }
dump=$(sed -n 's/.*NCCL_INSPECTOR_DUMP_DIR=\/nccl-logs\/\([A-Za-z0-9_.-]*\).*/\1/p' "$tmp/doc.sh")
check_logs "$tmp/nccl-logs/${dump:?cannot find the run directory in the documented line}" "docs/deployment.md docker line"
echo "PASS: docker recipes"
