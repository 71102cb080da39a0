#!/usr/bin/env bash
# Static checks of the built plugin over `readelf`/`objdump -T`: what it needs from the system at load time,
# the newest glibc symbol version it requires, and what it exports.
#   check_elf.sh PLUGIN.so MAX_GLIBC        e.g. check_elf.sh build/lib/libnccl-profiler-inspector.so 2.34
set -euo pipefail

so=${1:?usage: check_elf.sh PLUGIN.so MAX_GLIBC}
max_glibc=${2:?usage: check_elf.sh PLUGIN.so MAX_GLIBC}
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

[[ -f $so ]] || { echo "FAIL: no such file: $so" >&2; exit 1; }

# 1. NEEDED: glibc's own libraries only (and libz.so.1, present on every Linux). Never CUDA, NCCL, libstdc++,
#    libgcc_s or libdeflate: those are linked statically or not at all.
mapfile -t needed < <(readelf -dW "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "NEEDED: ${needed[*]}"
((${#needed[@]} > 0)) || err "no NEEDED entries at all (expected at least libc.so.6)"
for lib in "${needed[@]}"; do
  case $lib in
    libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | libz.so.1 | ld-linux-*.so.* | ld-linux.so.*) ;;
    *) err "unexpected NEEDED $lib (allowed: libc, libm, libdl, libpthread, librt, ld-linux, libz.so.1)" ;;
  esac
done

# 2. No RPATH/RUNPATH (the library must not look in the build tree or anywhere else), no TEXTREL.
if readelf -dW "$so" | grep -Eq '\((RPATH|RUNPATH)\)'; then err "has RPATH/RUNPATH: $(readelf -dW "$so" | grep -E 'RPATH|RUNPATH')"; fi
if readelf -dW "$so" | grep -c '(TEXTREL)' >/dev/null; then err "has text relocations"; fi
# Executable stack would make every process that loads it run with an executable stack (or fail under SELinux).
if readelf -lW "$so" | awk '$1 == "GNU_STACK" { print $7 }' | grep -c E >/dev/null; then err "requests an executable stack"; fi

# 3. Symbol versions required: only GLIBC_*, and none newer than the documented minimum.
mapfile -t vers < <(objdump -T "$so" | grep -oE '\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)*_[0-9]+(\.[0-9]+)*\b' | sort -u)
# The same list from the version-needs section (readelf -V), which also names the library of each version.
mapfile -t vers_r < <(readelf -VW "$so" | sed -n 's/.*Name: \([^ ]*\).*/\1/p' | sort -u)
[[ "${vers[*]}" == "${vers_r[*]}" ]] || err "objdump -T versions (${vers[*]}) differ from readelf -V (${vers_r[*]})"
foreign=()
for v in "${vers[@]}"; do [[ $v == GLIBC_* || $v == GLIBC_PRIVATE ]] || foreign+=("$v"); done
((${#foreign[@]} == 0)) || err "symbol versions from outside glibc (libstdc++/libgcc_s leaked?): ${foreign[*]}"
if objdump -T "$so" | grep -c 'GLIBC_PRIVATE' >/dev/null; then err "uses GLIBC_PRIVATE symbols"; fi
newest=$(printf '%s\n' "${vers[@]}" | sed -n 's/^GLIBC_\([0-9][0-9.]*\)$/\1/p' | sort -V | tail -n1)
echo "newest GLIBC version required: ${newest:-none} (documented minimum: glibc $max_glibc)"
if [[ -n $newest ]] && [[ $(printf '%s\n%s\n' "$newest" "$max_glibc" | sort -V | tail -n1) != "$max_glibc" ]]; then
  err "requires GLIBC_$newest, newer than the documented minimum $max_glibc; these symbols need it:"
  objdump -T "$so" | grep "GLIBC_$newest" >&2 || true
fi
# (grep -c reads everything: grep -q would stop early and, under pipefail, readelf's SIGPIPE would fail the test)
readelf -VW "$so" | grep -c 'Version needs section' >/dev/null || err "readelf -V shows no version needs (not a glibc-linked .so?)"

# 4. Exports: exactly the seven profiler tables and the three user functions (mark, name a tag, flush).
mapfile -t exported < <(objdump -T "$so" | awk '$0 !~ /\*UND\*/ && NF >= 6 && $2 ~ /^[gwu]$/ { print $NF }' | sort -u)
expected=(ncclInspectorFlush ncclInspectorMark ncclInspectorNameTag ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4
  ncclProfiler_v5 ncclProfiler_v6 ncclProfiler_v7)
echo "exported: ${exported[*]}"
if [[ "${exported[*]}" != "${expected[*]}" ]]; then
  err "exported dynamic symbols differ from the allowed set"
  diff <(printf '%s\n' "${expected[@]}") <(printf '%s\n' "${exported[@]}") >&2 || true
fi
# STB_GNU_UNIQUE ("u") symbols would make dlclose a no-op (the library could never be unloaded).
if objdump -T "$so" | awk '$2 == "u"' | grep -c . >/dev/null; then err "has STB_GNU_UNIQUE symbols (dlclose could not unload it)"; fi

# 5. Nothing that names CUDA or NCCL libraries as a load-time dependency, even indirectly via symbol names.
if objdump -T "$so" | grep '\*UND\*' | grep -Eq '\b(cuda|cu[A-Z]|nccl)[A-Za-z_]*$'; then
  err "undefined CUDA/NCCL symbols: $(objdump -T "$so" | grep '\*UND\*' | grep -E '\b(cuda|cu[A-Z]|nccl)' | awk '{print $NF}' | tr '\n' ' ')"
fi

((fail == 0)) && echo "PASS: $so is portable (glibc >= $max_glibc only)"
exit "$fail"
