#!/usr/bin/env python3
"""Pipes and stdin: every subcommand reads a log from `-` (stdin), gzip or plain, and prints what it prints for the
same log given as a file (the file's name aside); /dev/stdin, a FIFO and process substitution read the same;
`-o -` writes the trace, the report and the tables to stdout, byte for byte what `-o FILE` writes; the same
stream named twice is a clear error.

Usage: stdin_test.py <nccl-emu> <plugin .so> <nccl-inspector>
"""
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

emu, plugin, cli = (os.path.abspath(a) for a in sys.argv[1:4])
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


work = tempfile.mkdtemp(prefix="ni-stdin-")
workload = {
    "world": 8, "nodes": 2,
    "comms": [{"name": "tp", "nranks": 4, "layout": "contiguous", "nchannels": 4},
              {"name": "dp", "nranks": 2, "layout": "strided", "nchannels": 2}],
    "mix": [{"comm": "tp", "func": "AllReduce", "dtype": "ncclBfloat16", "bytes": [65536, 4194304], "weight": 2},
            {"comm": "dp", "func": "AllReduce", "dtype": "ncclFloat32", "bytes": [1048576], "weight": 1}],
    "iterations": 24, "mark_every": 4,
    "truth": {"rank_skew_us": {"5": 80}},
}
with open(os.path.join(work, "workload.json"), "w") as f:
    json.dump(workload, f)
env = dict(os.environ, NCCL_INSPECTOR_DUMP_DIR=os.path.join(work, "logs"), NCCL_DEBUG="WARN")
subprocess.run([emu, "--plugin", plugin, "--nccl", "2.30", "--workload", os.path.join(work, "workload.json"),
                "--pace", "none", "--quiet"], env=env, check=True, capture_output=True)
logs = glob.glob(os.path.join(work, "logs", "*.jsonl.gz"))
assert len(logs) == 1, logs
log = logs[0]
data = open(log, "rb").read()
plain = gzip.decompress(data)
plain_log = os.path.join(work, "plain.jsonl")  # the same log uncompressed (the health section tells the sizes)
with open(plain_log, "wb") as f:
    f.write(plain)


def run(args, stdin=None, shell=False):
    p = subprocess.run(args if shell else [cli] + args, input=stdin, capture_output=True, shell=shell,
                       executable="/bin/bash" if shell else None, cwd=work, timeout=300)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def same_as_file(what, args_file, args_stream, stdin, name, path=log):
    rc1, out1, err1 = run(args_file)
    rc2, out2, err2 = run(args_stream, stdin)
    out1 = out1.replace(path.encode(), name.encode()).replace(os.path.dirname(path).encode(), name.encode())
    if rc1 != rc2:
        fail(f"{what}: exit {rc2} from the stream, {rc1} from the file; stderr: {err2[-500:]}")
    elif out1 != out2:
        fail(f"{what}: output differs ({len(out2)} bytes from the stream, {len(out1)} from the file)")
    elif not out2 and what.split()[0] not in ("trace", "report"):
        fail(f"{what}: no output")
    return out2


# Tables with the file's name in a column are compared as csv (a table pads the column to the name).
subcommands = [["summary"], ["validate", "-f", "csv"], ["export"], ["export", "-f", "jsonl"], ["stragglers"], ["anomalies"],
               ["iterations"], ["hangs"], ["summary", "-f", "json"]]
for sub in subcommands:
    same_as_file(" ".join(sub) + " -", sub + [log], sub + ["-"], data, "-")
    same_as_file(" ".join(sub) + " - (plain text)", sub + [plain_log], sub + ["-"], plain, "-", plain_log)
same_as_file("compare LOG -", ["compare", log, log], ["compare", log, "-"], data, "-")
same_as_file("summary /dev/stdin", ["summary", log], ["summary", "/dev/stdin"], data, "/dev/stdin")

# Several processes' logs concatenated into one stream (`cat logs/*.gz | nccl-inspector X -`, and the same
# uncompressed): read as the files they were, each op with its own host and process, so every subcommand prints
# what it prints for the directory (the inputs' names aside).
job = os.path.join(work, "job")
env2 = dict(env, NCCL_INSPECTOR_DUMP_DIR=os.path.join(job, "logs"))
start_at = str(time.time_ns() + 300_000_000)
procs = [subprocess.Popen([emu, "--plugin", plugin, "--nccl", "2.30", "--workload", os.path.join(work, "workload.json"),
                           "--world", "8", "--ranks", ranks, "--seed", "7", "--start-at", start_at, "--pace", "none",
                           "--quiet"],
                          env=dict(env2, NCCL_INSPECTOR_HOSTNAME=host), stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL) for ranks, host in (("0-3", "node0"), ("4-7", "node1"))]
for p in procs:
    if p.wait(timeout=300) != 0:
        fail(f"the two-process job: nccl-emu exit {p.returncode}")
job_logs = sorted(glob.glob(os.path.join(job, "logs", "*.jsonl.gz")))
if len(job_logs) != 2:
    fail(f"the two-process job wrote {len(job_logs)} logs")
