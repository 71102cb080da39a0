# shellcheck shell=bash
# Sourced by check_glibc_only.sh and check_tools.sh: a chroot that holds the dynamic loader and the libraries the
# given binaries load (as ldd resolves them on this machine), at the paths the loader looks for them.
#   glibc_chroot PATTERN BIN...   sets $root (removed on exit) and $chroot_bin; fails when a library in it
#                                 matches the find -name PATTERNs (e.g. 'libstdc++*|libgcc_s*'), i.e. is not glibc's.
# Returns 77 when not root or without chroot (the caller decides whether that skips it).
glibc_chroot() {
  local forbidden=$1 bin path
  shift
  chroot_bin=$(command -v chroot || true)
  if [[ $(id -u) != 0 ]] || [[ -z $chroot_bin ]]; then return 77; fi
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  for bin in "$@"; do
    while read -r path; do
      mkdir -p "$root$(dirname "$path")"
      cp "$(readlink -f "$path")" "$root$path"
    done < <(ldd "$bin" | grep -oE '/[^ ]+' | sort -u)
  done
  mkdir -p "$root/opt/ni/lib" "$root/logs" "$root/tmp"
  local names=() p pats
  IFS='|' read -ra pats <<<"$forbidden"
  for p in "${pats[@]}"; do names+=(-o -name "$p"); done
  if find "$root" -false "${names[@]}" | grep -q .; then
    echo "FAIL: the chroot is not glibc-only:" >&2
    find "$root" -false "${names[@]}" >&2
    return 1
  fi
}
