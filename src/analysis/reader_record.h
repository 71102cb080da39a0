// Record mapping: one file's lines -> records. Each line's fields (found by the
// scanner, reader_scan.h) are mapped into a Line (reader_fields.h), then the
// record is dispatched by its "type": ops become Op (+ OpDetail when the
// sink asks) and go to the sink; meta, comm, stats, mark, clock and end records
// fill the FileInfo.
//
// Contract: read_file() reads one whole file on the calling thread and calls
// sink.on_op for each op with a duration, in file order. Damage is counted in
// info (bad lines, problems when validating, truncation), never thrown.
#pragma once

#include <atomic>
#include <cstdint>

#include "src/analysis/reader.h"
#include "src/analysis/reader_decode.h"

namespace ni::analysis::reader_detail {

// Reads info.path (info.path set, the rest default) with the worker's decoder;
// idx is the file's index in the read (Op::file_idx).
void read_file(FileInfo& info, std::uint32_t idx, OpSink& sink, bool validate, Decoder& decoder,
               std::atomic<std::uint64_t>& progress);

}  // namespace ni::analysis::reader_detail
