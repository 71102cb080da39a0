#!/usr/bin/env python3
"""Compares the NCCL Inspector plugin's records with CUDA-event timings of the same operations (written by
nccl_check.cu) and prints one summary table. Used by scripts/gpu-check.sh; exit 0 = every check passed, 1 = a
check failed.
  analyze.py LOG_DIR EVENTS_CSV RUN_LOG NCCL_VERSION_CODE NGPU"""
import csv
import glob
import gzip
import json
import statistics
import sys

log_dir, csv_path, run_log, code, ngpu = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
major, minor = (code // 10000, (code % 10000) // 100) if code >= 10000 else (code // 1000, (code % 1000) // 100)
ver = (major, minor)
expected_abi = 1 if ver <= (2, 23) else 2 if ver <= (2, 25) else 3 if ver == (2, 26) else 4 if ver == (2, 27) \
    else 5 if ver == (2, 28) else 6

recs = []
for f in sorted(glob.glob(f"{log_dir}/**/*.jsonl.gz", recursive=True)):
    with gzip.open(f, "rt") as fh:
        for line in fh:
            line = line.strip()
            if line:
                recs.append(json.loads(line))
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
gpu_timed = [r for r in p2p if r.get("timing") == "gpu"]
add("p2p records (nranks 1)", len(p2p) > 0, f"{len(p2p)} records ({sum(r['func'] == 'Send' for r in p2p)} Send, "
    f"{sum(r['func'] == 'Recv' for r in p2p)} Recv)")
if ver >= (2, 27):  # KernelCh events carry the GPU timer from NCCL 2.27 (ABI v4)
    add("GPU timing", len(p2p) > 0 and len(gpu_timed) == len(p2p), f"{len(gpu_timed)}/{len(p2p)} with timing \"gpu\"")
else:
    add("GPU timing", None, f"NCCL {major}.{minor} < 2.27 has no GPU timer; {len(gpu_timed)}/{len(p2p)} gpu")
colls1 = [r for r in ops if r["type"] == "coll" and r.get("nranks") == 1]
add("nranks 1 AllReduce", not colls1, f"{len(colls1)} records (NCCL emits no events for nranks == 1)")
drops = {}
for s in stats:
    for k, v in (s.get("dropped") or {}).items():
        drops[k] = max(drops.get(k, 0), v)
add("drops", all(v == 0 for v in drops.values()), json.dumps(drops) if drops else "no stats record")

# Durations against CUDA events. Self send/recv: the Send and the Recv record of one op run in the same kernel
# launch; the plugin's GPU span must not exceed the event span (+ 2 us for timer granularity) and, for >= 1 MiB,
# must be at least 25% of it (the rest is launch latency).
per_size = {}
for e in events:
    if e["phase"] == "sendrecv" and int(e["iter"]) >= 0:
        per_size.setdefault(int(e["bytes"]), {"ev": [], "pl": []})["ev"].append(float(e["event_us"]))
for r in gpu_timed:
    if r["bytes"] in per_size:
        per_size[r["bytes"]]["pl"].append(float(r["dur_us"]))
dur_ok = True
size_rows = []
for b in sorted(per_size):
    ev, pl = per_size[b]["ev"], per_size[b]["pl"]
    if not pl:
        dur_ok = False
        size_rows.append((b, len(ev), pct(ev, .5), 0, float("nan"), float("nan"), "no records"))
        continue
    ev50, pl50, plmax = pct(ev, .5), pct(pl, .5), max(pl)
    ratio = pl50 / ev50 if ev50 > 0 else float("nan")
    verdict = "ok"
    if pl50 > ev50 + 2.0:
        verdict, dur_ok = "plugin > events", False
    elif b >= (1 << 20) and ratio < 0.25:
        verdict, dur_ok = "plugin << events", False
    size_rows.append((b, len(ev), ev50, len(pl), pl50, ratio, verdict))
add("durations vs CUDA events", (dur_ok and bool(size_rows)) if ver >= (2, 27) else None, "median plugin GPU span <= event span, >= 25% for >= 1 MiB")

# Grouped P2P (sizes 2, 4, 8, 32 MiB in one group, see nccl_check.cu): each op's GPU span lies inside the group's
# event span.
grouped_ev = [float(e["event_us"]) for e in events if e["phase"] == "grouped" and int(e["iter"]) >= 0]
grouped_sizes = (2 << 20, 4 << 20, 8 << 20, 32 << 20)
grouped_pl = [float(r["dur_us"]) for r in gpu_timed if r["bytes"] in grouped_sizes]
if grouped_ev and grouped_pl and ver >= (2, 27):
    gev, gpl = pct(grouped_ev, .5), pct(grouped_pl, .5)
    add("grouped P2P", gpl <= gev + 2.0 and len(grouped_pl) >= 8 * len(grouped_ev) * 0.9,
        f"{len(grouped_ev)} groups, {len(grouped_pl)} records (want 8/group), record p50 {gpl:.1f} us <= group event p50 {gev:.1f} us")
else:
    add("grouped P2P", False if ver >= (2, 27) else None,
        f"{len(grouped_ev)} groups, {len(grouped_pl)} GPU-timed records of the grouped sizes")

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

print()
print("nccl-inspector GPU check")
w = max(len(r[0]) for r in rows)
print(f"{'check':<{w}}  result  detail")
for c, res, d in rows:
    print(f"{c:<{w}}  {res:<6}  {d}")
print()
print(f"{'op / bytes':<24} {'n_ev':>5} {'event_p50_us':>13} {'n_rec':>6} {'plugin_p50_us':>14} {'ratio':>6}  verdict")
for b, n_ev, ev50, n_pl, pl50, ratio, verdict in size_rows:
    label = f"SendRecv self {b}" if isinstance(b, int) else b
    print(f"{label:<24} {n_ev:>5} {ev50:>13.1f} {n_pl:>6} {pl50:>14.1f} {ratio:>6.2f}  {verdict}")
print()
print("RESULT:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
