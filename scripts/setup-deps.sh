#!/usr/bin/env bash
# Installs the Debian 12 packages the build, the tests and the demo need.
# Idempotent; quiet when everything is already there.
set -euo pipefail
pkgs=(cmake g++ make pkg-config zlib1g-dev libdeflate-dev nlohmann-json3-dev libsimdjson-dev
      libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev valgrind binutils clang libclang-rt-14-dev python3 python3-pandas)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
