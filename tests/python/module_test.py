#!/usr/bin/env python3
"""The Python module nccl_inspector against the command it wraps, on emulated jobs (nccl-emu driving the real
plugin): ops() holds every record `nccl-inspector export` writes, with the same values (exact int64 times),
typed columns, the network/HCA detail flattened and no bandwidth on CPU-timed ops; summary(), stragglers(),
anomalies(), hangs() and tables(..., options) hold the rows and numbers of the command's `-f csv`; errors raise
ValueError with the command's message; docs/python.md's `python runnable` block runs as written (plotly, headless).
  module_test.py SOURCE_DIR PYTHON_DIR NCCL_EMU PLUGIN_SO NCCL_INSPECTOR   (run with the interpreter it was built for)"""
import glob
import gzip
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

src, pydir, emu, plugin, cli = (os.path.abspath(a) for a in sys.argv[1:6])
sys.path.insert(0, pydir)
import pandas as pd  # noqa: E402

import nccl_inspector  # noqa: E402
from nccl_inspector import LogProcessor  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


work = tempfile.mkdtemp(prefix="ni-py-")
env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "SLURM_"))}
env.update(NCCL_DEBUG="WARN")


def emulate(name, version, workload=None, extra=(), killed=False, **knobs):
    d = os.path.join(work, name)
    os.makedirs(d)
    cmd = [emu, "--plugin", plugin, "--nccl", version, "--pace", "none", "--quiet", *extra]
    if workload:
        with open(os.path.join(d, "w.json"), "w") as f:
            json.dump(workload, f)
        cmd += ["--workload", os.path.join(d, "w.json")]
    r = subprocess.run(cmd, env=dict(env, NCCL_INSPECTOR_DUMP_DIR=os.path.join(d, "dump"), **knobs),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != (-9 if killed else 0):  # a planted hang ends as a watchdog ends it: SIGKILL
        raise RuntimeError(f"nccl-emu exit {r.returncode}: {r.stderr[-500:]}")
    return d


def cli_csv(*args):
    out = subprocess.run([cli, *args, "--no-progress", "-f", "csv"], capture_output=True, text=True)
    return pd.read_csv(io.StringIO(out.stdout), dtype={"comm_hash": str}, keep_default_na=True) if out.stdout else None


def same_table(what, got, want, key=None):
    if want is None:
        check(False, f"{what}: the command wrote nothing")
        return
    ok = list(got.columns) == list(want.columns) and len(got) == len(want)
    bad = []
    if ok:
        for c in want.columns:
            for i, (a, b) in enumerate(zip(got[c], want[c])):
                na, nb = a is None or (isinstance(a, float) and math.isnan(a)), pd.isna(b)
                if na or nb:
                    if not (na and nb) and not (na and b == "") and not (nb and a == ""):
                        bad.append((i, c, a, b))
                elif isinstance(b, (int, float)) and not isinstance(b, bool):
                    if not math.isclose(float(a), float(b), rel_tol=2e-7, abs_tol=1e-4):
                        bad.append((i, c, a, b))
                elif str(a) != str(b):
                    bad.append((i, c, a, b))
    check(ok and not bad, f"{what}: {len(got)} rows x {len(got.columns)} columns equal the command's csv"
                          + (f" (columns {list(got.columns)} vs {list(want.columns)})" if not ok else "")
                          + (f"; differ: {bad[:5]}" if bad else ""))


# A job with every kind of timing, network events over IB HCAs, a straggler, P2P.
job = emulate("job", "2.30", {
    "world": 8, "nodes": 2, "net_profiler": "ib",
    "comms": [{"name": "tp", "nranks": 4, "layout": "contiguous", "nchannels": 4},
              {"name": "dp", "nranks": 2, "layout": "strided", "nchannels": 2}],
    "program": [{"comm": "tp", "func": "AllGather", "bytes": 4194304, "ce": True},
                {"comm": "tp", "func": "Broadcast", "bytes": 1048576, "root": 1},
                {"comm": "dp", "func": "SendRecv", "bytes": 65536, "shift": 1}],
    "mix": [{"comm": "dp", "func": "AllReduce", "bytes": [131072, 16777216], "weight": 3},
            {"comm": "tp", "func": "AllReduce", "bytes": [65536, 8388608], "weight": 2},
            {"comm": "tp", "func": "Broadcast", "bytes": [1048576], "weight": 1}],
    "iterations": 120, "truth": {"rank_skew_us": {"5": 150}, "congestion": {"from": 60, "to": 90, "factor": 4}}},
    NCCL_INSPECTOR_ENABLE_NET="1",
    NCCL_INSPECTOR_DUMP_VERBOSE="1")
dump = os.path.join(job, "dump")
lp = LogProcessor(dump)
ops = lp.ops()
exp = subprocess.run([cli, "export", "--no-progress", dump, "-o", "-"], capture_output=True, text=True).stdout
want = pd.read_csv(io.StringIO(exp), dtype={"comm_hash": str, "start_wall_ns": "Int64"})
check(len(ops) == len(want) > 500, f"ops(): {len(ops)} rows, export's {len(want)}")
shared = ["host", "pid", "kind", "comm_hash", "comm_name", "rank", "nranks", "nnodes", "func", "seq", "peer", "bytes",
          "algo", "proto", "nchannels", "dur_us", "busbw_gbs", "timing", "reclaimed", "partial"]


def rows(df, starts):
    out = []
    for r, s in zip(df[shared].itertuples(index=False), starts):
        # export writes "unknown" where ops() has no algorithm or protocol (missing).
        out.append(tuple("" if pd.isna(v) or v == "unknown" else (round(float(v), 6) if isinstance(v, float) else str(v))
                         for v in r) + (s,))
    return sorted(out)


mine = rows(ops, [int(s) if h else None for s, h in zip(ops.start_wall_ns, ops.has_start)])
theirs = rows(want.assign(reclaimed=want.reclaimed.astype(bool), partial=want.partial.astype(bool)),
              [None if pd.isna(s) else int(s) for s in want.start_wall_ns])
diff = [(a, b) for a, b in zip(mine, theirs) if a != b]
check(not diff and len(mine) == len(theirs), f"ops() equals export value for value, int64 times exact"
      + (f"; first difference {diff[0]}" if diff else ""))
check(str(ops.start_wall_ns.dtype) == "int64" and str(ops.func.dtype) == "category"
      and str(ops.comm_name.dtype) == "category", "typed: int64 ns, categoricals")
cpu = ops[ops.timing.isin(["enqueue_cpu", "proxy_cpu", "net_cpu"])]
check(len(cpu) > 0 and cpu.busbw_gbs.isna().all() and cpu.algbw_gbs.isna().all(),
      f"{len(cpu)} CPU-timed ops (API-only Broadcast, copy-engine) have no bandwidth")
gpu = ops[ops.timing.eq("gpu") & ops.dur_us.gt(0)]
check(((gpu.algbw_gbs - gpu.bytes / (gpu.dur_us * 1e3)).abs() < 1e-9).all(), "algbw = bytes / time on GPU-timed ops")
hca = [c for c in ops.columns if re.fullmatch(r"hca_.+_bytes", c)]
check(len(hca) >= 2 and (ops[hca].fillna(0).sum(axis=1) > 0).sum() > 0, f"HCA columns flattened: {hca}")
check((ops.net_send_bytes > 0).any(), "network bytes flattened")
roles = dict(ops.groupby("comm_name", observed=True).comm_role.first())
check(roles.get("tp") == "nvlink_only" and roles.get("dp") == "network_only", f"comm roles {roles}")
check(ops.attrs.get("bad_lines") == 0, "attrs: bad_lines")
# The 2.29+ Broadcasts put tp's kernel stamps out of step: the records the plugin marked kernel_desync, one for one.
marked = 0
for f in glob.glob(os.path.join(dump, "*.jsonl.gz")):
    with gzip.open(f, "rt") as fh:
        marked += sum('"kernel_desync":true' in line for line in fh)
check(str(ops.kernel_desync.dtype) == "bool" and int(ops.kernel_desync.sum()) == marked > 0,
      f"kernel_desync: {int(ops.kernel_desync.sum())} marked ops, the logs' {marked}")
check(str(ops.user_tag.dtype) == "uint64" and (ops.user_tag == 0).all(), "user_tag: uint64, 0 (NCCL 2.30 has no tags)")
# NCCL 2.31: the tags of the calls, exactly (one is past 2^53, where a float64 would lose it).
tagged = LogProcessor(os.path.join(emulate("tagged", "2.31", NCCL_INSPECTOR_ENABLE_PHASES="1", workload={
    "world": 4, "nodes": 1, "comms": [{"name": "tp", "nranks": 4, "layout": "contiguous", "nchannels": 2}],
    "program": [{"comm": "tp", "func": "AllReduce", "bytes": 1048576, "tag": 9007199254740993},
                {"comm": "tp", "func": "AllGather", "bytes": 1048576, "kernel_variant": "AllGather_STMC"}],
    "tag_names": {"9007199254740993": "layer 3 fwd TP"},
    "iterations": 1, "truth": {"rank_skew_us": {"2": 30}}}), "dump")).ops()
tags = dict(tagged.groupby("func", observed=True).user_tag.agg(lambda v: sorted(set(int(x) for x in v))))
check(tags == {"AllReduce": [9007199254740993], "AllGather": [0]}, f"user_tag from NCCL 2.31: {tags}")
# The tag's name, from the tag record the emulated application wrote (ncclInspectorNameTag); none for untagged calls.
names = tagged.groupby("func", observed=True).tag_name.agg(lambda v: sorted(set(str(x) for x in v)))
check(str(tagged.tag_name.dtype) == "category" and names.to_dict() == {"AllReduce": ["layer 3 fwd TP"], "AllGather": ["nan"]},
      f"tag_name from the logs' tag records: {names.to_dict()}")
# A symmetric kernel: its algo is the variant's ("sym:" and NCCL's algo), kernel_variant names it, no proto.
ag, ar = tagged[tagged.func == "AllGather"], tagged[tagged.func == "AllReduce"]
check(len(ag) == 4 and (ag.algo == "sym:STMC").all() and (ag.kernel_variant == "AllGather_STMC").all()
      and ag.proto.isna().all(), f"a symmetric AllGather: {ag[['algo', 'proto', 'kernel_variant']].drop_duplicates()}")
# Kernel phases (asked for): every op has them; the late rank (2) waited least at every collective, ~30 us less.
ph = tagged[["initial_sync_us", "initial_sync_min_us", "initial_sync_max_us", "compute_us", "final_sync_us"]]
check(str(ph.initial_sync_us.dtype) == "float64" and ph.notna().all().all() and (ph.compute_us > 0).all()
      and (ph.initial_sync_min_us <= ph.initial_sync_us).all() and (ph.initial_sync_us <= ph.initial_sync_max_us).all(),
      f"phases on every op: {ph.describe()}")
for func, g in tagged.groupby("func", observed=True):
    late, others = g[g["rank"] == 2].initial_sync_us, g[g["rank"] != 2].initial_sync_us
    check(len(late) == 1 and late.iloc[0] + 25 < others.min(), f"{func}: the late rank's initial_sync {list(late)} vs {list(others)}")
check(lp.ops().initial_sync_us.isna().all(), "no phases before NCCL 2.31")
check(len(ar) == 4 and ar.kernel_variant.isna().all() and (ar.algo != "").all() and not ar.algo.str.startswith("sym").any(),
      "the tuner's AllReduce has no kernel_variant")

same_table("summary()", lp.summary(), cli_csv("summary", dump))
same_table("summary(per_rank=True)", lp.tables("summary", per_rank=True)["summary"], cli_csv("summary", dump, "--per-rank"))
same_table("stragglers()", lp.stragglers(), cli_csv("stragglers", dump))
check(lp.stragglers().flagged.eq("LATE").any(), "the planted straggler is flagged")
an = lp.anomalies()
same_table("anomalies()", an, cli_csv("anomalies", dump))
check(len(an) > 0, f"the planted congestion gives anomalies ({len(an)} rows)")
# hangs on a job with a planted hang (a rank's kernel never ends), held until the plugin says so.
hung = emulate("hung", "2.28", extra=["--iters", "40", "--hang",
                                      '{"kind":"kernel_stuck","world_rank":5,"comm":"dp","at_op":3}'],
               killed=True, NCCL_INSPECTOR_HANG_MS="300")
hl = LogProcessor(os.path.join(hung, "dump")).hangs()
same_table("hangs()", hl, cli_csv("hangs", os.path.join(hung, "dump")))
check(len(hl) > 0, f"the planted hang is in hangs() ({len(hl)} rows)")
same_table("anomalies(z=3)", lp.tables("anomalies", z=3.0)["anomalies"] if "anomalies" in lp.tables("anomalies", z=3.0)
           else next(iter(lp.tables("anomalies", z=3.0).values())), cli_csv("anomalies", dump, "--z", "3"))

for call, msg in [(lambda: LogProcessor(os.path.join(work, "nope")).ops(), "does not exist"),
                  (lambda: lp.tables("summary", bogus=1), "no option"),
                  (lambda: lp.tables("nonsense"), "no analysis"),
                  (lambda: lp.tables("anomalies", top=-1), "expected a count"),
                  (lambda: lp.tables("anomalies", z="high"), "expected a number")]:
    try:
        call()
        check(False, f"raises ValueError ({msg})")
    except ValueError as e:
        check(msg in str(e) or "no such" in str(e).lower(), f"ValueError: {e}")

# docs/python.md's example, as written, where dump/ is the job's logs.
blocks = re.findall(r"```python runnable\n(.*?)```", open(os.path.join(src, "docs", "python.md")).read(), re.S)
check(len(blocks) == 1, "docs/python.md has its runnable example")
for b in blocks:
    r = subprocess.run([sys.executable, "-c", b], cwd=job, capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=pydir))
    html = os.path.join(job, "algbw.html")
    check(r.returncode == 0 and os.path.exists(html) and "plotly" in open(html).read(200000).lower(),
          f"docs example runs headless, writes algbw.html ({r.stderr[-300:]})")
