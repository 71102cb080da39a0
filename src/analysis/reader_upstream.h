// The upstream NCCL Inspector "v4.0" log format, read alongside ours (*.log, *.log.gz).
// One JSON object per line: {"header":{...},"metadata":{...},"coll_perf"|"p2p_perf":{...}};
// the keys are in include/nccl_inspector/schema.h (schema::upstream).
//
// Contract: each function maps one section (a DOM element; anything but an object
// is ignored) into the Line being read, and marks the Line as upstream. Such a line
// becomes an op record like ours (kFlagUpstream); the file's format fields come from
// its first op (upstream_file_info).
#pragma once

#include "src/analysis/reader_fields.h"
#include "src/analysis/reader_values.h"

namespace ni::analysis::reader_detail {

void upstream_header(dom::element v, Line& L);    // comm id, name, rank, sizes
void upstream_metadata(dom::element v, Line& L);  // format version, host, pid, git revision
void upstream_perf(dom::element v, bool p2p, Line& L);  // the op: kind, name, seq, size, time

// Sets info's format fields from an upstream line (info.format still unknown).
void upstream_file_info(const Line& L, FileInfo& info);

}  // namespace ni::analysis::reader_detail
