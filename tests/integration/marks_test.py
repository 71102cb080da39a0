#!/usr/bin/env python3
"""Iteration marks end to end.

1. `iterations` against the emulator's truth: an emulated training loop (nccl-emu `mark_every`, 8 ranks in two
   processes, as a launcher starts them) marks each iteration through the plugin's ncclInspectorMark, as user code
   does; `nccl-inspector iterations` must find every iteration with exactly the ops and bytes the truth file says
   the loop issued in it, wall times that add up to the iterations' compute gaps, and comm_pct <= 100. On NCCL 2.23
   (ABI v1), 2.28 (v5) and 2.30 (v6).
2. The Python helper (scripts/python/nccl_inspector_mark.py), each case in a fresh interpreter: a no-op (-1, no
   exception) before NCCL_PROFILER_PLUGIN is set, before the plugin is loaded, and before any communicator exists;
   0 once one does, with the plugin named by path or by NCCL's short name; the mark and a tag name are in the log
   (name_tag of tag 0 is refused with -2).
  marks_test.py SOURCE_DIR NCCL_EMU PLUGIN_SO NCCL_INSPECTOR"""
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

src, emu, plugin, cli = (os.path.abspath(a) for a in sys.argv[1:5])
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


WORLD, ITERS, EVERY, GAP_US = 8, 24, 4, 15000
workload = {"world": WORLD, "nodes": 2,
            "comms": [{"name": "tp", "nranks": 4}, {"name": "dp", "nranks": 2, "layout": "strided"}],
            "mix": [{"comm": "tp", "func": "AllReduce", "bytes": [65536, 1048576]},
                    {"comm": "dp", "func": "AllReduce", "bytes": [4194304]},
                    {"comm": "tp", "func": "AllGather", "bytes": [262144]}],
            "iterations": ITERS, "mark_every": EVERY, "iteration_gap_us": GAP_US}

for nccl in ("2.23", "2.28", "2.30"):
    work = tempfile.mkdtemp(prefix="ni-marks-")
    wl = os.path.join(work, "w.json")
    with open(wl, "w") as f:
        json.dump(workload, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "SLURM_"))}
    env.update(NCCL_INSPECTOR_DUMP_DIR=os.path.join(work, "logs"), NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES="0",
               NCCL_DEBUG="WARN")
    start_at = str(__import__("time").time_ns() + 300_000_000)
    procs = [subprocess.Popen([emu, "--plugin", plugin, "--nccl", nccl, "--workload", wl, "--ranks", ranks,
                               "--pace", "realtime", "--quiet", "--start-at", start_at,
                               "--truth", os.path.join(work, f"truth-{ranks}.jsonl")], env=env,
                              stdout=subprocess.DEVNULL) for ranks in ("0-3", "4-7")]
    check(all(p.wait(timeout=120) == 0 for p in procs), f"{nccl}: emulated job ran")
    truth = []
    for t in glob.glob(os.path.join(work, "truth-*.jsonl")):
        with open(t) as f:
            truth += [json.loads(l) for l in f if l.strip()]
    ops = [t for t in truth if t.get("kind") in ("coll", "p2p", "ce")]
    out = subprocess.run([cli, "iterations", "-f", "json", "--no-progress", os.path.join(work, "logs")],
                         capture_output=True, text=True)
    check(out.returncode == 0, f"{nccl}: iterations ran ({out.stderr.strip()[:200]})")
    rows = json.loads(out.stdout)["iterations"]["rows"] if out.returncode == 0 else []
    n_iter = ITERS // EVERY
    check(len(rows) == n_iter, f"{nccl}: {len(rows)} iterations found, {n_iter} marked")
    per_iter_ops = EVERY * WORLD  # one op per step per rank
    check(all(r["ops"] == per_iter_ops for r in rows),
          f"{nccl}: every iteration has its {per_iter_ops} ops: {[r['ops'] for r in rows]}")
    check(sum(r["ops"] for r in rows) == len(ops), f"{nccl}: ops over all iterations = the truth's {len(ops)}")
    check(sum(r["bytes"] for r in rows) == sum(t["bytes"] for t in ops),
          f"{nccl}: bytes over all iterations = the truth's")
    # Each mark is taken when the process's ranks finished the previous iteration, on the CPU, so a single
    # iteration's wall time moves with scheduling (the emulator paces ops a few ms ahead); their sum cannot.
    walls = [r["wall_ms_p50"] for r in rows if r.get("wall_ms_p50") is not None]
    check(len(walls) == n_iter - 1 and sum(walls) >= 0.8 * (n_iter - 1) * GAP_US / 1000,
          f"{nccl}: the closed iterations last their {GAP_US / 1000} ms of compute each, in sum: {walls}")
    check(all(r.get("comm_pct") is None or 0 < r["comm_pct"] <= 100 for r in rows), f"{nccl}: comm_pct in (0, 100]")

