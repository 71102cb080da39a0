// `iterations`: per-iteration statistics between consecutive `mark` records of each process.
#pragma once

#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/table.h"

namespace ni::analysis {

// Adds the "iterations" section; adds nothing when the input has no mark records.
void add_iteration_section(Report& r, const std::vector<Op>& ops, const ReadResult& res);

}  // namespace ni::analysis
