#!/usr/bin/env bash
# SLURM TaskProlog for Prometheus mode: every task on the node gets the NCCL Inspector plugin with its
# Prometheus textfile written into node_exporter's textfile directory (node_exporter
# --collector.textfile.directory=$NI_PROM_DIR), and no JSON log unless the job asks for one.
#
# slurm.conf:   TaskProlog=/opt/nccl-inspector/share/nccl-inspector/slurm/taskprolog.sh
#               TaskEpilog or Epilog: .../slurm/epilog.sh  (removes textfiles of finished processes)
#
# slurmstepd runs this as the job's user before each task and applies the "export NAME=value" lines it prints to
# the task's environment. A job opts out with NI_DISABLE=1, or chooses its own plugin by setting
# NCCL_PROFILER_PLUGIN itself; a job that already set NCCL_INSPECTOR_JSON_DUMP keeps its value.
# This script never fails a task: anything unexpected means "print nothing".
set -uo pipefail

NI_PREFIX=${NI_PREFIX:-/opt/nccl-inspector}
NI_PROM_DIR=${NI_PROM_DIR:-/var/lib/prometheus/node-exporter}
plugin=$NI_PREFIX/lib/libnccl-profiler-inspector.so

[[ ${NI_DISABLE:-0} == 1 ]] && exit 0
[[ -n ${NCCL_PROFILER_PLUGIN:-} ]] && exit 0
[[ -r $plugin ]] || exit 0
# The directory must be writable by job users (e.g. mode 1777, like /tmp); otherwise stay out of the way.
[[ -d $NI_PROM_DIR && -w $NI_PROM_DIR ]] || exit 0

echo "export NCCL_PROFILER_PLUGIN=$plugin"
echo "export NCCL_INSPECTOR_PROM_DUMP=1"
echo "export NCCL_INSPECTOR_PROM_DIR=$NI_PROM_DIR"
[[ -z ${NCCL_INSPECTOR_JSON_DUMP:-} ]] && echo "export NCCL_INSPECTOR_JSON_DUMP=0"
exit 0
