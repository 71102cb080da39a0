#!/usr/bin/python3
"""Independent summary of nccl-inspector logs with pandas (the analyzer's cross-check).

Usage: /usr/bin/python3 crosscheck.py DIR  -> JSON list of groups on stdout:
comm_hash, func, algo, proto, bucket, count, bytes, lat_p50/p90/p99/max, busbw_p50/p10/min.
Exit 77 when pandas is missing (the test skips).
"""
import glob, json, math, os, sys
try:
    import pandas as pd
except ImportError:
    sys.exit(77)

frames = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "**", "*.jsonl.gz"), recursive=True)):
    df = pd.read_json(path, lines=True, compression="gzip", dtype={"comm_hash": str})
    frames.append(df[df["type"].isin(["coll", "p2p", "ce"])])
df = pd.concat(frames, ignore_index=True)
df["algo"] = df["algo"].fillna("unknown") if "algo" in df else "unknown"
df["proto"] = df["proto"].fillna("unknown") if "proto" in df else "unknown"
df["bucket"] = df["bytes"].apply(lambda b: -1 if b <= 0 else int(b).bit_length() - 1)
out = []
for key, g in df.groupby(["comm_hash", "func", "algo", "proto", "bucket"]):
    bw = g["busbw_gbs"].dropna()
    out.append({
        "comm_hash": key[0], "func": key[1], "algo": key[2], "proto": key[3], "bucket": int(key[4]),
        "count": int(len(g)), "bytes": int(g["bytes"].sum()),
        "lat_p50": g["dur_us"].quantile(0.5), "lat_p90": g["dur_us"].quantile(0.9),
        "lat_p99": g["dur_us"].quantile(0.99), "lat_max": g["dur_us"].max(),
        "busbw_p50": bw.quantile(0.5), "busbw_p10": bw.quantile(0.1), "busbw_min": bw.min(),
    })
json.dump(out, sys.stdout)
