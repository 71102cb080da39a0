#!/usr/bin/env bash
# Dry run of scripts/slurm/nccl-inspector.sbatch with a fake sbatch/srun (tests/install/fake-bin): 2 nodes x 2
# tasks, nccl-emu standing in for the training job (each task emulates 2 of 8 GPUs). Checks the per-job,
# per-node layout and that every log carries the job's SLURM identity. Then the Prometheus-mode TaskProlog and
# the Epilog clean-up.
#   recipe_slurm.sh SOURCE_DIR PREFIX        (PREFIX has bin/nccl-emu and lib/libnccl-profiler-inspector.so)
set -euo pipefail
src=${1:?usage: recipe_slurm.sh SOURCE_DIR PREFIX}
prefix=$(cd "${2:?usage: recipe_slurm.sh SOURCE_DIR PREFIX}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/train.sh" <<'TRAIN'
#!/usr/bin/env bash
# Stand-in for `python train.py`: this task's two GPUs of an 8-GPU job, emulated.
set -euo pipefail
first=$((SLURM_PROCID * 2))
exec "$NI_PREFIX/bin/nccl-emu" --plugin "$NCCL_PROFILER_PLUGIN" --world 8 --ranks "$first-$((first + 1))" \
  --seed 11 --pace none --iters 4 --quiet
TRAIN
chmod +x "$tmp/train.sh"

# --- sbatch script: per-job dir, per-node subdirectories -------------------------------------------------------
(
  cd "$tmp"
  PATH="$here/fake-bin:$PATH" NI_PREFIX="$prefix" NI_LOG_ROOT="$tmp/logs" FAKE_SLURM_JOB_ID=777123 \
    NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 NCCL_DEBUG=WARN \
    sbatch "$src/scripts/slurm/nccl-inspector.sbatch" "$tmp/train.sh" >"$tmp/job.out" 2>&1
) || { cat "$tmp/job.out" >&2; fail "the sbatch script failed"; }
cat "$tmp/job.out"
[[ -d $tmp/logs/777123 ]] || fail "no per-job directory logs/777123"
for node in fakenode0 fakenode1; do
  shopt -s nullglob
  files=("$tmp/logs/777123/$node"/*.jsonl.gz)
  shopt -u nullglob
  ((${#files[@]} == 2)) || fail "expected 2 logs (one per task) in $node, found ${#files[@]}"
  for f in "${files[@]}"; do
    text=$(gzip -dc "$f")
    grep -q '"slurm_job_id":"777123"' <<<"$text" || fail "$f: meta lacks slurm_job_id 777123"
    grep -q '"job_id_source":"SLURM_JOB_ID"' <<<"$text" || fail "$f: job id not taken from SLURM_JOB_ID"
    grep -Eq '"type":"(coll|p2p)"' <<<"$text" || fail "$f: no op records"
    grep -q '"type":"end"' <<<"$text" || fail "$f: no end record"
  done
done
stray=$(find "$tmp/logs/777123" -mindepth 1 -maxdepth 1 ! -name 'fakenode*' | head -n1)
[[ -z $stray ]] || fail "unexpected entry in the job directory: $stray"
echo "ok: sbatch recipe wrote logs/777123/fakenode{0,1}/ with 2 complete logs each"

# A missing plugin must not stop the job.
(
  cd "$tmp"
  PATH="$here/fake-bin:$PATH" NI_PREFIX="$tmp/nowhere" NI_LOG_ROOT="$tmp/logs2" FAKE_SLURM_NNODES=1 \
    FAKE_SLURM_TASKS_PER_NODE=1 sbatch "$src/scripts/slurm/nccl-inspector.sbatch" true >"$tmp/job2.out" 2>&1
) || { cat "$tmp/job2.out" >&2; fail "the job failed because the plugin is missing"; }
grep -q 'running without the profiler' "$tmp/job2.out" || fail "no warning about the missing plugin"
[[ ! -e $tmp/logs2 ]] || fail "log directory created although the plugin is missing"
echo "ok: missing plugin -> warning, job still runs"

# --- TaskProlog (Prometheus mode) ---------------------------------------------------------------------------------
prom=$tmp/textfile
mkdir -p "$prom"
out=$(env -u NCCL_PROFILER_PLUGIN NI_PREFIX="$prefix" NI_PROM_DIR="$prom" "$src/scripts/slurm/taskprolog.sh")
echo "$out"
grep -qx "export NCCL_PROFILER_PLUGIN=$prefix/lib/libnccl-profiler-inspector.so" <<<"$out" || fail "prolog: plugin"
grep -qx 'export NCCL_INSPECTOR_PROM_DUMP=1' <<<"$out" || fail "prolog: PROM_DUMP"
grep -qx "export NCCL_INSPECTOR_PROM_DIR=$prom" <<<"$out" || fail "prolog: PROM_DIR"
# Apply it as slurmstepd would and run a task.
(
  cd "$tmp"
  while read -r kw assignment; do
    [[ $kw == export ]] && export "${assignment?}"
  done <<<"$out"
  SLURM_JOB_ID=555 NCCL_DEBUG=WARN NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 \
    "$prefix/bin/nccl-emu" --plugin "$NCCL_PROFILER_PLUGIN" --pace none --iters 3 --quiet >/dev/null
)
shopt -s nullglob
proms=("$prom"/nccl_inspector_*.prom)
shopt -u nullglob
((${#proms[@]} == 1)) || fail "expected one .prom file in the textfile dir, found ${#proms[@]}"
# (op series of finalized communicators are gone from the final file; the process totals stay)
written=$(sed -n 's/^nccl_inspector_records_written_total{.*} \([0-9]*\)$/\1/p' "${proms[0]}")
((${written:-0} > 0)) || fail "records_written_total is '${written}' in ${proms[0]}"
grep -q 'job="555"' "${proms[0]}" || fail "series lack job=\"555\""
[[ -z $(find "$tmp" -name '*.jsonl.gz' -newer "$tmp/job2.out") ]] || fail "JSON log written in Prometheus-only mode"
echo "ok: TaskProlog -> ${proms[0]##*/} with $written records written, no JSON log"

# Opt-outs print nothing.
[[ -z $(NI_DISABLE=1 NI_PREFIX="$prefix" NI_PROM_DIR="$prom" "$src/scripts/slurm/taskprolog.sh") ]] || fail "NI_DISABLE"
[[ -z $(NCCL_PROFILER_PLUGIN=/x.so NI_PREFIX="$prefix" NI_PROM_DIR="$prom" "$src/scripts/slurm/taskprolog.sh") ]] ||
  fail "a job's own NCCL_PROFILER_PLUGIN must win"
[[ -z $(env -u NCCL_PROFILER_PLUGIN NI_PREFIX="$prefix" NI_PROM_DIR="$tmp/missing" "$src/scripts/slurm/taskprolog.sh") ]] ||
  fail "missing textfile dir must mean no change"
echo "ok: TaskProlog opt-outs"

# --- Epilog: remove files of processes that ended, keep live ones -------------------------------------------------
live="$prom/nccl_inspector_$(hostname)_$$.prom"
echo '# live' >"$live"
NI_PROM_DIR="$prom" "$src/scripts/slurm/epilog.sh"
[[ ! -e ${proms[0]} ]] || fail "epilog left the finished process's file"
[[ -e $live ]] || fail "epilog removed a running process's file"
echo "ok: Epilog removes stale textfiles only"
echo "PASS: SLURM recipes"
