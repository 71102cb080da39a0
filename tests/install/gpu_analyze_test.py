#!/usr/bin/env python3
"""scripts/gpu/analyze.py on synthetic inputs shaped like a one-GPU NCCL 2.28 run (what gpu-check.sh feeds it:
the nranks-1 communicator's Send/Recv to itself, and the 2-rank communicator of two processes on that GPU): a
consistent run passes; a Send/Recv to itself that waited for kernel events (reclaimed) or was GPU-timed, plugin
durations longer than their own call's CUDA events, records after a Send/Recv to itself that still carry GPU
times, ops before it that are not GPU-timed, a wrong ABI, a WARN line, a comm record that does not name the run's
GPU, or grouped parts without their launch group each fail it.
  gpu_analyze_test.py SOURCE_DIR"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

analyze = os.path.join(sys.argv[1], "scripts", "gpu", "analyze.py")
sizes = [1 << 16, 1 << 20, 16 << 20, 64 << 20]
ITERS = 2


def write_log(path, recs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write("\n".join(json.dumps(r) for r in recs) + "\n")


def stats_end():
    return [{"type": "stats", "dropped": {"ring_full": 0, "pool_exhausted": 0, "write_error": 0}}, {"type": "end"}]


def make_pair(tmp, dur_scale, after_marked, before_timing):
    """The 2-rank run: phase 1 (collectives, Send/Recv with the other rank), phase 2 (AlltoAll with a part to
    itself, then AllReduce), as nccl_check.cu --pair issues them."""
    pair = os.path.join(tmp, "pair")
    os.makedirs(pair, exist_ok=True)
    for rk in (0, 1):
        recs = [{"type": "meta", "abi_version": 5},
                {"type": "comm", "comm_hash": "0x2", "rank": rk, "nranks": 2, "nnodes": 2, "abi_version": 5}]
        rows = ["phase,func,bytes,iter,event_us"]
        seq = {}

        def rec(kind, func, b, ev, peer=None, after=False, self_part=False):
            key = (kind, func, peer)
            s = seq.get(key, 0)
            seq[key] = s + 1
            r = {"type": kind, "comm_hash": "0x2", "rank": rk, "nranks": 2, "func": func, "bytes": b, "seq": s,
                 "transport": "network", "net": {"proxy_ops": 2}}
            if peer is not None:
                r["peer"] = peer
            if self_part:
                r.update(timing="enqueue_cpu", dur_us=2.0, transport="unknown")
                del r["net"]
            elif after:
                r.update(timing="gpu", dur_us=ev * 0.5) if not after_marked else \
                    r.update(timing="net_cpu", dur_us=ev * 0.9, kernel_desync=True)
            else:
                r.update(timing=before_timing, dur_us=ev * dur_scale)
            recs.append(r)

        for i in range(-1, ITERS):
            for b in (1 << 20, 16 << 20):
                ev = 50.0 + b / 100e3 + (5000.0 if i < 0 else 0.0)
                for f, rb in (("AllReduce", b), ("AllGather", b // 2), ("ReduceScatter", b // 2)):
                    rows.append(f"pair_coll,{f},{b},{i},{ev:.3f}")
                    rec("coll", f, rb, ev)
                rows.append(f"pair_p2p,SendRecv,{b},{i},{ev:.3f}")
                rec("p2p", "Send", b, ev, peer=1 - rk)
                rec("p2p", "Recv", b, ev, peer=1 - rk)
        for i in range(ITERS):
            for b in (1 << 20, 16 << 20):
                ev = 80.0 + b / 50e3
                rows.append(f"pair_alltoall,AlltoAll,{2 * b},{i},{ev:.3f}")
                for p in (0, 1):
                    rec("p2p", "Send", b, ev, peer=p, after=True, self_part=p == rk)
                    rec("p2p", "Recv", b, ev, peer=p, after=True, self_part=p == rk)
        for i in range(ITERS):
            rows.append(f"pair_after,AllReduce,{1 << 20},{i},60.000")
            rec("coll", "AllReduce", 1 << 20, 60.0, after=True)
        write_log(os.path.join(pair, "logs", f"h{rk}-pid{rk + 10}-x.jsonl.gz"), recs + stats_end())
        with open(os.path.join(pair, f"events{rk}.csv"), "w") as f:
            f.write("\n".join(rows) + "\n")
        with open(os.path.join(pair, f"run{rk}.log"), "w") as f:
            f.write(f"nccl_version 22809\npair rank {rk}: communicator up\nnccl_check: pair rank {rk} done\n")
    return pair


def make(tmp, abi=5, warn=False, self_timing="enqueue_cpu", self_reclaimed=False, bus="0000:1b:00.0",
         groups=True, dur_scale=0.8, after_marked=True, before_timing="gpu"):
    logs = os.path.join(tmp, "logs")
    recs = [{"type": "meta", "abi_version": abi},
            {"type": "comm", "comm_hash": "0x1", "rank": 0, "nranks": 1, "abi_version": abi}]
    if bus:
        recs[1]["pci_bus_id"] = bus
    rows = ["phase,func,bytes,iter,event_us"]
    group = 0

    def part(f, b):
        r = {"type": "p2p", "nranks": 1, "rank": 0, "peer": 0, "func": f, "bytes": b, "timing": self_timing,
             "dur_us": 1.5}
        if groups:
            r["group"] = group
        if self_reclaimed:
            r["reclaimed"] = True
        recs.append(r)

    for i in range(5):
        for b in sizes:
            group += 1
            rows.append(f"sendrecv,SendRecv,{b},{i},{10.0 + b / 200e3:.3f}")
            part("Send", b)
            part("Recv", b)
        group += 1
        rows.append(f"grouped,GroupedP2P,{46 << 20},{i},300.0")
        for b in (2 << 20, 4 << 20, 8 << 20, 32 << 20):
            part("Send", b)
            part("Recv", b)
    write_log(os.path.join(logs, "h-pid1-x.jsonl.gz"), recs + stats_end())
    with open(os.path.join(tmp, "events.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    with open(os.path.join(tmp, "run.log"), "w") as f:
        f.write("nccl_version 22809\ngpus 1\nh:1:1 [0] NCCL INFO NCCL Inspector: bound profiler ABI v5; comm ...\n")
        if warn:
            f.write("h:1:1 [0] NCCL WARN something broke\n")
        f.write("nvidia-smi bus_id 00000000:1B:00.0\n")
    pair = make_pair(tmp, dur_scale, after_marked, before_timing)
    return [sys.executable, analyze, logs, os.path.join(tmp, "events.csv"), os.path.join(tmp, "run.log"), "22809",
            "1", pair]


cases = [("consistent run", {}, 0), ("plugin longer than its call's events", {"dur_scale": 1.5}, 1),
         ("GPU times after a Send/Recv to itself", {"after_marked": False}, 1),
         ("ops before it not GPU-timed", {"before_timing": "enqueue_cpu"}, 1),
         ("self part reclaimed", {"self_reclaimed": True}, 1), ("self part GPU-timed", {"self_timing": "gpu"}, 1),
         ("grouped parts without their group", {"groups": False}, 1),
         ("wrong ABI", {"abi": 4}, 1), ("WARN line", {"warn": True}, 1),
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
