#include "src/analysis/tags.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "src/analysis/map_file.h"

namespace ni::analysis {

bool load_tag_map(const std::string& path, std::map<std::uint64_t, std::string>& out, std::string& err) {
  return read_map_file(path, "tag map", "tag", " \t\r", [&out](std::string& line, std::string& e) {
    const auto b = line.find_first_not_of(" \t\r");
    const auto x = line.find_first_of(" \t", b);
    const std::string tag = line.substr(b, x == std::string::npos ? std::string::npos : x - b);
    std::string name = x == std::string::npos ? "" : line.substr(x);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t\r") + 1);
    std::uint64_t v = 0;
    const bool hex = tag.size() > 2 && tag[0] == '0' && (tag[1] == 'x' || tag[1] == 'X');
    const char* first = tag.data() + (hex ? 2 : 0);
    const auto [p, ec] = std::from_chars(first, tag.data() + tag.size(), v, hex ? 16 : 10);
    if (ec != std::errc() || p != tag.data() + tag.size() || v == 0 || name.empty()) {
      e = "expected \"tag name\" (a tag is a number from 1, decimal or 0x hex), got \"" + line + "\"";
      return false;
    }
    if (auto [it, fresh] = out.emplace(v, name); !fresh && it->second != name) {
      e = "tag " + tag + " is named " + it->second + " already";
      return false;
    }
    return true;
  }, err);
}

std::string TagNames::label(std::uint64_t tag) const {
  if (tag == 0) return "(untagged)";
  auto it = names.find(tag);
  return it != names.end() ? it->second : std::to_string(tag);
}

std::string TagNames::note() const {
  if (names.empty()) return "";
  std::string s = "tag names: " + std::to_string(names.size()) + " (" + std::to_string(from_logs) +
                  " from the logs' tag records)";
  if (conflicts != 0)
    s += "; " + std::to_string(conflicts) + " tag(s) named differently by different processes: the earliest name kept";
  return s;
}

namespace {
void add_logs(TagNames& t, const ReadResult& res, const std::map<std::uint64_t, std::string>& tag_map) {
  std::vector<const MarkInfo*> recs;
  for (const FileInfo& f : res.files)
    for (const MarkInfo& m : f.tag_names) recs.push_back(&m);
  std::stable_sort(recs.begin(), recs.end(), [](const MarkInfo* a, const MarkInfo* b) { return a->wall_ns < b->wall_ns; });
  for (const MarkInfo* m : recs) {
    if (tag_map.count(m->user_tag) != 0) continue;  // the map's name wins
    auto [it, fresh] = t.names.emplace(m->user_tag, m->label);
    if (fresh) ++t.from_logs;
    else if (it->second != m->label && t.conflicted.insert(m->user_tag).second) ++t.conflicts;
  }
}
}  // namespace

TagNames tag_names(const ReadResult& res, const std::map<std::uint64_t, std::string>& tag_map) {
  TagNames t;
  t.names = tag_map;
  add_logs(t, res, tag_map);
  return t;
}

TagNames tag_names(const ReadResult& a, const ReadResult& b, const std::map<std::uint64_t, std::string>& tag_map) {
  TagNames t;
  t.names = tag_map;
  add_logs(t, a, tag_map);
  add_logs(t, b, tag_map);
  return t;
}

}  // namespace ni::analysis
