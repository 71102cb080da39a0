"""nccl-inspector's logs and analyses as pandas DataFrames.

    from nccl_inspector import LogProcessor
    lp = LogProcessor("/shared/nccl-logs/1234")      # dump dirs, log files, or a list of them
    ops = lp.ops()                                    # one row per op record
    lp.summary(); lp.stragglers(); lp.anomalies(); lp.hangs()

The numbers are those of the `nccl-inspector` command (the same C++ reader and analyses, docs/analysis.md);
docs/python.md has the columns and an example.
"""
import os

import pandas as pd

from . import _core

__version__ = _core.__version__
__all__ = ["LogProcessor", "__version__"]

_CATEGORIES = ["host", "kind", "comm_hash", "comm_name", "comm_role", "func", "algo", "proto", "timing", "transport",
               "tag_name"]


class LogProcessor:
    """The op records of one job (or several): `paths` is a dump directory, a log file, or a list of them."""

    def __init__(self, paths, threads=0):
        if isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        self.paths = [os.fsdecode(p) for p in paths]
        self.threads = threads
        self._ops = None

    def ops(self):
        """One row per op record (as `nccl-inspector export`, with more columns): times as int64 nanoseconds
        (`start_wall_ns`, 0 where `has_start` is False), durations in microseconds, bandwidths in GB/s (NaN where
        the op's time is the CPU's: `timing`), the network and per-HCA detail flattened into columns
        (`net_send_bytes`, `hca_<dev>_bytes`, `hca_<dev>_wire_us`), op/algo/proto/comm as categoricals, and
        `comm_role`: nvlink_only (one node), network_only (one rank per node), mixed, single_rank."""
        if self._ops is None:
            r = _core.read_ops(self.paths, self.threads)
            df = pd.DataFrame(r["columns"])
            for c in _CATEGORIES:
                df[c] = df[c].astype("category")
            df["file"] = pd.Categorical.from_codes(df["file"], categories=r["files"])
            df.attrs["bad_lines"] = r["bad_lines"]
            df.attrs["truncated_files"] = r["truncated_files"]
            df.attrs["no_duration"] = r["no_duration"]
            self._ops = df
        return self._ops.copy()

    def tables(self, analysis, **options):
        """Every result table of an analysis (a `nccl-inspector` subcommand that reads logs: summary, validate,
        stragglers, anomalies, iterations, hangs), by table name; options as the CLI's flags (z=6 for --z 6,
        per_rank=True for --per-rank). Each DataFrame's attrs hold the table's title and notes."""
        out = {}
        for name, title, columns, rows, notes in _core.analyse(analysis, self.paths, options, self.threads):
            df = pd.DataFrame(rows, columns=columns)
            df.attrs["title"] = title
            df.attrs["notes"] = list(notes)
            out[name] = df
        return out

    def _first(self, analysis, **options):
        t = self.tables(analysis, **options)
        return next(iter(t.values())) if t else pd.DataFrame()

    def summary(self, **options):
        """`nccl-inspector summary`'s table: per communicator, op, algorithm, protocol and size."""
        return self.tables("summary", **options)["summary"]

    def stragglers(self, **options):
        """`nccl-inspector stragglers`' late-rank table (flagged ranks first)."""
        return self._first("stragglers", **options)

    def anomalies(self, **options):
        """`nccl-inspector anomalies`' findings."""
        return self._first("anomalies", **options)

    def hangs(self, **options):
        """`nccl-inspector hangs`' table."""
        return self._first("hangs", **options)