check(nccl_inspector.__version__ != "", f"version {nccl_inspector.__version__}")
# pip install from the source tree, without network, into a venv (reusing this build: NCCL_INSPECTOR_BUILD_DIR).
venv = os.path.join(work, "venv")
if subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], capture_output=True).returncode == 0:
    r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index",
                        os.path.join(src, "python")], capture_output=True, text=True,
                       env=dict(env, NCCL_INSPECTOR_BUILD_DIR=os.path.dirname(pydir)))
    q = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                        "import nccl_inspector as n, sys; print(n.__file__); print(len(n.LogProcessor(sys.argv[1]).ops()))",
                        dump], capture_output=True, text=True, cwd=work)
    lines = q.stdout.split()
    check(r.returncode == 0 and len(lines) == 2 and lines[0].startswith(venv) and int(lines[1]) == len(ops),
          f"pip install ./python (no network) gives an importable module: {q.stdout.strip()!r} {r.stderr[-300:]}"
          f"{q.stderr[-300:]}")
    for junk in ("build", "nccl_inspector.egg-info"):  # setuptools' in-tree leftovers (git-ignored)
        shutil.rmtree(os.path.join(src, "python", junk), ignore_errors=True)
else:
    print("skip pip install: no venv module for this interpreter")
if failures:
    print(f"{len(failures)} failed; kept {work}")
    sys.exit(1)
shutil.rmtree(work, ignore_errors=True)
