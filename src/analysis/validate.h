// `validate`: checks files against the log schema and reports versions, drops,
// sequence gaps and truncation, per file. What a user runs first when numbers look wrong.
#pragma once

#include "src/analysis/reader.h"
#include "src/analysis/table.h"

namespace ni::analysis {

struct ValidateResult {
  Report report;
  bool valid = true;      // false: unreadable/unknown format, corrupt gzip, bad lines or schema problems
  bool truncated = false; // some file was cut (a killed writer): reported, valid unless strict
};

ValidateResult validate_files(const std::vector<std::string>& files, int threads, const ReadOptions& ro,
                              bool strict);

}  // namespace ni::analysis
