#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then uses only what was installed: the layout, no path back into
# the build tree, nccl-emu against the installed plugin, NCCL_PROFILER_PLUGIN=inspector resolution through
# LD_LIBRARY_PATH (as NCCL 2.26+ does it), and the analyzer when it was built.
#   check_install.sh BUILD_DIR RESOLVE_PROGRAM
set -euo pipefail
build=$(cd "${1:?usage: check_install.sh BUILD_DIR RESOLVE_PROGRAM}" && pwd)
resolve=${2:?usage: check_install.sh BUILD_DIR RESOLVE_PROGRAM}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log" >&2; fail "cmake --install"; }
echo "installed:"
(cd "$prefix" && find . -type f | sort | sed 's/^/  /')

for f in lib/libnccl-profiler-inspector.so bin/nccl-emu share/doc/nccl-inspector/README.md \
  share/doc/nccl-inspector/LICENSE share/doc/nccl-inspector/docs/configuration.md \
  share/doc/nccl-inspector/docs/log-format.md share/doc/nccl-inspector/docs/deployment.md \
  share/doc/nccl-inspector/docs/quickstart.md share/doc/nccl-inspector/docs/troubleshooting.md \
  share/nccl-inspector/slurm/nccl-inspector.sbatch share/nccl-inspector/slurm/taskprolog.sh \
  share/nccl-inspector/k8s/pytorch-pod.yaml share/nccl-inspector/docker/run-ngc-pytorch.sh \
  share/nccl-inspector/schema/log-format.schema.json share/doc/nccl-inspector/docs/log-format.schema.json; do
  [[ -f $prefix/$f ]] || fail "missing $f"
done
for f in bin/nccl-emu share/nccl-inspector/slurm/nccl-inspector.sbatch share/nccl-inspector/slurm/taskprolog.sh \
  share/nccl-inspector/slurm/epilog.sh; do
  [[ -x $prefix/$f ]] || fail "$f is not executable"
done
has_analyzer=0
if [[ -f $build/bin/nccl-inspector ]]; then
  has_analyzer=1
  [[ -x $prefix/bin/nccl-inspector ]] || fail "bin/nccl-inspector was built but not installed"
fi
# Test helpers and the null plugin stay out of the install.
[[ -z $(find "$prefix" -name '*null*' -o -name '*test*' -o -name '*.a') ]] || fail "test artefacts were installed"

# Nothing installed may point back into the build tree (RPATH/RUNPATH).
while IFS= read -r elf; do
  if readelf -dW "$elf" 2>/dev/null | grep -E '\((RPATH|RUNPATH)\)' | grep -cF "$build" >/dev/null; then
    fail "$elf has an RPATH into the build tree"
  fi
done < <(find "$prefix" -type f \( -path '*/bin/*' -o -name '*.so' \))

# The installed emulator against the installed plugin, from an unrelated working directory.
mkdir "$tmp/work"
(cd "$tmp/work" && NCCL_INSPECTOR_DUMP_DIR=logs NCCL_DEBUG=WARN \
  "$prefix/bin/nccl-emu" --plugin "$prefix/lib/libnccl-profiler-inspector.so" --pace none --iters 4 --quiet) \
  >"$tmp/emu.txt" 2>&1 || { cat "$tmp/emu.txt" >&2; fail "installed nccl-emu"; }
grep -q 'bound ncclProfiler_v6 (plugin name "Inspector")' "$tmp/emu.txt" || fail "installed plugin did not bind v6"
shopt -s nullglob
logs=("$tmp/work/logs"/*.jsonl.gz)
((${#logs[@]} == 1)) || fail "expected 1 log from the installed plugin, found ${#logs[@]}"
gzip -dc "${logs[0]}" | grep -q '"type":"end"' || fail "installed plugin's log has no end record"
echo "ok: installed nccl-emu + installed plugin -> ${logs[0]##*/}"

# NCCL_PROFILER_PLUGIN=inspector: NCCL dlopens "libnccl-profiler-inspector.so" through the library search path.
out=$(NCCL_PROFILER_PLUGIN=inspector LD_LIBRARY_PATH="$prefix/lib" "$resolve") || fail "inspector did not resolve"
echo "$out"
grep -qF "$prefix/lib/libnccl-profiler-inspector.so" <<<"$out" || fail "resolved to another file"
if NCCL_PROFILER_PLUGIN=inspector LD_LIBRARY_PATH="$tmp/work" "$resolve" >/dev/null 2>&1 &&
  [[ ! -e /usr/lib/libnccl-profiler-inspector.so && ! -e /usr/local/lib/libnccl-profiler-inspector.so ]]; then
  fail "resolved without the lib dir on LD_LIBRARY_PATH (test is not measuring anything)"
fi
# nccl-emu does the same search when given the bare file name.
(cd "$tmp/work" && NCCL_INSPECTOR_DUMP_DIR=logs2 NCCL_DEBUG=WARN LD_LIBRARY_PATH="$prefix/lib" \
  "$prefix/bin/nccl-emu" --plugin libnccl-profiler-inspector.so --nccl 2.26 --pace none --iters 2 --quiet) \
  >"$tmp/emu2.txt" 2>&1 || { cat "$tmp/emu2.txt" >&2; fail "nccl-emu --plugin libnccl-profiler-inspector.so"; }
grep -q 'bound ncclProfiler_v3' "$tmp/emu2.txt" || fail "NCCL 2.26 emulation did not bind v3"
echo "ok: NCCL_PROFILER_PLUGIN=inspector resolves to the installed library via LD_LIBRARY_PATH"

if ((has_analyzer)); then
  "$prefix/bin/nccl-inspector" --help >"$tmp/help.txt" 2>&1 || { cat "$tmp/help.txt" >&2; fail "nccl-inspector --help"; }
  grep -qi 'summary' "$tmp/help.txt" || fail "nccl-inspector --help does not list summary"
  "$prefix/bin/nccl-inspector" summary "$tmp/work/logs" >"$tmp/summary.txt" 2>&1 ||
    { cat "$tmp/summary.txt" >&2; fail "installed nccl-inspector summary"; }
  grep -q 'AllReduce' "$tmp/summary.txt" || fail "summary of the installed run shows no AllReduce"
  echo "ok: installed nccl-inspector --help and summary"
  # The Plotly.js the build embedded for `report` comes with its license.
  if [[ -f $build/THIRD-PARTY-NOTICES.txt ]]; then
    notice=$prefix/share/doc/nccl-inspector/THIRD-PARTY-NOTICES.txt
    [[ -f $notice ]] || fail "THIRD-PARTY-NOTICES.txt (plotly.js license) not installed"
    grep -q 'Permission is hereby granted' "$notice" || fail "THIRD-PARTY-NOTICES.txt lacks the MIT license text"
    "$prefix/bin/nccl-inspector" report "$tmp/work/logs" -o "$tmp/report.html" >"$tmp/report.txt" 2>&1 ||
      { cat "$tmp/report.txt" >&2; fail "installed nccl-inspector report"; }
    grep -q 'Licensed under the MIT license' "$tmp/report.html" || fail "the report lacks Plotly's license banner"
    echo "ok: installed nccl-inspector report, plotly.js notice installed"
  fi
else
  echo "note: nccl-inspector not built in $build; analyzer checks skipped"
fi
echo "PASS: install"
