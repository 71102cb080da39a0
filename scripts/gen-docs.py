#!/usr/bin/env python3
"""Regenerates the generated parts of docs/ from a build:
docs/configuration.md's settings table and docs/log-format.md's example lines.
Usage: scripts/gen-docs.py [BUILD_DIR]  (default build). tests/output/docs_test
fails when they are stale."""
import re, subprocess, sys, pathlib

root = pathlib.Path(__file__).resolve().parent.parent
build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else root / "build")
tool = build / "tests/output/log_examples"

table = subprocess.run([str(tool), "--settings-table"], check=True, capture_output=True, text=True).stdout
conf = root / "docs/configuration.md"
text = conf.read_text()
text = re.sub(r"(<!-- settings-table[^\n]*-->\n).*?(<!-- /settings-table -->)",
              lambda m: m.group(1) + table + m.group(2), text, flags=re.S)
conf.write_text(text)

out = subprocess.run([str(tool)], check=True, capture_output=True, text=True).stdout
examples = [blk.split("\n", 1)[1].strip() for blk in out.strip().split("\n\n")]
fmt = root / "docs/log-format.md"
lines = fmt.read_text().split("\n")
idx = [i for i, l in enumerate(lines) if l.startswith('{"type"')]
if len(idx) != len(examples):
    sys.exit(f"log-format.md has {len(idx)} example lines, the encoder gives {len(examples)}")
for i, ex in zip(idx, examples):
    lines[i] = ex
fmt.write_text("\n".join(lines))
print("docs regenerated")
