// `iterations`: per-iteration statistics between consecutive `mark` records of each process.
#pragma once

#include <vector>

#include "reader.h"
#include "table.h"

namespace nccl_inspector::analysis {

// Adds the "iterations" section; adds nothing when the input has no mark records.
void add_iteration_section(Report& r, const std::vector<OpRecord>& ops, const ReadResult& res);

}  // namespace nccl_inspector::analysis
