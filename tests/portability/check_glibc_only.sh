#!/usr/bin/env bash
# Loads the plugin inside a chroot that holds only the dynamic loader, libc.so.6 and libm.so.6 (plus whatever
# else the plugin's NEEDED lists, which check_elf.sh limits to glibc and libz.so.1): the closest this machine
# gets to "a container with another CUDA and no libstdc++". Needs root (chroot); exits 77 (skipped) otherwise.
#   check_glibc_only.sh PROBE PLUGIN.so
set -euo pipefail
probe=${1:?usage: check_glibc_only.sh PROBE PLUGIN.so}
so=${2:?usage: check_glibc_only.sh PROBE PLUGIN.so}
chroot_bin=$(command -v chroot || true)
if [[ $(id -u) != 0 ]] || [[ -z $chroot_bin ]]; then
  echo "SKIP: needs root and chroot"
  exit 77
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# Copy a library into the chroot at the path the loader will look for it.
copy_lib() {
  local path real
  path=$1
  real=$(readlink -f "$path")
  mkdir -p "$root$(dirname "$path")"
  cp "$real" "$root$path"
}
# The loader and libc the probe uses (resolved on this machine), then the plugin's own NEEDED.
while read -r path; do copy_lib "$path"; done < <(ldd "$probe" | grep -oE '/[^ ]+' | sort -u)
while read -r path; do copy_lib "$path"; done < <(ldd "$so" | grep -oE '/[^ ]+' | sort -u)
mkdir -p "$root/opt/ni/lib" "$root/logs" "$root/tmp"
cp "$probe" "$root/probe"
cp "$so" "$root/opt/ni/lib/libnccl-profiler-inspector.so"

echo "chroot contents:"
(cd "$root" && find . -type f | sort | sed "s/^/  /")
if find "$root" -name 'libstdc++*' -o -name 'libgcc_s*' -o -name 'libcuda*' -o -name 'libnccl.so*' | grep -q .; then
  echo "FAIL: the chroot is not glibc-only" >&2
  exit 1
fi

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
