#!/usr/bin/env bash
# Runs each libFuzzer target (built by scripts/sanitize.sh into build/fuzz, the
# code under test instrumented with -fsanitize=fuzzer-no-link) from the seed
# corpus in tests/fuzz/corpus_<target>, in rounds of FUZZ_ROUND seconds, until
# a round adds no coverage (the plateau libFuzzer reports) or FUZZ_MAX seconds
# have passed. Prints edges covered ("cov"), features ("ft") and executions
# per round. Any crash, sanitizer report or broken invariant fails the run;
# the crashing input is left in build/fuzz/crashes.
# Usage: scripts/fuzz.sh [TARGET...]   (default: core_fuzz reader_fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_ROUND=${FUZZ_ROUND:-20}
FUZZ_MAX=${FUZZ_MAX:-120}
FUZZ_BUILD=${FUZZ_BUILD:-build/fuzz}
targets=${*:-core_fuzz reader_fuzz}
mkdir -p build/fuzz/crashes
for t in $targets; do
  bin="$(cd "$FUZZ_BUILD" && pwd)/tests/fuzz/$t"
  [ -x "$bin" ] || { echo "fuzz: $bin not built (scripts/sanitize.sh builds it)" >&2; exit 2; }
  work=$(mktemp -d)
  cp tests/fuzz/corpus_"$t"/* "$work"/
  spent=0 last_cov=-1 round=0
  while [ "$spent" -lt "$FUZZ_MAX" ]; do
    round=$((round + 1))
    log="$work.log"
    if ! (cd "$work" && "$bin" -max_total_time="$FUZZ_ROUND" -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix="$OLDPWD/build/fuzz/crashes/$t-" "$work" >"$log" 2>&1); then
      tail -40 "$log"
      echo "fuzz: $t failed (input in build/fuzz/crashes/)" >&2
      exit 1
    fi
    # The last status line carries "cov: N ft: M corp: ...".
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
    corp=$(find "$work" -type f | wc -l)
    spent=$((spent + FUZZ_ROUND))
    echo "fuzz: $t round $round (${spent}s): cov $cov edges, ft $ft, $execs execs, corpus $corp"
    if [ "${cov:-0}" -le "$last_cov" ]; then
      echo "fuzz: $t plateau at $cov edges"
      break
    fi
    last_cov=${cov:-0}
  done
  rm -rf "$work" "$work.log"
done
