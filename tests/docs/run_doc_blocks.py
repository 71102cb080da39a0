#!/usr/bin/env python3
"""Every command in the docs runs as written: extracts the fenced blocks whose info string is `sh runnable`
(optionally `requires=PROGRAM`, skipped when build/bin/PROGRAM was not built) from README.md and docs/*.md and
runs them, per document in order, in one bash session in a fresh directory holding a `build` symlink to the build
tree (so `build/bin/...` and `build/lib/...` resolve exactly as in a checkout). build/bin is first on PATH and
build/lib on LD_LIBRARY_PATH; SLURM_* and NCCL_* variables of the caller are removed. A block fails the test if
any of its commands fails (bash -e, as typed at a prompt: no pipefail).
  run_doc_blocks.py SOURCE_DIR BUILD_DIR"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
fence = re.compile(r"^```(.*)$")
docs = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
total = skipped = 0
failed = []
for doc in docs:
    blocks, cur, info = [], None, ""
    with open(doc) as f:
        for n, line in enumerate(f, 1):
            m = fence.match(line.rstrip("\n"))
            if m and cur is None:
                info, cur, start = m.group(1).strip(), [], n
            elif m and cur is not None:
                words = info.split()
                if words[:2] == ["sh", "runnable"]:
                    req = [w.split("=", 1)[1] for w in words[2:] if w.startswith("requires=")]
                    blocks.append((start, "".join(cur), req))
                cur = None
            elif cur is not None:
                cur.append(line)
    if not blocks:
        continue
    work = tempfile.mkdtemp(prefix="ni-docs-")
    os.symlink(build, os.path.join(work, "build"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "NCCL_"))}
    env["PATH"] = os.path.join(build, "bin") + ":" + env.get("PATH", "/usr/bin:/bin")
    env["LD_LIBRARY_PATH"] = os.path.join(build, "lib")
    script = ["set -eu"]
    rel = os.path.relpath(doc, src)
    for start, body, req in blocks:
        total += 1
        missing = [p for p in req if not os.path.exists(os.path.join(build, "bin", p))]
        if missing:
            skipped += 1
            print(f"skip {rel}:{start}: needs build/bin/{', '.join(missing)}")
            continue
        script.append(f"echo '>>> {rel}:{start}'")
        script.append(body)
    script.append("echo '>>> done'")
    r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    out = r.stdout
    print(out[-6000:])
    if r.returncode != 0:
        last = [l for l in out.splitlines() if l.startswith(">>> ")]
        failed.append(f"{rel}: exit {r.returncode} in block {last[-1][4:] if last else '?'}")
    shutil.rmtree(work, ignore_errors=True)

if total == 0:
    print("FAIL: no `sh runnable` blocks found")
    sys.exit(1)
for f in failed:
    print("FAIL:", f)
print(f"{total} runnable blocks, {skipped} skipped, {len(failed)} documents failed")
sys.exit(1 if failed else 0)
