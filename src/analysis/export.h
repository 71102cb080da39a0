// `export`: one flat row per op (CSV or JSON lines) for pandas/Spark/DuckDB.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "src/analysis/reader.h"

namespace ni::analysis {

enum class ExportFormat { kCsv, kJsonl };

// Streams every op to out; rows from different files may interleave (each file's
// rows keep their order). Returns the read result (for health / errors).
ReadResult export_ops(const std::vector<std::string>& files, ExportFormat f, int threads,
                      const ReadOptions& ro, std::ostream& out);

// The column names, in order.
const std::vector<std::string>& export_columns();

}  // namespace ni::analysis
