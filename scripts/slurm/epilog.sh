#!/usr/bin/env bash
# SLURM Epilog (runs as root on each node after a job): removes the NCCL Inspector Prometheus textfiles of
# processes that no longer run, so node_exporter stops exporting finished jobs' series. The plugin leaves its
# last file in place on purpose (a scrape after the job still sees the totals); this is the clean-up.
#   slurm.conf:  Epilog=/opt/nccl-inspector/share/nccl-inspector/slurm/epilog.sh
# File names are nccl_inspector_<host>_<pid>.prom (docs/configuration.md). Set NI_PROM_KEEP_MINUTES to keep
# files for a while after the process ended (default 0).
set -uo pipefail

NI_PROM_DIR=${NI_PROM_DIR:-/var/lib/prometheus/node-exporter}
keep=${NI_PROM_KEEP_MINUTES:-0}
host=$(hostname)
[[ -d $NI_PROM_DIR ]] || exit 0
shopt -s nullglob
for f in "$NI_PROM_DIR"/nccl_inspector_*.prom; do
  base=${f##*/}
  base=${base%.prom}
  pid=${base##*_}
  fhost=${base#nccl_inspector_}
  fhost=${fhost%_*}
  [[ $pid =~ ^[0-9]+$ ]] || continue
  # A file from another host (shared directory) is not ours to judge.
  [[ $fhost == "$host" || $fhost == "${host%%.*}" ]] || continue
  [[ -d /proc/$pid ]] && continue
  if ((keep > 0)) && [[ -n $(find "$f" -mmin "-$keep" -print -quit) ]]; then continue; fi
  rm -f -- "$f"
done
exit 0
