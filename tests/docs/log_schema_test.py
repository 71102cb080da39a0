#!/usr/bin/env python3
"""docs/log-format.schema.json is the log format, checked four ways:

1. it is a valid JSON Schema (draft 2020-12), and its value lists (functions, datatypes, algorithms, protocols,
   timings, transports, kinds) and its stats counters are exactly those of include/nccl_inspector/names.h and
   counters.h;
2. every example line of docs/log-format.md validates (docs_test.cpp checks they are the encoder's real lines);
3. the logs the real plugin writes for emulated jobs of every supported NCCL release validate, line by line, and
   those jobs between them write every record type and every optional part (network, HCAs, verbose channel
   times, graph, reclaimed, partial, kernel_desync, user tags (2.31+), marks, tag names, progress and alive lines), so no part
   of the schema goes untested;
4. the schema rejects what the format forbids (an unknown field, a missing one, a CPU-timed bandwidth, a
   number-typed comm hash, an unknown function).

Usage: log_schema_test.py <source dir> <nccl-emu> <plugin .so>. Exit 77 (skip) without python3-jsonschema.
"""
import copy
import glob
import gzip
import json
import os
import shutil
import re
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (scripts/setup-deps.sh installs it)")
    sys.exit(77)

src, emu, plugin = (os.path.abspath(a) for a in sys.argv[1:4])
failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 40:
        print("FAIL:", msg)


with open(os.path.join(src, "docs/log-format.schema.json")) as f:
    schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
defs = schema["$defs"]


def errors(record):
    return [f"{'/'.join(map(str, e.absolute_path)) or '(record)'}: {e.message}" for e in validator.iter_errors(record)]


# ---- 1. the value lists and counters are the code's
def cpp_strings(header, name):
    text = open(os.path.join(src, header)).read()
    m = re.search(r"\b" + name + r"\[\]\s*=\s*\{(.*?)\};", text, re.S)
    if not m:
        fail(f"{header}: no {name}[]")
        return []
    return re.findall(r'\{?"([^"]*)"', m.group(1))


names_h = "include/nccl_inspector/names.h"
dtypes = re.findall(r'\{"([a-z0-9]+)", "nccl', open(os.path.join(src, names_h)).read())
expected = {
    "func": cpp_strings(names_h, "kFunc") + ["Unknown"],
    "dtype": dtypes + ["unknown"],
    "algo": cpp_strings(names_h, "kAlgo") + ["unknown"],
    "proto": cpp_strings(names_h, "kProto") + ["unknown"],
    "timing": cpp_strings(names_h, "kTiming"),
    "transport": cpp_strings(names_h, "kTransport"),
    "kind": cpp_strings(names_h, "kKind"),
}
for key, values in expected.items():
    if sorted(defs[key]["enum"]) != sorted(values) or not values:
        fail(f"$defs/{key} is {defs[key]['enum']}, the code's names are {values}")

counters = re.findall(r'X\(\s*\w+,\s*"(\w+)",\s*(k\w+),', open(os.path.join(src, "include/nccl_inspector/counters.h")).read())
if len(counters) < 10:
    fail(f"counters.h: read only {len(counters)} counters")
stats = defs["stats"]["properties"]
groups = {"kDropped": "dropped", "kFiltered": "filtered", "kFaults": "faults"}
for key, group in counters:
    where = stats[groups[group]]["properties"] if group in groups else stats
    if key not in where:
        fail(f"stats counter {key} ({group}) is not in the schema")
for group in groups.values():
    listed = set(stats[group]["properties"])
    coded = {k for k, g in counters if groups.get(g) == group}
    if listed != coded or set(stats[group]["required"]) != coded:
        fail(f"stats.{group}: schema {sorted(listed)}, counters.h {sorted(coded)}")
top = {k for k, g in counters if g == "kTop"}
if set(stats) - {"type", "wall_ns"} - set(groups.values()) != top:
    fail(f"stats top-level: schema {sorted(set(stats))}, counters.h {sorted(top)}")

# ---- 2. the examples of docs/log-format.md
doc = open(os.path.join(src, "docs/log-format.md")).read()
examples = 0
for block in re.findall(r"```json\n(.*?)```", doc, re.S):
    for line in block.splitlines():
        if not line.strip():
            continue
        examples += 1
        rec = json.loads(line)
        for e in errors(rec):
            fail(f"docs/log-format.md example {rec.get('type')}: {e}")
if examples < 12:
    fail(f"docs/log-format.md: only {examples} example lines found")

