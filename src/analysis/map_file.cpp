#include "src/analysis/map_file.h"

#include <fstream>

namespace ni::analysis {

bool read_map_file(const std::string& path, std::string_view what, std::string_view noun, std::string_view blank,
                   const std::function<bool(std::string& line, std::string& err)>& parse, std::string& err) {
  std::ifstream in(path);
  if (!in) {
    err = "cannot read " + std::string(what) + " " + path;
    return false;
  }
  std::string line;
  std::size_t entries = 0;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    if (line.find_first_not_of(blank) == std::string::npos) continue;
    if (!parse(line, err)) {
      err = path + ":" + std::to_string(n) + ": " + err;
      return false;
    }
    ++entries;
  }
  if (entries == 0) {
    err = std::string(what) + " " + path + " names no " + std::string(noun);
    return false;
  }
  return true;
}

}  // namespace ni::analysis
