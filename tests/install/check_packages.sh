#!/usr/bin/env bash
# Builds the CPack packages of BUILD_DIR into a temporary directory and checks them: two .deb packages (the
# plugin package depends on libc6 only), one .tar.gz with the relative install layout.
#   check_packages.sh BUILD_DIR VERSION
set -euo pipefail
build=$(cd "${1:?usage: check_packages.sh BUILD_DIR VERSION}" && pwd)
version=${2:?usage: check_packages.sh BUILD_DIR VERSION}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb not installed"; exit 77; }

cpack --config "$build/CPackConfig.cmake" -B "$tmp" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; fail "cpack"; }
ls -l "$tmp"/*.deb "$tmp"/*.tar.gz
arch=$(dpkg --print-architecture)
plugin_deb=$tmp/nccl-inspector_${version}_${arch}.deb
tools_deb=$tmp/nccl-inspector-tools_${version}_${arch}.deb
[[ -f $plugin_deb ]] || fail "no $plugin_deb"
[[ -f $tools_deb ]] || fail "no $tools_deb"

field() { dpkg-deb -f "$1" "$2"; }
[[ $(field "$plugin_deb" Package) == nccl-inspector ]] || fail "plugin package name"
[[ $(field "$plugin_deb" Version) == "$version" ]] || fail "plugin package version $(field "$plugin_deb" Version)"
[[ -n $(field "$plugin_deb" Maintainer) ]] || fail "no Maintainer"
[[ -n $(field "$plugin_deb" Description) ]] || fail "no Description"
deps=$(field "$plugin_deb" Depends)
echo "nccl-inspector Depends: $deps"
[[ $deps =~ ^libc6(\ \(\>=\ [0-9.]+\))?$ ]] || fail "the plugin package must depend on libc6 only, got '$deps'"
tdeps=$(field "$tools_deb" Depends)
echo "nccl-inspector-tools Depends: $tdeps"
grep -q "nccl-inspector (= $version)" <<<"$tdeps" || fail "tools package does not depend on the plugin package"
# The tools' Depends follow what the binaries link: libc6 (and the plugin) alone when they are built to need glibc
# alone (cmake/portable.cmake), libstdc++6 and libsimdjson too when they link them.
tools_needed=$(for b in "$build"/bin/nccl-emu "$build"/bin/nccl-inspector; do if [[ -f $b ]]; then readelf -dW "$b"; fi; done)
for lib in libstdc++ libsimdjson; do
  if grep -q "NEEDED.*\[$lib" <<<"$tools_needed"; then
    grep -q "$lib" <<<"$tdeps" || fail "the tools link $lib but the package does not depend on it"
  else
    grep -q "$lib" <<<"$tdeps" && fail "the tools do not link $lib but the package depends on it"
  fi
done
# Lists go to files first: `dpkg-deb -c | grep -q` would die of SIGPIPE under pipefail.
dpkg-deb -c "$tools_deb" >"$tmp/tools.list"

dpkg-deb -c "$plugin_deb" >"$tmp/plugin.list"
for f in ./usr/lib/libnccl-profiler-inspector.so ./usr/share/doc/nccl-inspector/README.md \
  ./usr/share/doc/nccl-inspector/LICENSE ./usr/share/doc/nccl-inspector/docs/deployment.md \
  ./usr/share/nccl-inspector/slurm/taskprolog.sh ./usr/share/nccl-inspector/python/nccl_inspector_mark.py \
  ./usr/share/doc/nccl-inspector/copyright ./usr/share/doc/nccl-inspector/changelog.gz \
  ./usr/share/nccl-inspector/grafana/nccl-inspector.json ./usr/share/doc/nccl-inspector/docs/grafana/nccl-inspector.json \
  ./usr/share/nccl-inspector/schema/log-format.schema.json ./usr/share/doc/nccl-inspector/docs/log-format.schema.json; do
  grep -q " $f$" "$tmp/plugin.list" || fail "$f not in the plugin package"
done
for f in ./usr/share/doc/nccl-inspector-tools/copyright ./usr/share/doc/nccl-inspector-tools/changelog.gz; do
  grep -q " $f$" "$tmp/tools.list" || fail "$f not in the tools package"
done
# Every image the installed docs show is installed with them.
grep -oh 'img/[A-Za-z0-9_.-]*\.png' "$(dirname "$0")"/../../docs/*.md | sort -u >"$tmp/images.list"
while read -r img; do
  grep -q " ./usr/share/doc/nccl-inspector/docs/$img$" "$tmp/plugin.list" || fail "docs show $img, the package lacks it"
done <"$tmp/images.list"
[[ -s $tmp/images.list ]] || fail "no image found in docs/*.md (the check would check nothing)"
# Debian's own package checker: no error (warnings, e.g. no man page, are listed, not fatal).
if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$plugin_deb" "$tools_deb" >"$tmp/lintian.log" 2>&1 || true
  cat "$tmp/lintian.log"
  if grep -q '^E: ' "$tmp/lintian.log"; then fail "lintian reports errors"; fi
else
  echo "lintian not installed: package policy not checked"
fi
if grep -q 'usr/bin/' "$tmp/plugin.list"; then fail "executables in the plugin package"; fi
grep -q ' ./usr/bin/nccl-emu$' "$tmp/tools.list" || fail "nccl-emu not in the tools package"
# nccl-inspector embeds Plotly.js when the build found it: its MIT license travels with it.
if grep -q './usr/bin/nccl-inspector$' "$tmp/tools.list" && [[ -f $build/THIRD-PARTY-NOTICES.txt ]]; then
  grep -q ' ./usr/share/doc/nccl-inspector/THIRD-PARTY-NOTICES.txt$' "$tmp/tools.list" ||
    fail "THIRD-PARTY-NOTICES.txt (plotly.js license) not in the tools package"
fi

# The .deb installs, file by file, where NCCL finds it: extract and resolve "inspector" from /usr/lib.
dpkg-deb -x "$plugin_deb" "$tmp/root"
[[ -f $tmp/root/usr/lib/libnccl-profiler-inspector.so ]] || fail "extracted .deb lacks usr/lib/libnccl-profiler-inspector.so"

tgz=$tmp/nccl-inspector-$version-Linux.tar.gz
[[ -f $tgz ]] || tgz=$(find "$tmp" -maxdepth 1 -name "nccl-inspector-$version-*.tar.gz" | head -n1)
[[ -f $tgz ]] || fail "no .tar.gz"
tar -tzf "$tgz" >"$tmp/tgz.list"
top=$(head -n1 "$tmp/tgz.list" | cut -d/ -f1)
for f in lib/libnccl-profiler-inspector.so bin/nccl-emu share/doc/nccl-inspector/README.md; do
  grep -qx "$top/$f" "$tmp/tgz.list" || fail "$f not in $(basename "$tgz")"
done
mkdir "$tmp/opt"
tar -xzf "$tgz" -C "$tmp/opt"
(cd "$tmp" && NCCL_INSPECTOR_DUMP_DIR=tgzlogs NCCL_DEBUG=WARN "$tmp/opt/$top/bin/nccl-emu" \
  --plugin "$tmp/opt/$top/lib/libnccl-profiler-inspector.so" --pace none --iters 2 --quiet >/dev/null) ||
  fail "nccl-emu from the unpacked tarball"
[[ -n $(find "$tmp/tgzlogs" -name '*.jsonl.gz') ]] || fail "no log from the unpacked tarball"
echo "PASS: packages $(basename "$plugin_deb") $(basename "$tools_deb") $(basename "$tgz")"
