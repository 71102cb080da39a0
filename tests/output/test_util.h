// Shared helpers of the output tests: temp dirs, gunzip of concatenated
// members (tolerating a truncated tail), JSON-lines parsing.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace ni::out::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ni-out-test-XXXXXX";
    char* p = mkdtemp(tmpl);
    path_ = p != nullptr ? p : "/tmp";
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) {
    }
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

struct Gunzipped {
  std::string text;
  size_t members = 0;
  bool clean = true;  // false: the stream ended inside a member (or was corrupt)
};

// Decompresses concatenated gzip members with zlib; stops at the first damaged
// or truncated member and returns everything before it.
inline Gunzipped gunzip(const std::string& data) {
  Gunzipped g;
  size_t pos = 0;
  while (pos < data.size()) {
    z_stream zs{};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) break;
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + pos));
    zs.avail_in = static_cast<uInt>(data.size() - pos);
    std::string member;
    char out[65536];
    int rc;
    do {
      zs.next_out = reinterpret_cast<Bytef*>(out);
      zs.avail_out = sizeof out;
      rc = inflate(&zs, Z_NO_FLUSH);
      member.append(out, sizeof out - zs.avail_out);
    } while (rc == Z_OK);
    size_t used = (data.size() - pos) - zs.avail_in;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) {
      g.clean = false;
      break;
    }
    g.text += member;
    ++g.members;
    pos += used;
  }
  return g;
}

inline std::vector<nlohmann::json> parse_lines(const std::string& text) {
  std::vector<nlohmann::json> v;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line))
    if (!line.empty()) v.push_back(nlohmann::json::parse(line));
  return v;
}

inline std::vector<nlohmann::json> read_log(const std::string& path, bool* clean = nullptr) {
  Gunzipped g = gunzip(read_file(path));
  if (clean) *clean = g.clean;
  return parse_lines(g.text);
}

inline size_t count_type(const std::vector<nlohmann::json>& v, const std::string& type) {
  size_t n = 0;
  for (const auto& j : v)
    if (j.value("type", "") == type) ++n;
  return n;
}

}  // namespace ni::out::testing