else:
    cat = b"".join(open(f, "rb").read() for f in job_logs)
    zcat = b"".join(gzip.decompress(open(f, "rb").read()) for f in job_logs)

    def names_out(out, names):
        for path, name in names:
            out = out.replace(path.encode(), name.encode())
        return out

    as_stream = [(job_logs[0], "-"), (job_logs[1], "- (log 2)"), (os.path.dirname(job_logs[0]), "-")]
    for sub in [["summary"], ["summary", "-f", "json"], ["stragglers"], ["stragglers", "-f", "json"], ["anomalies"],
                ["iterations"], ["hangs"], ["export", "-f", "jsonl"], ["validate", "-f", "csv"]]:
        rc1, out1, err1 = run(sub + [os.path.join(job, "logs")])
        for what, stream in (("gzip", cat), ("plain", zcat)):
            if what == "plain" and sub[0] == "summary":
                continue  # its health section tells the bytes on disk
            rc2, out2, err2 = run(sub + ["-"], stream)
            want = names_out(out1, as_stream)
            if sub[0] == "export":  # rows in the order the reader threads give them: several files, any order
                want, out2 = (b"\n".join(sorted(x.split(b"\n"))) for x in (want, out2))
            if rc1 != rc2 or want != out2 or not out2:
                a, b = want.decode(errors="replace").split("\n"), out2.decode(errors="replace").split("\n")
                k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                fail(f"{' '.join(sub)} of two concatenated logs ({what}): exit {rc2} (directory {rc1}), line {k + 1}: "
                     f"{a[k] if k < len(a) else '(none)'!r} from the directory, {b[k] if k < len(b) else '(none)'!r} "
                     f"from the stream; stderr {err2[-300:]}")
    rc, out, err = run(["stragglers", "-"], cat)
    if b"node0" not in out or b"node1" not in out:
        fail(f"stragglers of two concatenated logs names one host only: {out[-400:]!r}")

# -o -: what -o FILE writes, to stdout.
for sub, out_name in [(["trace"], "t.json"), (["report"], "r.html"), (["summary", "-f", "csv"], "s.csv"),
                      (["export"], "e.csv")]:
    rc, out, err = run(sub + [log, "-o", out_name])
    rc2, out2, err2 = run(sub + [log, "-o", "-"])
    written = open(os.path.join(work, out_name), "rb").read()
    if rc != 0 or rc2 != 0:
        fail(f"{' '.join(sub)} -o: exit {rc} / {rc2}: {err2[-500:]}")
    elif out2 != written or not written:
        fail(f"{' '.join(sub)} -o -: {len(out2)} bytes on stdout, {len(written)} in the file")
    elif os.path.exists(os.path.join(work, "-")):
        fail(f"{' '.join(sub)} -o -: created a file named '-'")
# The trace read from a pipe and written to one.
rc, out, err = run(["trace", "-", "-o", "-"], data)
if rc != 0 or json.loads(out).get("traceEvents") is None:
    fail(f"trace - -o -: exit {rc}, {len(out)} bytes: {err[-300:]}")

# A FIFO, and bash process substitution.
fifo = os.path.join(work, "fifo")
os.mkfifo(fifo)
writer = threading.Thread(target=lambda: open(fifo, "wb").write(data), daemon=True)
writer.start()
same_as_file("summary FIFO", ["summary", log], ["summary", fifo], None, fifo)
writer.join(timeout=60)
if writer.is_alive():  # the CLI never read the FIFO: unblock the writer
    fail("summary FIFO: the FIFO was never read")
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
rc, out, err = run(f"'{cli}' stragglers <(cat '{log}')", shell=True)
rc1, out1, _ = run(["stragglers", log])
if rc != rc1 or out != out1:
    fail(f"stragglers <(cat LOG): exit {rc}, output {'same' if out == out1 else 'differs'}: {err[-300:]}")

# The same stream twice (by name, across the two inputs of compare, or under two names): an error that says
# so, never a stream compared with itself or an empty second copy.
for args, why in [(["summary", "-", "-"], "given twice"), (["compare", "-", "-"], "given twice"),
                  (["summary", "-", "/dev/stdin"], "already given")]:
    rc, out, err = run(args, data)
    if rc != 2 or why not in err:
        fail(f"{' '.join(args)}: exit {rc}, stderr {err.strip()!r}")
# A failing `trace -o -` leaves a file named "-" alone.
with open(os.path.join(work, "-"), "w") as f:
    f.write("keep")
rc, out, err = run(["trace", "-", "-o", "-"], b"")
if rc == 0 or open(os.path.join(work, "-")).read() != "keep":
    fail(f"trace of an empty stream -o -: exit {rc}; the file named '-' was touched")
os.remove(os.path.join(work, "-"))
# watch follows files that grow; a stream cannot be followed: said, exit 2.
rc, out, err = run(["watch", "-", "--count", "1"], data)
if rc != 2 or "stdin cannot be followed" not in err:
    fail(f"watch -: exit {rc}, stderr {err.strip()!r}")
# An empty stream: no op records, a clear message, exit 2 (as for an empty file).
rc, out, err = run(["summary", "-"], b"")
if rc != 2 or "no op records" not in err:
    fail(f"summary - < /dev/null: exit {rc}, stderr {err.strip()!r}")

shutil.rmtree(work, ignore_errors=True)
print(f"{len(subcommands)} subcommands from stdin (gzip and plain), compare, /dev/stdin, FIFO, <(...), -o - x 4")
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("OK")
