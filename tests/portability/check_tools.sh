#!/usr/bin/env bash
# The analyzer and the emulator need glibc alone (docs/deployment.md, "What the tools need"):
#  1. static checks of each binary (readelf/objdump): NEEDED only glibc's own libraries, no RPATH/RUNPATH,
#     symbol versions only GLIBC_*, none newer than the documented minimum;
#  2. (as root) a whole job inside a chroot that holds only the dynamic loader, libc and libm: nccl-emu runs an
#     emulated job with the plugin, nccl-inspector validates and summarises its logs.
#   check_tools.sh MAX_GLIBC NCCL_EMU NCCL_INSPECTOR PLUGIN.so
set -euo pipefail
usage="usage: check_tools.sh MAX_GLIBC NCCL_EMU NCCL_INSPECTOR PLUGIN.so"
max_glibc=${1:?$usage}
emu=${2:?$usage}
cli=${3:?$usage}
so=${4:?$usage}
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

for bin in "$emu" "$cli"; do
  [[ -f $bin ]] || { echo "FAIL: no such file: $bin" >&2; exit 1; }
  name=$(basename "$bin")
  mapfile -t needed < <(readelf -dW "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  echo "$name NEEDED: ${needed[*]}"
  ((${#needed[@]} > 0)) || err "$name: no NEEDED entries (expected libc.so.6)"
  for lib in "${needed[@]}"; do
    case $lib in
      libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | ld-linux-*.so.* | ld-linux.so.*) ;;
      *) err "$name: NEEDED $lib is not part of glibc (libstdc++, libgcc_s, zlib, libdeflate and simdjson are linked in)" ;;
    esac
  done
  if readelf -dW "$bin" | grep -Eq '\((RPATH|RUNPATH)\)'; then err "$name has RPATH/RUNPATH"; fi
  mapfile -t vers < <(readelf -VW "$bin" | sed -n '/Version needs/,$ s/.*Name: \([^ ]*\).*/\1/p' | sort -u)
  ((${#vers[@]} > 0)) || err "$name: readelf -V shows no version needs"
  for v in "${vers[@]}"; do
    [[ $v == GLIBC_* ]] || err "$name: symbol version $v from outside glibc"
    [[ $v == GLIBC_PRIVATE ]] && err "$name uses GLIBC_PRIVATE symbols"
  done
  newest=$(printf '%s\n' "${vers[@]}" | sed -n 's/^GLIBC_\([0-9][0-9.]*\)$/\1/p' | sort -V | tail -n1)
  echo "$name: newest GLIBC version required: $newest (documented minimum: glibc $max_glibc)"
  if [[ $(printf '%s\n%s\n' "$newest" "$max_glibc" | sort -V | tail -n1) != "$max_glibc" ]]; then
    err "$name requires GLIBC_$newest, newer than the documented minimum $max_glibc; these symbols need it:"
    objdump -T "$bin" | grep "GLIBC_$newest" >&2 || true
  fi
done
((fail == 0)) || exit 1

# shellcheck source=tests/portability/glibc_chroot.sh
source "$(dirname "$0")/glibc_chroot.sh"
rc=0
glibc_chroot 'libstdc++*|libgcc_s*|libz.so*|libdeflate*|libsimdjson*' "$emu" "$cli" "$so" || rc=$?
if ((rc == 77)); then
  echo "PASS (static checks only: the chroot run needs root and chroot)"
  exit 0
fi
((rc == 0)) || exit 1
mkdir -p "$root/bin"
cp "$emu" "$cli" "$root/bin/"
cp "$so" "$root/opt/ni/lib/libnccl-profiler-inspector.so"
echo "chroot contents:"
(cd "$root" && find . -type f | sort | sed "s/^/  /")
run() { env -i PATH=/bin NCCL_INSPECTOR_DUMP_DIR=/logs NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 "$chroot_bin" "$root" "$@"; }
run /bin/nccl-emu --plugin /opt/ni/lib/libnccl-profiler-inspector.so --nccl 2.28 --ranks 4 --pace none --iters 20 \
  >"$root/tmp/emu.txt" 2>&1 || { cat "$root/tmp/emu.txt" >&2; echo "FAIL: nccl-emu in the chroot" >&2; exit 1; }
run /bin/nccl-inspector validate /logs >"$root/tmp/validate.txt" 2>&1 ||
  { cat "$root/tmp/validate.txt" >&2; echo "FAIL: nccl-inspector validate in the chroot" >&2; exit 1; }
run /bin/nccl-inspector summary /logs >"$root/tmp/summary.txt" 2>&1 ||
  { cat "$root/tmp/summary.txt" >&2; echo "FAIL: nccl-inspector summary in the chroot" >&2; exit 1; }
cat "$root/tmp/summary.txt"
grep -q 'ranks' "$root/tmp/summary.txt" || { echo "FAIL: the summary names no ranks" >&2; exit 1; }
grep -Eq 'AllReduce|ReduceScatter|AllGather' "$root/tmp/summary.txt" || { echo "FAIL: the summary shows no collective" >&2; exit 1; }
echo "PASS: the emulator and the analyzer run with glibc alone"
