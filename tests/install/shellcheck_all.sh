#!/usr/bin/env bash
# Runs shellcheck over every deployment script and every shell test of install/docs/portability.
# Usage: shellcheck_all.sh SHELLCHECK SOURCE_DIR
set -euo pipefail
sc=${1:?usage: shellcheck_all.sh SHELLCHECK SOURCE_DIR}
cd "${2:?usage: shellcheck_all.sh SHELLCHECK SOURCE_DIR}"
shopt -s nullglob
files=(scripts/slurm/*.sh scripts/slurm/*.sbatch scripts/docker/*.sh scripts/gpu-check.sh scripts/gpu/*.sh
  tests/install/*.sh tests/install/fake-bin/* tests/portability/*.sh tests/docs/*.sh)
((${#files[@]} > 0)) || { echo "FAIL: nothing to check" >&2; exit 1; }
"$sc" -x -s bash "${files[@]}"
echo "PASS: shellcheck clean: ${#files[@]} files"
