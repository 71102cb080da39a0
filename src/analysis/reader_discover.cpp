// Discovery (declared in reader.h): which files of the inputs are logs. A file
// given by name is taken as it is; a directory is searched recursively for the
// log names (*.jsonl.gz, *.jsonl, *.log, *.log.gz), sorted per directory so a
// read is deterministic.
#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "include/nccl_inspector/schema.h"
#include "src/analysis/reader.h"

namespace ni::analysis {

namespace {

namespace fs = std::filesystem;

bool ends_with(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}
// Ours (schema::kFileSuffix, and uncompressed copies) and upstream's.
bool is_log_name(std::string_view n) {
  return ends_with(n, ni::schema::kFileSuffix) || ends_with(n, ".jsonl") || ends_with(n, ".log") ||
         ends_with(n, ".log.gz");
}

// Appends the log files under dir, sorted; false (error set) if it cannot be listed.
bool add_directory(const std::string& dir, Discovery& d) {
  std::error_code ec;
  const std::size_t before = d.files.size();
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && is_log_name(it->path().filename().string())) d.files.push_back(it->path().string());
  }
  if (ec) {
    d.error = "cannot list " + dir + ": " + ec.message();
    return false;
  }
  std::sort(d.files.begin() + static_cast<std::ptrdiff_t>(before), d.files.end());
  return true;
}

}  // namespace

Discovery discover_files(const std::vector<std::string>& inputs) {
  Discovery d;
  if (inputs.empty()) {
    d.error = "no input given";
    return d;
  }
  for (const auto& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) {
      d.error = "no such file or directory: " + in;
      return d;
    }
    if (!fs::is_directory(st)) d.files.push_back(in);
    else if (!add_directory(in, d)) return d;
  }
  if (d.files.empty()) d.error = "no log files (*.jsonl.gz, *.jsonl, *.log, *.log.gz) found in the input";
  return d;
}

}  // namespace ni::analysis