# ---- 3. emulated jobs, every release, validated line by line
WORKLOAD = {
    "world": 8, "nodes": 2, "net_profiler": "ib",
    "comms": [{"name": "tp", "nranks": 4, "layout": "contiguous", "nchannels": 4},
              {"name": "dp", "nranks": 2, "layout": "strided", "nchannels": 2}],
    "program": [
        {"comm": "tp", "func": "AllReduce", "bytes": 1048576, "tag": 4611686018427387905},
        {"comm": "tp", "func": "AllReduce", "bytes": 1048576, "kernel_variant": "AllReduce_RSxLD_AGxST"},
        {"group": [{"comm": "tp", "func": "AllGather", "bytes": 262144, "kernel_variant": "AllGather_STMC"},
                   {"comm": "tp", "func": "AllGather", "bytes": 262144, "kernel_variant": "AllGather_STMC"}]},
        {"comm": "tp", "func": "Broadcast", "bytes": 262144, "tag": 3},
        {"comm": "dp", "func": "SendRecv", "bytes": 1048576, "shift": 1},
        {"comm": "tp", "func": "AllGather", "bytes": 4194304, "ce": True, "tag": 1},
        {"comm": "tp", "func": "AllReduce", "bytes": 8388608, "graph_replays": 2},
        {"comm": "dp", "func": "AlltoAll", "bytes": 65536, "tag": 2},
    ],
    "mix": [{"comm": "tp", "func": "AllReduce", "dtype": "ncclBfloat16", "bytes": [65536, 4194304], "weight": 2},
            {"comm": "dp", "func": "ReduceScatter", "dtype": "ncclFloat32", "bytes": [1048576], "weight": 1}],
    "iterations": 12, "mark_every": 4,
    "tag_names": {"2": "dp send/recv", "3": "tp broadcast"},
}
# The hang is planted in the first op of dp, which spans the two nodes (its stuck op has network steps).
HANG_WORKLOAD = dict(WORKLOAD, program=[{"comm": "dp", "func": "AllReduce", "bytes": 4194304}] + WORKLOAD["program"])
del HANG_WORKLOAD["mark_every"]
RELEASES = ["2.23", "2.24", "2.25", "2.26", "2.27", "2.28", "2.29", "2.30", "2.31", "2.32"]

seen_types, seen_parts, lines_checked = set(), set(), 0
temp_dirs = []
PARTS = ["api_only", "kernel_desync", "user_tag", "sym", "kernel_variant", "sym_plan_tasks", "phases", "phases.initial_sync", "group", "net", "hcas", "ch_times", "ch_slow", "root", "graph", "reclaimed", "partial", "algbw_gbs", "instance",
         "stuck", "stuck.net", "api_issued", "job.global_rank"]


def note_parts(rec):
    for part in PARTS:
        head, _, sub = part.partition(".")
        if head in rec and (not sub or (isinstance(rec[head], dict) and sub in rec[head])):
            seen_parts.add(part)
    if rec.get("type") == "progress" and rec["stuck"]:
        seen_parts.add("stuck")
        if any("net" in s for s in rec["stuck"]):
            seen_parts.add("stuck.net")


def check_logs(label, logdir):
    global lines_checked
    files = sorted(glob.glob(os.path.join(logdir, "*.jsonl.gz")))
    if not files:
        fail(f"{label}: no log written in {logdir}")
    for path in files:
        with gzip.open(path, "rt") as f:
            for n, line in enumerate(f, 1):
                rec = json.loads(line)
                lines_checked += 1
                seen_types.add(rec.get("type"))
                note_parts(rec)
                errs = errors(rec)
                if errs:
                    fail(f"{label} {os.path.basename(path)}:{n} ({rec.get('type')}): " + "; ".join(errs[:3]))


def run(label, release, workload, extra_env, args=(), expect_rc=0):
    d = tempfile.mkdtemp(prefix="ni-schema-")
    temp_dirs.append(d)
    wl = os.path.join(d, "workload.json")
    with open(wl, "w") as f:
        json.dump(workload, f)
    env = dict(os.environ, NCCL_INSPECTOR_DUMP_DIR=os.path.join(d, "logs"), NCCL_DEBUG="WARN",
               NCCL_INSPECTOR_ENABLE_NET="1", RANK="0", **extra_env)
    p = subprocess.run([emu, "--nccl", release, "--plugin", plugin, "--workload", wl, "--pace", "none", "--quiet",
                        *args], env=env, capture_output=True, text=True, timeout=240)
    if p.returncode != expect_rc:
        fail(f"{label}: nccl-emu exited {p.returncode}: {p.stderr[-2000:]}")
        return
    check_logs(label, os.path.join(d, "logs"))


for i, rel in enumerate(RELEASES):
    # Default lines on half the releases, verbose ones (max_ch_us, ch_busy_us, ch_times) on the other half.
    # Kernel phases asked for everywhere: only 2.31+ sends them.
    run(f"nccl {rel}", rel, WORKLOAD, {"NCCL_INSPECTOR_DUMP_VERBOSE": str(i % 2), "NCCL_INSPECTOR_ENABLE_PHASES": "1"})