# ---- the Python helper
# A sanitizer build's plugin needs its runtime loaded first, which /usr/bin/python3 is not built with: the
# helper is checked in the plain build.
needed = subprocess.run(["readelf", "-d", plugin], capture_output=True, text=True).stdout
if any(f"lib{s}san" in needed for s in ("a", "t", "ub")):
    print("helper: skipped (sanitizer build)")
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
helper_dir = os.path.join(src, "scripts", "python")
work = tempfile.mkdtemp(prefix="ni-markpy-")
CASE = r"""
import ctypes, os, sys
sys.path.insert(0, sys.argv[1])
from nccl_inspector_mark import mark, name_tag, flush
plugin, step = sys.argv[2], sys.argv[3]
if step == "unset":
    print(mark("a"), flush(), name_tag(1, "a")); sys.exit(0)
if step == "not-loaded":
    print(mark("a")); sys.exit(0)
lib = ctypes.CDLL(plugin, mode=os.RTLD_LOCAL | os.RTLD_NOW)   # as NCCL loads it
if step == "no-comm":
    print(mark("a")); sys.exit(0)
class Table(ctypes.Structure):   # ncclProfiler_v5: name, init, startEvent, stopEvent, recordEventState, finalize
    _fields_ = [("name", ctypes.c_char_p),
                ("init", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64,
                                          ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                                          ctypes.c_int, ctypes.c_void_p)),
                ("start", ctypes.c_void_p), ("stop", ctypes.c_void_p), ("record", ctypes.c_void_p),
                ("finalize", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p))]
t = Table.in_dll(lib, "ncclProfiler_v5")
ctx, mask = ctypes.c_void_p(), ctypes.c_int(0)
t.init(ctypes.byref(ctx), 0xabc, ctypes.byref(mask), b"dp", 1, 2, 0, None)
r = mark("iteration 7 from python")
r2 = name_tag(12, "layer 12 fwd TP AllReduce")
r3 = name_tag(0, "no tag")
t.finalize(ctx)
print(r, r2, r3)
"""
case = os.path.join(work, "case.py")
with open(case, "w") as f:
    f.write(CASE)


def run_case(step, plugin_env, logs):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "SLURM_"))}
    env["NCCL_INSPECTOR_DUMP_DIR"] = logs
    if plugin_env is not None:
        env["NCCL_PROFILER_PLUGIN"] = plugin_env
    env["LD_LIBRARY_PATH"] = os.path.dirname(plugin)
    r = subprocess.run(["/usr/bin/python3", case, helper_dir, plugin, step], capture_output=True, text=True, env=env)
    return r.returncode, r.stdout.strip(), r.stderr.strip()[-300:]


rc, out, err = run_case("unset", None, os.path.join(work, "l0"))
check(rc == 0 and out == "-1 -1 -1", f"helper: NCCL_PROFILER_PLUGIN unset -> no-op ({out} {err})")
rc, out, err = run_case("not-loaded", plugin, os.path.join(work, "l1"))
check(rc == 0 and out == "-1", f"helper: plugin not loaded yet -> no-op ({out} {err})")
rc, out, err = run_case("no-comm", plugin, os.path.join(work, "l2"))
check(rc == 0 and out == "-1", f"helper: no communicator yet -> no-op ({out} {err})")
for name, plugin_env in (("path", plugin), ("short name", "inspector")):
    logs = os.path.join(work, "l-" + name.replace(" ", ""))
    rc, out, err = run_case("comm", plugin_env, logs)
    check(rc == 0 and out == "0 0 -2",
          f"helper ({name}): mark and tag name recorded once a communicator exists, tag 0 refused ({out} {err})")
    labels, tags = [], []
    for p in glob.glob(os.path.join(logs, "*.jsonl.gz")):
        with gzip.open(p, "rt") as f:
            recs = [json.loads(l) for l in f]
        labels += [r.get("label") for r in recs if r.get("type") == "mark"]
        tags += [(r.get("user_tag"), r.get("label")) for r in recs if r.get("type") == "tag"]
    check(labels == ["iteration 7 from python"], f"helper ({name}): the mark is in the log: {labels}")
    check(tags == [(12, "layer 12 fwd TP AllReduce")], f"helper ({name}): the tag's name is in the log: {tags}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
