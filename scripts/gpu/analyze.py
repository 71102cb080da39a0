#!/usr/bin/env python3
"""Compares the NCCL Inspector plugin's records with CUDA-event timings of the same operations (written by
nccl_check.cu) and prints one summary table. Used by scripts/gpu-check.sh; exit 0 = every check passed, 1 = a
check failed.
  analyze.py LOG_DIR EVENTS_CSV RUN_LOG NCCL_VERSION_CODE NGPU [PAIR_DIR]
PAIR_DIR: the 2-rank run on one GPU (logs/, events0.csv, events1.csv, run0.log, run1.log), see nccl_check.cu."""
import csv
import glob
import gzip
import json
import statistics
import sys

log_dir, csv_path, run_log, code, ngpu = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
pair_dir = sys.argv[6] if len(sys.argv) > 6 else None
major, minor = (code // 10000, (code % 10000) // 100) if code >= 10000 else (code // 1000, (code % 1000) // 100)
ver = (major, minor)
expected_abi = 1 if ver <= (2, 23) else 2 if ver <= (2, 25) else 3 if ver == (2, 26) else 4 if ver == (2, 27) \
    else 5 if ver == (2, 28) else 6 if ver <= (2, 30) else 7



def read_logs_file(f):
    out = []
    with gzip.open(f, "rt") as fh:
        for line in fh:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def read_logs(d):
    out = []
    for f in sorted(glob.glob(f"{d}/**/*.jsonl.gz", recursive=True)):
        out += read_logs_file(f)
    return out


recs = read_logs(log_dir)
events = list(csv.DictReader(open(csv_path)))
run_text = open(run_log, errors="replace").read()

rows = []   # (check, result, detail)
ok = True


def add(check, passed, detail):
    global ok
    if passed is False:
        ok = False
    rows.append((check, "PASS" if passed else ("FAIL" if passed is False else "info"), detail))


def pct(vals, q):
    vals = sorted(vals)
    if not vals:
        return float("nan")
    k = (len(vals) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


ops = [r for r in recs if r.get("type") in ("coll", "p2p", "ce")]
comms = [r for r in recs if r.get("type") == "comm"]
stats = [r for r in recs if r.get("type") == "stats"]
add("log files", len(glob.glob(f"{log_dir}/**/*.jsonl.gz", recursive=True)) >= 1,
    f"{len(recs)} records, {len(ops)} ops, {sum(r.get('type') == 'end' for r in recs)} end")
abis = sorted({r.get("abi_version") for r in comms})
add("profiler ABI bound", abis == [expected_abi], f"comm records say v{abis}, NCCL {major}.{minor} -> v{expected_abi}")
# The comm's GPU, from the CUDA driver NCCL loaded: compared with nvidia-smi's bus ids when the run log has them.
buses = sorted({r.get("pci_bus_id", "") for r in comms})
smi_buses = {l.split()[-1].lower()[-12:] for l in run_text.splitlines() if l.startswith("nvidia-smi bus_id ")}
known = [b for b in buses if b]
add("comm GPU (pci_bus_id)", bool(known) and all(b[-12:] in smi_buses for b in known) if smi_buses else bool(known),
    f"comm records name {known or 'no GPU'}; nvidia-smi lists {sorted(smi_buses) or 'nothing'}")
bound_line = f"bound profiler ABI v{expected_abi}" in run_text
add("plugin log line", bound_line, f"'bound profiler ABI v{expected_abi}' {'seen' if bound_line else 'missing'} "
    "(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=PROFILE)" if ver >= (2, 27) else "NCCL < 2.27: no logger")
warns = [l for l in run_text.splitlines() if " NCCL WARN " in l or "NCCL Inspector: WARN" in l]
add("NCCL WARN lines", not warns, f"{len(warns)}" + (f": {warns[0][:80]}" if warns else ""))

p2p = [r for r in ops if r["type"] == "p2p" and r.get("nranks") == 1]
add("p2p records (nranks 1)", len(p2p) > 0, f"{len(p2p)} records ({sum(r['func'] == 'Send' for r in p2p)} Send, "
    f"{sum(r['func'] == 'Recv' for r in p2p)} Recv)")
# Send/recv to self: NCCL builds no proxy op for it (enqueue.cc: nProxyOps = selfSend ? 0 : 2), so no KernelCh and no
# GPU time ever comes. The plugin must complete it at its stop, enqueue-timed, without bandwidth, and not leave it
# in flight until the reclaimer or finalize takes it.
self_ok = [r for r in p2p if r.get("timing") == "enqueue_cpu" and not r.get("reclaimed") and "busbw_gbs" not in r]
add("self P2P: enqueue-timed", len(p2p) > 0 and len(self_ok) == len(p2p),
    f"{len(self_ok)}/{len(p2p)} enqueue_cpu, completed at their stop (not reclaimed), no bandwidth")
colls1 = [r for r in ops if r["type"] == "coll" and r.get("nranks") == 1]
add("nranks 1 AllReduce", not colls1, f"{len(colls1)} records (NCCL emits no events for nranks == 1)")
drops = {}
for s_ in stats:
    for k, v in (s_.get("dropped") or {}).items():
        drops[k] = max(drops.get(k, 0), v)
add("drops", all(v == 0 for v in drops.values()), json.dumps(drops) if drops else "no stats record")

# Grouped P2P (sizes 2, 4, 8, 32 MiB in one group, see nccl_check.cu): the 8 records of one ncclGroup share its
# launch group number, and each group has its own.
grouped_ev = [e for e in events if e["phase"] == "grouped"]
grouped_sizes = (2 << 20, 4 << 20, 8 << 20, 32 << 20)
by_group = {}
for r in p2p:
    if r["bytes"] in grouped_sizes:
        by_group.setdefault(r.get("group"), []).append(r)
full = [g for g, rs in by_group.items() if g is not None and len(rs) == 8]
add("grouped P2P", len(full) == len(grouped_ev) == len(by_group),
    f"{len(grouped_ev)} groups issued, {len(by_group)} launch groups in the records, {len(full)} with their 8 parts")
size_rows = []
if ngpu > 1:
    multi = [r for r in ops if r["type"] == "coll" and r.get("nranks") == ngpu]
    mgpu = [r for r in multi if r.get("timing") == "gpu"]
    funcs = sorted({r["func"] for r in multi})
    add(f"collectives on {ngpu} GPUs", len(multi) > 0 and len(mgpu) == len(multi),
        f"{len(multi)} records ({', '.join(funcs)}), {len(mgpu)} GPU-timed")
    ev_by = {}
    for e in events:
        if e["phase"] == "multi_coll" and int(e["iter"]) >= 0:
            ev_by.setdefault((e["func"], int(e["bytes"])), []).append(float(e["event_us"]))
    bad = 0
    for (f, b), ev in ev_by.items():
        pl = [float(r["dur_us"]) for r in mgpu if r["func"] == f and r["bytes"] == b]
        if pl and pct(pl, .5) > pct(ev, .5) + 2.0:
            bad += 1
        size_rows.append((f"{f} {b}", len(ev), pct(ev, .5), len(pl), pct(pl, .5) if pl else float("nan"),
                          pct(pl, .5) / pct(ev, .5) if pl else float("nan"), "ok" if pl else "no records"))
    add("collective durations", bad == 0, f"{bad} (op, size) with plugin median > event median")
else:
    add("multi-GPU collectives", None, "skipped: 1 GPU")

# --- the 2-rank communicator on one GPU --------------------------------------------------------------------------
if pair_dir:
    prun = "".join(open(f"{pair_dir}/run{r}.log", errors="replace").read() for r in (0, 1)
                   if glob.glob(f"{pair_dir}/run{r}.log"))
    failed = "pair_failed" in run_text or "pair rank 0 done" not in prun or "pair rank 1 done" not in prun
    add("2-rank run", not failed, "both ranks done" if not failed else "a rank failed: see pair/run0.log, run1.log")
    precs = read_logs(f"{pair_dir}/logs")
    pops = [r for r in precs if r.get("type") in ("coll", "p2p")]
    pcomms = [r for r in precs if r.get("type") == "comm"]
    # One comm record per process; ABI v1-v3 (NCCL <= 2.26) learn rank and size from the ops and announce the comm
    # again, so the last record per process counts.
    last = {}
    for f in sorted(glob.glob(f"{pair_dir}/logs/**/*.jsonl.gz", recursive=True)):
        for r in read_logs_file(f):
            if r.get("type") == "comm":
                last[f] = r
    ranks = sorted((r.get("rank"), r.get("nranks")) for r in last.values())
    add("2-rank comm records", ranks == [(0, 2), (1, 2)] if ver >= (2, 27) else sorted(x[0] for x in ranks) == [0, 1],
        f"{len(pcomms)} comm records, ranks {ranks}, nnodes {sorted({r.get('nnodes') for r in pcomms}, key=str)}")
    pwarns = [l for l in prun.splitlines() if " NCCL WARN " in l or "NCCL Inspector: WARN" in l]
    add("2-rank WARN lines", not pwarns, f"{len(pwarns)}" + (f": {pwarns[0][:80]}" if pwarns else ""))
    pdrops = {}
    for s_ in (r for r in precs if r.get("type") == "stats"):
        for k, v in (s_.get("dropped") or {}).items():
            pdrops[k] = max(pdrops.get(k, 0), v)
    add("2-rank drops", all(v == 0 for v in pdrops.values()), json.dumps(pdrops) if pdrops else "no stats record")
    pev = []
    for r in (0, 1):
        for e in csv.DictReader(open(f"{pair_dir}/events{r}.csv")) if glob.glob(f"{pair_dir}/events{r}.csv") else []:
            e["rank"] = r
            pev.append(e)
    gpu_expected = ver >= (2, 27)
    # Each record against the CUDA events of its own call: per rank, a function's records in seq order are its calls
    # in issue order (the CSV's order). Sends stand for their Send/Recv pair (one work item, the same stamps).
    # Phase 1 (pair_coll, pair_p2p) comes before any Send/Recv to itself: the plugin's GPU span must lie inside the
    # call's event span (+2 us). Phase 2 (pair_alltoall, pair_after) follows one: NCCL's KernelCh counters are out of
    # step, so the plugin must mark the records kernel_desync and not GPU-time them.
    selfs = [r for r in pops if r["type"] == "p2p" and r.get("peer") == r.get("rank")]
    sgood = [r for r in selfs if r.get("timing") == "enqueue_cpu" and not r.get("reclaimed")
             and not r.get("kernel_desync")]
    add("2-rank self parts", bool(selfs) and len(sgood) == len(selfs),
        f"{len(sgood)}/{len(selfs)} AlltoAll parts to/from itself enqueue_cpu, done at their stop, not reclaimed")
    over, p1_n, p1_gpu, p2_n, p2_marked, unmatched = 0, 0, 0, 0, 0, 0
    per = {}  # (rank, func, event bytes) -> [event us], [plugin us]
    for rk in (0, 1):
        evs = [e for e in pev if e["rank"] == rk]
        groups = {fn: ([r for r in pops if r["type"] == "coll" and r["func"] == fn and r["rank"] == rk],
                       [e for e in evs if e["func"] == fn]) for fn in ("AllReduce", "AllGather", "ReduceScatter")}
        groups["Send"] = ([r for r in pops if r["type"] == "p2p" and r["func"] == "Send" and r["rank"] == rk
                           and r.get("peer") != rk], [e for e in evs if e["func"] in ("SendRecv", "AlltoAll")])
        for fn, (rs, es) in groups.items():
            rs.sort(key=lambda r: r.get("seq", 0))
            if len(rs) != len(es):
                unmatched += abs(len(rs) - len(es))
            for r, e in zip(rs, es):
                ev_us, it = float(e["event_us"]), int(e["iter"])
                if e["phase"] in ("pair_coll", "pair_p2p"):
                    if it < 0:
                        continue  # warm-up: connection setup inside the event span
                    p1_n += 1
                    if r.get("timing") == "gpu" and not r.get("kernel_desync"):
                        p1_gpu += 1
                        d = float(r["dur_us"])
                        if d > ev_us + 2.0:
                            over += 1
                        row = per.setdefault((rk, fn if fn != "Send" else "SendRecv", int(e["bytes"])), ([], []))
                        row[0].append(ev_us)
                        row[1].append(d)
                else:
                    p2_n += 1
                    if r.get("kernel_desync") and r.get("timing") != "gpu":
                        p2_marked += 1
    add("2-rank records matched to calls", unmatched == 0, f"{unmatched} records or calls without a partner")
    if gpu_expected:
        add("2-rank GPU timing (before)", p1_n > 0 and p1_gpu == p1_n,
            f"{p1_gpu}/{p1_n} collective and peer Send records before any Send/Recv to itself GPU-timed")
        add("2-rank durations vs CUDA events", p1_gpu > 0 and over == 0,
            f"{over} of {p1_gpu} GPU-timed records longer than their own call's CUDA-event span + 2 us")
    else:
        add("2-rank GPU timing (before)", None, f"NCCL {major}.{minor} < 2.27 has no GPU timer")
    if ver >= (2, 26):
        add("2-rank kernel_desync (after)", p2_n > 0 and p2_marked == p2_n,
            f"{p2_marked}/{p2_n} records after the first Send/Recv to itself marked kernel_desync, CPU-timed")
    net = [r for r in pops if r.get("transport") == "network" and (r.get("net") or {}).get("proxy_ops", 0) > 0]
    peer_ops = [r for r in pops if not (r["type"] == "p2p" and r.get("peer") == r.get("rank"))]
    add("2-rank proxy events", bool(peer_ops) and len(net) == len(peer_ops),
        f"{len(net)}/{len(peer_ops)} records with transport network and proxy ops (NCCL_INSPECTOR_ENABLE_NET=1)")
    if ver >= (2, 31):
        # NCCL 2.31+ (ABI v7) with NCCL_INSPECTOR_ENABLE_PHASES=1: the kernel phases of every GPU-timed collective.
        gpu_colls = [r for r in pops if r["type"] == "coll" and r.get("timing") == "gpu"]
        with_ph = [r for r in gpu_colls if r.get("phases")]
        add("2-rank kernel phases (2.31+)", bool(gpu_colls) and len(with_ph) == len(gpu_colls),
            f"{len(with_ph)}/{len(gpu_colls)} GPU-timed collective records with phases (NCCL_INSPECTOR_ENABLE_PHASES=1)")
    for (rk, fn, b), (ev, pl) in sorted(per.items()):
        size_rows.append((f"r{rk} {fn} {b}", len(ev), pct(ev, .5), len(pl), pct(pl, .5),
                          pct(pl, .5) / pct(ev, .5) if ev else float("nan"),
                          "ok" if all(x <= y + 2.0 for x, y in zip(pl, ev)) else "plugin > events"))

print()
print("nccl-inspector GPU check")
w = max(len(r[0]) for r in rows)
print(f"{'check':<{w}}  result  detail")
for c, res, d in rows:
    print(f"{c:<{w}}  {res:<6}  {d}")
print()
print(f"{'op / bytes':<24} {'n_ev':>5} {'event_p50_us':>13} {'n_rec':>6} {'plugin_p50_us':>14} {'ratio':>6}  verdict")
for b, n_ev, ev50, n_pl, pl50, ratio, verdict in size_rows:
    label = b
    print(f"{label:<24} {n_ev:>5} {ev50:>13.1f} {n_pl:>6} {pl50:>14.1f} {ratio:>6.2f}  {verdict}")
print()
print("RESULT:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
