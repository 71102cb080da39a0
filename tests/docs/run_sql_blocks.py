#!/usr/bin/env python3
"""The DuckDB queries in the docs work as written: every fenced block whose info string is `sql duckdb` in
docs/*.md runs, statement by statement, in DuckDB (the npm package @duckdb/node-api in tests/js/node_modules,
as docs/analysis.md tells users to install it) in a fresh directory where `dump/` holds the logs of an emulated
job (nccl-emu driving the real plugin: 8 ranks, two comms with names) and `ops.csv` is `nccl-inspector export` of
them. Each statement must succeed and return at least one row; a result column named `comm_name` must hold a name, never NULL nor a hash (the join the docs
give names every op's communicator: the emulated comms have names). Exit 77 (skipped) without node or the npm package.
  run_sql_blocks.py SOURCE_DIR NCCL_EMU PLUGIN_SO NCCL_INSPECTOR"""
import glob
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
blocks = []
for doc in sorted(glob.glob(os.path.join(src, "docs", "*.md"))):
    cur, info = None, ""
    with open(doc) as f:
        for n, line in enumerate(f, 1):
            m = fence.match(line.rstrip("\n"))
            if m and cur is None:
                info, cur, start = m.group(1).strip(), [], n
            elif m and cur is not None:
                if info.split()[:2] == ["sql", "duckdb"]:
                    blocks.append((f"{os.path.basename(doc)}:{start}", "".join(cur)))
                cur = None
            elif cur is not None:
                cur.append(line)
if not blocks:
    print("no `sql duckdb` block in docs/*.md")
    sys.exit(1)

work = tempfile.mkdtemp(prefix="ni-sql-")
env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "SLURM_"))}
env.update(NCCL_INSPECTOR_DUMP_DIR=os.path.join(work, "dump"), NCCL_DEBUG="WARN")
subprocess.run([emu, "--plugin", plugin, "--nccl", "2.28", "--pace", "none", "--iters", "20", "--quiet"],
               env=env, check=True, stdout=subprocess.DEVNULL)
subprocess.run([cli, "export", "--no-progress", os.path.join(work, "dump"), "-o", os.path.join(work, "ops.csv")],
               check=True)
# ESM imports resolve from the script's directory, not NODE_PATH.
os.symlink(modules, os.path.join(work, "node_modules"))

# One statement per entry: split on ';' at line ends, drop comment-only lines.
statements = []
for where, text in blocks:
    body = "\n".join(l for l in text.splitlines() if not l.strip().startswith("--"))
    for s in re.split(r";\s*(?:\n|$)", body):
        if s.strip():
            statements.append((where, s.strip()))

runner = os.path.join(work, "run.mjs")
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
res = subprocess.run(["node", runner, json.dumps([s for _, s in statements])], cwd=work, capture_output=True,
                     text=True, env=env)
if res.returncode != 0:
    print(res.stderr)
    sys.exit(1)
results = json.loads(res.stdout)
bad = 0
for (where, stmt), r in zip(statements, results):
    first = stmt.splitlines()[0][:70]
    if "error" in r:
        print(f"FAIL {where}: {first}...: {r['error']}")
        bad += 1
        continue
    rows = r["rows"]
    nulls = sum(1 for row in rows if "comm_name" in row and (row["comm_name"] is None or
                                                           str(row["comm_name"]).startswith("0x")))
    status = "ok" if rows and not nulls else "FAIL"
    print(f"{status} {where}: {first}... -> {len(rows)} rows" + (f", {nulls} without comm_name" if nulls else ""))
    bad += status != "ok"
shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if bad else 0)