# A hang held past HANG_MS and OP_TIMEOUT_MS: progress lines with stuck ops, alive lines, reclaimed records.
for rel in ["2.26", "2.30"]:
    hang = {"kind": "recv_stuck", "world_rank": 5, "comm": "dp", "at_op": 0, "hold_ms": 1500, "end": "exit"}
    run(f"nccl {rel} hang", rel, HANG_WORKLOAD,
        {"NCCL_INSPECTOR_HANG_MS": "150", "NCCL_INSPECTOR_OP_TIMEOUT_MS": "500"}, ["--hang", json.dumps(hang)])
# A kernel channel that never stops: partial records.
run("nccl 2.28 kernelch-never-stopped", "2.28", HANG_WORKLOAD, {"NCCL_INSPECTOR_OP_TIMEOUT_MS": "10"},
    ["--fault", "kernelch-never-stopped"])

all_types = set(schema["properties"]["type"]["enum"])
if seen_types != all_types:
    fail(f"the emulated jobs wrote types {sorted(seen_types)}; the schema has {sorted(all_types)} "
         f"(missing: {sorted(all_types - seen_types)})")
missing = [p for p in PARTS if p not in seen_parts]
if missing:
    fail(f"no emulated record had {missing}: that part of the schema went unchecked")

# ---- 4. what the schema must reject
coll = next(json.loads(l) for b in re.findall(r"```json\n(.*?)```", doc, re.S) for l in b.splitlines()
            if l.startswith('{"type":"coll"'))
def api_only(r, keep_issue_off=False):
    """The example coll made an API-only record (valid unless it keeps its issue_off)."""
    for k in ["channels", "algbw_gbs", "busbw_gbs", "ch_util", "ch_balance", "ch_slow"] + ([] if keep_issue_off else ["issue_off"]):
        r.pop(k, None)
    r.update(api_only=True, timing="enqueue_cpu")


ok = copy.deepcopy(coll)
ok.update(sym=True, algo="AGxLL_R", proto="", kernel_variant="AllReduce_AGxLL_R")
if errors(ok):
    fail(f"a symmetric-kernel coll record does not validate: {errors(ok)}")
ok = copy.deepcopy(coll)
api_only(ok)
if errors(ok):
    fail(f"an API-only coll record does not validate: {errors(ok)}")
bad = {
    "an unknown field": lambda r: r.update(new_field=1),
    "no timing": lambda r: r.pop("timing"),
    "a CPU-timed bandwidth": lambda r: r.update(timing="enqueue_cpu"),
    "a number-typed comm hash": lambda r: r.update(comm_hash=4551),
    "an unknown function": lambda r: r.update(func="AllReduceX"),
    "ch_util above 1": lambda r: r.update(ch_util=1.5),
    "a p2p field on a coll": lambda r: r.update(peer=3),
    "api_only with an issue_off": lambda r: api_only(r, keep_issue_off=True),
    "an upper-case comm hash": lambda r: r.update(comm_hash=r["comm_hash"].upper().replace("0X", "0x")),
    "an empty proto without sym": lambda r: r.update(proto=""),
    "a kernel_variant without sym": lambda r: r.update(kernel_variant="AllReduce_AGxLL_R"),
    "a symmetric kernel with a proto": lambda r: r.update(sym=True, algo="AGxLL_R", kernel_variant="AllReduce_AGxLL_R"),
    "an unknown phase": lambda r: r.update(phases={"warmup": [1, 1, 1, 1]}),
    "a phase without its channel count": lambda r: r.update(phases={"compute": [1, 1, 1]}),
    "empty phases": lambda r: r.update(phases={}),
}
if errors(coll):
    fail(f"the example coll record does not validate: {errors(coll)}")
for what, mutate in bad.items():
    r = copy.deepcopy(coll)
    mutate(r)
    if not errors(r):
        fail(f"the schema accepts a coll record with {what}")
for rec, what in [({"type": "stats", "wall_ns": 1}, "a stats record without counters"),
                  ({"type": "mark", "wall_ns": 1, "label": "x", "rank": 0}, "a mark with a rank"),
                  ({"type": "what"}, "an unknown type"), ({"wall_ns": 1}, "a line without type")]:
    if not errors(rec):
        fail(f"the schema accepts {what}")

for d in temp_dirs:
    shutil.rmtree(d, ignore_errors=True)
print(f"{examples} doc examples, {lines_checked} emulated log lines of {len(RELEASES)} releases; "
      f"types {sorted(seen_types)}; parts {sorted(seen_parts)}")
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("OK")
