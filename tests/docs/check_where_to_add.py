#!/usr/bin/env python3
"""Keeps docs/architecture.md's "Where to add" table true.

Usage: check_where_to_add.py SOURCE_DIR [DOC]   (DOC: default SOURCE_DIR/docs/architecture.md)

The table is the first markdown table under the "## Where to add" heading, with the columns
`| what | create | register in |`. In the "create" and "register in" cells, a backticked token that contains
a "/" is a path from SOURCE_DIR and must exist; a path with a <placeholder> component (a file to create, e.g.
`src/analysis/<name>.cpp`) must have an existing directory before its first placeholder. A backticked token
without a "/" in a "register in" cell is a symbol and must occur in that cell's (concrete) file. Exit 0 when
everything holds, 1 with one line per problem otherwise (a missing or malformed table too), 2 on a usage error.
"""
import re
import sys
from pathlib import Path

COLUMNS = ["what", "create", "register in"]


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def find_table(text):
    m = re.search(r"^## Where to add[ \t]*$", text, re.M)
    if not m:
        return None, "no '## Where to add' heading"
    rows, started = [], False
    for line in text[m.end():].splitlines():
        if line.startswith("## "):
            break
        if line.lstrip().startswith("|"):
            started = True
            rows.append(line)
        elif started:
            break
    if len(rows) < 3:
        return None, "no table under '## Where to add'"
    header = [c.lower() for c in cells(rows[0])]
    if header != COLUMNS:
        return None, f"table header is {header}, expected {COLUMNS}"
    if not all(re.fullmatch(r":?-+:?", c) for c in cells(rows[1])):
        return None, "the table's second line is not a separator"
    return [cells(r) for r in rows[2:]], None


def check_path(root, token):
    """Returns the problem with a path token, or None."""
    parts = token.split("/")
    if any("<" in p for p in parts):
        prefix = parts[: next(i for i, p in enumerate(parts) if "<" in p)]
        d = root.joinpath(*prefix) if prefix else root
        return None if d.is_dir() else f"directory '{'/'.join(prefix)}' of pattern '{token}' does not exist"
    return None if (root / token).exists() else f"'{token}' does not exist"


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = Path(argv[1])
    doc = Path(argv[2]) if len(argv) == 3 else root / "docs/architecture.md"
    try:
        text = doc.read_text(encoding="utf-8")
    except OSError as e:
        print(f"check_where_to_add: cannot read {doc}: {e}", file=sys.stderr)
        return 2
    rows, err = find_table(text)
    if err:
        print(f"{doc}: the 'Where to add' table cannot be checked: {err}", file=sys.stderr)
        return 1

    problems = []
    for row in rows:
        if len(row) != len(COLUMNS):
            problems.append(f"row {row!r}: {len(row)} cells, expected {len(COLUMNS)}")
            continue
        what, create, register = row
        for column, cell in (("create", create), ("register in", register)):
            tokens = re.findall(r"`([^`]+)`", cell)
            paths = [t for t in tokens if "/" in t]
            symbols = [t for t in tokens if "/" not in t]
            if column == "create" and not tokens and cell.strip().lower() != "none":
                problems.append(f"'{what}': create is neither a backticked path nor 'none': {cell!r}")
            if column == "register in" and not paths:
                problems.append(f"'{what}': register in names no backticked path: {cell!r}")
            for p in paths:
                why = check_path(root, p)
                if why:
                    problems.append(f"'{what}' ({column}): {why}")
            if column == "register in" and symbols:
                files = [root / p for p in paths if "<" not in p and (root / p).is_file()]
                texts = [f.read_text(encoding="utf-8", errors="replace") for f in files]
                for s in symbols:
                    if not files:
                        problems.append(f"'{what}': symbol '{s}' has no existing file to be found in")
                    elif not any(re.search(r"(?<![A-Za-z0-9_])" + re.escape(s) + r"(?![A-Za-z0-9_])", t)
                                 for t in texts):
                        names = ", ".join(str(f.relative_to(root)) for f in files)
                        problems.append(f"'{what}' (register in): symbol '{s}' does not occur in {names}")

    if problems:
        print(f"{doc}: the 'Where to add' table is out of date:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    print(f"{doc}: 'Where to add': {len(rows)} rows, every path and symbol found")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
