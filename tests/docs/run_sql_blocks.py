#!/usr/bin/env python3
"""The DuckDB queries in the docs work as written: every fenced block whose info string is `sql duckdb` in
docs/*.md runs, statement by statement, in DuckDB (the npm package @duckdb/node-api in tests/js/node_modules,
as docs/analysis.md tells users to install it) in a fresh directory where `dump/` holds the logs of an emulated
job (nccl-emu driving the real plugin: 8 ranks, two comms with names) and `ops.csv` is `nccl-inspector export` of
them. Each statement must succeed and return at least one row; a result column named `comm_name` must hold a name, never NULL nor a hash (the join the docs
give names every op's communicator: the emulated comms have names).
A block whose info string is `sql duckdb summary` is the query that reproduces `nccl-inspector summary`: its
rows must be summary's `-f csv` rows, the same groups with the same count, bytes, latency and busbw percentiles
(to the CSV's 7 significant digits), on that job and on a second one (NCCL 2.30: copy-engine and API-only ops,
CPU-timed and without bandwidth, P2P, a straggler; its AlltoAll rows are summary's assembly, left out).
Exit 77 (skipped) without node or the npm package.
  run_sql_blocks.py SOURCE_DIR NCCL_EMU PLUGIN_SO NCCL_INSPECTOR"""
import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

src, emu, plugin, cli = (os.path.abspath(a) for a in sys.argv[1:5])
modules = os.path.join(src, "tests", "js", "node_modules")
if shutil.which("node") is None or not os.path.isdir(os.path.join(modules, "@duckdb", "node-api")):
    print("skipped: node or tests/js/node_modules/@duckdb/node-api missing (npm ci --prefix tests/js)")
    sys.exit(77)

fence = re.compile(r"^```(.*)$")
blocks, summary_blocks = [], []
for doc in sorted(glob.glob(os.path.join(src, "docs", "*.md"))):
    cur, info = None, ""
    with open(doc) as f:
        for n, line in enumerate(f, 1):
            m = fence.match(line.rstrip("\n"))
            if m and cur is None:
                info, cur, start = m.group(1).strip(), [], n
            elif m and cur is not None:
                if info.split()[:2] == ["sql", "duckdb"]:
                    (summary_blocks if info.split()[2:3] == ["summary"] else blocks).append(
                        (f"{os.path.basename(doc)}:{start}", "".join(cur)))
                cur = None
            elif cur is not None:
                cur.append(line)
if not blocks or not summary_blocks:
    print("no `sql duckdb` or no `sql duckdb summary` block in docs/*.md")
    sys.exit(1)

work = tempfile.mkdtemp(prefix="ni-sql-")
env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "SLURM_"))}
env.update(NCCL_DEBUG="WARN")


def emulate(where, version, workload=None):
    """An emulated job's logs in WHERE/dump; returns WHERE."""
    os.makedirs(where, exist_ok=True)
    cmd = [emu, "--plugin", plugin, "--nccl", version, "--pace", "none", "--quiet"]
    if workload is None:
        cmd += ["--iters", "20"]
    else:
        with open(os.path.join(where, "w.json"), "w") as f:
            json.dump(workload, f)
        cmd += ["--workload", os.path.join(where, "w.json")]
    subprocess.run(cmd, env=dict(env, NCCL_INSPECTOR_DUMP_DIR=os.path.join(where, "dump")), check=True,
                   stdout=subprocess.DEVNULL)
    # ESM imports resolve from the script's directory, not NODE_PATH.
    os.symlink(modules, os.path.join(where, "node_modules"))
    return where


def split(text):
    """One statement per entry: split on ';' at line ends, drop comment-only lines."""
    body = "\n".join(l for l in text.splitlines() if not l.strip().startswith("--"))
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", body) if s.strip()]


