// User tags (NCCL 2.31+, ncclCollConfig_t.userProfilerTag): numbers the
// application puts on its calls, and their names. Names come from a --tag-map
// file ("tag name" lines) and from the logs' "tag" records, which the
// application writes with ncclInspectorNameTag (docs/configuration.md, "Tags").
// A --tag-map name wins over the logs'; when processes named a tag
// differently, the earliest record's name is kept and the disagreement counted.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "src/analysis/reader.h"

namespace ni::analysis {

// Reads a --tag-map file: "tag name" lines (tag decimal or 0x hex; the name is
// the rest of the line; '#' comments). False + err on a bad line or no tag.
bool load_tag_map(const std::string& path, std::map<std::uint64_t, std::string>& out, std::string& err);

struct TagNames {
  std::map<std::uint64_t, std::string> names;
  std::uint64_t from_logs = 0;  // names taken from "tag" records
  std::uint64_t conflicts = 0;  // tags the logs named differently (the earliest name kept)
  std::set<std::uint64_t> conflicted;
  // The name, else the number (decimal); "(untagged)" for 0.
  std::string label(std::uint64_t tag) const;
  // A line for a report's notes: where the names came from and any conflicts ("" when no names).
  std::string note() const;
};

// --tag-map's names (may be empty), then the logs' of every file of `res`.
TagNames tag_names(const ReadResult& res, const std::map<std::uint64_t, std::string>& tag_map);
// The same over two inputs (compare): the first's names first.
TagNames tag_names(const ReadResult& a, const ReadResult& b, const std::map<std::uint64_t, std::string>& tag_map);

}  // namespace ni::analysis
