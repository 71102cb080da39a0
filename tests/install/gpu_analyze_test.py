#!/usr/bin/env python3
"""scripts/gpu/analyze.py on synthetic inputs shaped like a one-GPU NCCL 2.28 run (what gpu-check.sh feeds it):
a consistent run passes; plugin durations longer than the CUDA events, a wrong ABI, a WARN line, missing GPU
timing, or a comm record that does not name the run's GPU each fail it.
  gpu_analyze_test.py SOURCE_DIR"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

analyze = os.path.join(sys.argv[1], "scripts", "gpu", "analyze.py")
sizes = [1 << 16, 1 << 20, 16 << 20, 64 << 20]


def make(tmp, abi=5, dur_scale=0.8, warn=False, timing="gpu", bus="0000:1b:00.0"):
    logs = os.path.join(tmp, "logs")
    os.makedirs(logs, exist_ok=True)
    recs = [{"type": "meta", "abi_version": abi},
            {"type": "comm", "comm_hash": "0x1", "rank": 0, "nranks": 1, "abi_version": abi}]
    if bus:
        recs[1]["pci_bus_id"] = bus
    rows = ["phase,func,bytes,iter,event_us"]
    for i in range(5):
        for b in sizes:
            ev = 10.0 + b / 200e3  # us
            rows.append(f"sendrecv,SendRecv,{b},{i},{ev:.3f}")
            for f in ("Send", "Recv"):
                recs.append({"type": "p2p", "nranks": 1, "func": f, "bytes": b, "timing": timing,
                             "dur_us": ev * dur_scale})
        rows.append(f"grouped,GroupedP2P,{46 << 20},{i},300.0")
        for b in (2 << 20, 4 << 20, 8 << 20, 32 << 20):
            for f in ("Send", "Recv"):
                recs.append({"type": "p2p", "nranks": 1, "func": f, "bytes": b, "timing": timing,
                             "dur_us": 250.0 * dur_scale if dur_scale < 1 else 400.0})
    recs.append({"type": "stats", "dropped": {"ring_full": 0, "pool_exhausted": 0, "write_error": 0}})
    recs.append({"type": "end"})
    with gzip.open(os.path.join(logs, "h-pid1-x.jsonl.gz"), "wt") as f:
        f.write("\n".join(json.dumps(r) for r in recs) + "\n")
    with open(os.path.join(tmp, "events.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    with open(os.path.join(tmp, "run.log"), "w") as f:
        f.write("nccl_version 22809\ngpus 1\nh:1:1 [0] NCCL INFO NCCL Inspector: bound profiler ABI v5; comm ...\n")
        if warn:
            f.write("h:1:1 [0] NCCL WARN something broke\n")
        f.write("nvidia-smi bus_id 00000000:1B:00.0\n")
    return [sys.executable, analyze, logs, os.path.join(tmp, "events.csv"), os.path.join(tmp, "run.log"), "22809",
            "1"]


cases = [("consistent run", {}, 0), ("plugin longer than events", {"dur_scale": 1.5}, 1),
         ("plugin absurdly short", {"dur_scale": 0.05}, 1), ("wrong ABI", {"abi": 4}, 1),
         ("WARN line", {"warn": True}, 1), ("no GPU timing", {"timing": "enqueue_cpu"}, 1),
         ("comm names no GPU", {"bus": ""}, 1), ("comm names another GPU", {"bus": "0000:9a:00.0"}, 1)]
bad = 0
for name, kw, want in cases:
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(make(tmp, **kw), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        ok = r.returncode == want
        print(f"{'ok' if ok else 'FAIL'}: {name}: exit {r.returncode} (want {want})")
        if not ok or name == "consistent run":
            print(r.stdout)
        bad += not ok
sys.exit(1 if bad else 0)