def duckdb(where, stmts):
    runner = os.path.join(where, "run.mjs")
    with open(runner, "w") as f:
        f.write("""import { DuckDBInstance } from '@duckdb/node-api';
const stmts = JSON.parse(process.argv[2]);
const con = await (await DuckDBInstance.create(':memory:')).connect();
const out = [];
for (const s of stmts) {
  try {
    const r = await con.runAndReadAll(s);
    out.push({ rows: r.getRowObjectsJson() });
  } catch (e) {
    out.push({ error: String(e) });
  }
}
console.log(JSON.stringify(out));
""")
    res = subprocess.run(["node", runner, json.dumps(stmts)], cwd=where, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        print(res.stderr)
        sys.exit(1)
    return json.loads(res.stdout)


first = emulate(os.path.join(work, "job1"), "2.28")
subprocess.run([cli, "export", "--no-progress", os.path.join(first, "dump"), "-o", os.path.join(first, "ops.csv")],
               check=True)
statements = [(where, s) for where, text in blocks for s in split(text)]
results = duckdb(first, [s for _, s in statements])
bad = 0
for (where, stmt), r in zip(statements, results):
    first_line = stmt.splitlines()[0][:70]
    if "error" in r:
        print(f"FAIL {where}: {first_line}...: {r['error']}")
        bad += 1
        continue
    rows = r["rows"]
    nulls = sum(1 for row in rows if "comm_name" in row and (row["comm_name"] is None or
                                                           str(row["comm_name"]).startswith("0x")))
    status = "ok" if rows and not nulls else "FAIL"
    print(f"{status} {where}: {first_line}... -> {len(rows)} rows" + (f", {nulls} without comm_name" if nulls else ""))
    bad += status != "ok"

# The summary query against summary itself, on the plain job and on one with every kind of timing.
second = emulate(os.path.join(work, "job2"), "2.30", {
    "world": 8, "nodes": 2, "net_profiler": "ib",
    "comms": [{"name": "tp", "nranks": 4, "layout": "contiguous", "nchannels": 4},
              {"name": "dp", "nranks": 2, "layout": "strided", "nchannels": 2}],
    "program": [{"comm": "tp", "func": "AllGather", "bytes": 4194304, "ce": True},
                {"comm": "tp", "func": "Broadcast", "bytes": 1048576, "root": 1},
                {"comm": "tp", "func": "AlltoAll", "bytes": 262144},
                {"comm": "dp", "func": "SendRecv", "bytes": 65536, "shift": 1}],
    "mix": [{"comm": "dp", "func": "AllReduce", "bytes": [131072, 16777216], "weight": 3},
            {"comm": "tp", "func": "AllReduce", "bytes": [65536, 8388608], "weight": 2},
            {"comm": "tp", "func": "Broadcast", "bytes": [1048576], "weight": 1},
            {"comm": "tp", "func": "AllGather", "bytes": [4194304], "weight": 1}],
    "iterations": 60, "truth": {"rank_skew_us": {"5": 150}}})
units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def size_lo(label):
    m = re.fullmatch(r"(\d+)([A-Za-z]+)", label)
    return int(m.group(1)) * units[m.group(2)]


def close(a, b):
    if a in ("", None) or b in ("", None):
        return a in ("", None) and b in ("", None)
    return abs(float(a) - float(b)) <= 1e-6 * max(abs(float(a)), abs(float(b))) + 1e-9


key_cols = ["comm", "op", "algo", "proto", "nranks", "nnodes", "timing"]
value_cols = ["count", "bytes", "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us", "busbw_p50_gbs",
              "busbw_p10_gbs", "busbw_min_gbs"]
for job in (first, second):
    out = subprocess.run([cli, "summary", "--no-progress", os.path.join(job, "dump"), "-f", "csv"],
                         capture_output=True, text=True, check=True).stdout
    want = {}
    for row in csv.DictReader(io.StringIO(out)):
        if row["op"] in ("AlltoAll", "Gather", "Scatter"):
            continue  # assembled by summary from Send/Recv records (docs/analysis.md)
        want[tuple(row[c] for c in key_cols) + (size_lo(row["size"]),)] = row
    timings = {k[6] for k in want}
    for where, text in summary_blocks:
        stmts = split(text)
        r = duckdb(job, stmts)[-1]
        if "error" in r:
            print(f"FAIL {where} on {os.path.basename(job)}: {r['error']}")
            bad += 1
            continue
        got = {tuple(str(row[c]) for c in key_cols) + (int(row["size_lo_bytes"]),): row for row in r["rows"]}
        missing, extra = want.keys() - got.keys(), got.keys() - want.keys()
        wrong = [(k, c, want[k][c], got[k][c]) for k in want.keys() & got.keys() for c in value_cols
                 if not close(want[k][c], got[k][c])]
        ok = not missing and not extra and not wrong and len(want) >= 10
        print(f"{'ok' if ok else 'FAIL'} {where} on {os.path.basename(job)}: {len(got)} groups vs summary's "
              f"{len(want)} (timings {sorted(timings)}), {len(wrong)} values differ")
        for k in sorted(missing)[:5]:
            print("  only in summary:", k)
        for k in sorted(extra)[:5]:
            print("  only in DuckDB:", k)
        for w in wrong[:10]:
            print("  differs:", w)
        bad += not ok
    if job == second and not {"gpu", "cpu"} <= timings:
        print(f"FAIL the second job has no CPU-timed or no GPU-timed group: {sorted(timings)}")
        bad += 1
shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if bad else 0)
