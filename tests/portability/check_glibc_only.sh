#!/usr/bin/env bash
# Loads the plugin inside a chroot that holds only the dynamic loader, libc.so.6 and libm.so.6 (plus whatever
# else the plugin's NEEDED lists, which check_elf.sh limits to glibc and libz.so.1): the closest this machine
# gets to "a container with another CUDA and no libstdc++". Needs root (chroot); exits 77 (skipped) otherwise.
#   check_glibc_only.sh PROBE PLUGIN.so
set -euo pipefail
probe=${1:?usage: check_glibc_only.sh PROBE PLUGIN.so}
so=${2:?usage: check_glibc_only.sh PROBE PLUGIN.so}
# shellcheck source=tests/portability/glibc_chroot.sh
source "$(dirname "$0")/glibc_chroot.sh"
# The loader and libc the probe uses (resolved on this machine), then the plugin's own NEEDED.
rc=0
glibc_chroot 'libstdc++*|libgcc_s*|libcuda*|libnccl.so*' "$probe" "$so" || rc=$?
if ((rc == 77)); then
  echo "SKIP: needs root and chroot"
  exit 77
fi
((rc == 0)) || exit 1
cp "$probe" "$root/probe"
cp "$so" "$root/opt/ni/lib/libnccl-profiler-inspector.so"
echo "chroot contents:"
(cd "$root" && find . -type f | sort | sed "s/^/  /")

env -i NCCL_INSPECTOR_DUMP_DIR=/logs NCCL_DEBUG=INFO \
  "$chroot_bin" "$root" /probe /opt/ni/lib/libnccl-profiler-inspector.so
shopt -s nullglob
logs=("$root"/logs/*.jsonl.gz)
((${#logs[@]} == 1)) || { echo "FAIL: expected one log in the chroot, found ${#logs[@]}" >&2; exit 1; }
text=$(gzip -dc "${logs[0]}")
for t in meta comm mark end; do
  grep -q "\"type\":\"$t\"" <<<"$text" || { echo "FAIL: no $t record in the log written in the chroot" >&2; echo "$text" >&2; exit 1; }
done
grep -q 'glibc-only-probe' <<<"$text" || { echo "FAIL: the mark label is missing" >&2; exit 1; }
echo "PASS: the plugin loads and writes its log with glibc alone"
