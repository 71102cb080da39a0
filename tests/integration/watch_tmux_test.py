#!/usr/bin/env python3
"""`nccl-inspector watch` in a real terminal (tmux) against an emulated job that is still running: the screen
shows the job's process, its op count grows between screens without re-reading (ops only ever add up to what the
job wrote), names the planted late rank (world rank 5 = tp rank 1, dp rank 1 of the emulator's default job),
redraws in place, uses bold only without NO_COLOR, and Ctrl-C ends it with exit 0. Without a terminal it writes
plain screens one after another. Exit 77 (skipped) without tmux.
  watch_tmux_test.py NCCL_EMU PLUGIN_SO NCCL_INSPECTOR"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

emu, plugin, cli = (os.path.abspath(a) for a in sys.argv[1:4])
if shutil.which("tmux") is None:
    print("skipped: no tmux")
    sys.exit(77)

work = tempfile.mkdtemp(prefix="ni-watch-")
sock = os.path.join(work, "tmux.sock")
env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "SLURM_", "TMUX"))}
env.update(NCCL_DEBUG="WARN", NCCL_INSPECTOR_DUMP_DIR=os.path.join(work, "dump"),
           NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS="200000")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def tmux(*args, check_rc=True):
    return subprocess.run(["tmux", "-S", sock, *args], capture_output=True, text=True, check=check_rc, env=env)


def screen(name, escapes=False):
    return tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", name).stdout


def ops_on(text):
    m = re.search(r"\| ops ([\d,]+) \|", text)
    return int(m.group(1).replace(",", "")) if m else None


def wait_for(name, pred, limit=40):
    end = time.time() + limit
    while time.time() < end:
        s = screen(name)
        if pred(s):
            return s
        time.sleep(0.3)
    return screen(name)


# watch started before the job: it waits for the dump dir.
early = subprocess.run([cli, "watch", os.path.join(work, "dump"), "--count", "1"], capture_output=True, text=True)
check(early.returncode == 0 and "does not exist (yet)" in early.stdout, "before the job: waits for its dump dir")
# The job: the emulator's default workload, paced in real time, long enough to outlive the test.
job = subprocess.Popen([emu, "--plugin", plugin, "--nccl", "2.28", "--iters", "1000000", "--quiet"], env=env,
                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "emu.log"), "w"))
try:
    rc_file = os.path.join(work, "rc")
    for name, extra in (("color", {}), ("plain", {"NO_COLOR": "1"})):
        # The shell ignores the Ctrl-C it passes on (trap), so that it can say how watch exited.
        cmd = f"trap : INT; {cli} watch {os.path.join(work, 'dump')} --interval 1 --window 30; echo exit=$? > {rc_file}.{name}; sleep 600"
        envs = [f"{k}={v}" for k, v in extra.items()]
        tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "50",
             "env", *envs, "TERM=xterm-256color", "sh", "-c", cmd)
    first = wait_for("color", lambda s: (ops_on(s) or 0) > 0 and "LATE" in s)
    n1 = ops_on(first)
    check(n1 is not None and n1 > 0, f"the screen shows ops ({n1})")
    check("processes 1 on 1 host(s)" in first, "one emulated process on one host")
    check(re.search(r"LATE tp \(0x[0-9a-f]+\) rank 1 ", first) is not None, "the planted late rank: tp rank 1")
    check("dropped by the plugin 0" in first, "no drops")
    # The next redraw comes after one poll, which under a sanitizer can take several intervals.
    second = wait_for("color", lambda s: (ops_on(s) or 0) > n1)
    n2 = ops_on(second)
    check(n2 is not None and n2 > n1, f"ops grow while the job runs ({n1} -> {n2})")
    check(second.count("nccl-inspector watch") == 1, "redrawn in place: one screen in the pane")
    check("\x1b[1m" in screen("color", escapes=True), "bold headings in a terminal")
    plain = wait_for("plain", lambda s: (ops_on(s) or 0) > 0)
    check("\x1b[1m" not in screen("plain", escapes=True) and ops_on(plain), "NO_COLOR: no escapes, same screen")
    # Ctrl-C: a clean exit.
    for name in ("color", "plain"):
        tmux("send-keys", "-t", name, "C-c")
    for name in ("color", "plain"):
        end = time.time() + 10
        while not os.path.exists(f"{rc_file}.{name}") and time.time() < end:
            time.sleep(0.1)
        rc = open(f"{rc_file}.{name}").read().strip() if os.path.exists(f"{rc_file}.{name}") else "no exit"
        check(rc == "exit=0", f"Ctrl-C ends watch ({name}) with exit 0: {rc}")
finally:
    tmux("kill-server", check_rc=False)
    job.send_signal(signal.SIGTERM)
    try:
        job.wait(timeout=20)
    except subprocess.TimeoutExpired:
        job.kill()

# Not a terminal (the job stopped, so that a sanitizer build's slow reader is not racing it): screens one after
# another, no escapes, counts never going back.
out = subprocess.run([cli, "watch", os.path.join(work, "dump"), "--interval", "0.5", "--count", "3", "--window", "10"],
                     capture_output=True, text=True, env=env, timeout=400)
counts = [int(x.replace(",", "")) for x in re.findall(r"\| ops ([\d,]+) \|", out.stdout)]
check(out.returncode == 0 and len(counts) == 3 and "\x1b" not in out.stdout,
      f"piped: 3 plain screens, exit 0 ({counts}, rc {out.returncode})")
check(counts == sorted(counts), "counts never go back")
# After the job: the followed total equals a full read of the same logs. One poll reads for at most one interval
# (then the screen says how far behind it is); a long interval lets a sanitizer build read the whole job in one.
out = subprocess.run([cli, "watch", os.path.join(work, "dump"), "--count", "1", "--interval", "3600"],
                     capture_output=True, text=True)
summ = subprocess.run([cli, "export", "--no-progress", os.path.join(work, "dump"), "-f", "jsonl", "-o", "-"],
                      capture_output=True, text=True)
watched, exported = ops_on(out.stdout), summ.stdout.count("\n")
check(watched == exported and exported > 0, f"watch read every op once: {watched} vs export's {exported}")
if failures:
    print(f"{len(failures)} failed; kept {work}")
    sys.exit(1)
shutil.rmtree(work, ignore_errors=True)
