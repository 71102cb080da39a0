// Discovery (declared in reader.h): which files of the inputs are logs. A file
// given by name is taken as it is; a directory is searched recursively for the
// log names (*.jsonl.gz, *.jsonl, *.log, *.log.gz), sorted per directory so a
// read is deterministic. A stream ("-" for stdin, a pipe, a FIFO, process
// substitution) is copied once to an unlinked temporary file, so that every
// pass of a command reads the same bytes from a file it can map, and memory
// stays bounded (the copy is on disk, in $TMPDIR or /tmp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>
#include <system_error>
#include <vector>

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

// The streams copied so far: input name -> the copy's descriptor (kept open
// until the process exits; the file has no name); and the (device, inode) of
// each stream copied, so that one stream under two names is caught.
std::mutex g_spool_mu;
std::map<std::string, int>& spools() {
  static std::map<std::string, int> m;
  return m;
}
std::vector<std::pair<dev_t, ino_t>>& spooled_ids() {
  static std::vector<std::pair<dev_t, ino_t>> v;
  return v;
}

// Copies the stream `name` ("-": stdin) to an unlinked file; false (err set) on failure.
bool spool(const std::string& name, std::string& err) {
  if (name == "-" && ::isatty(0)) {
    err = "stdin is a terminal: pipe a log into it (zcat f.jsonl.gz | nccl-inspector summary -)";
    return false;
  }
  const int in = name == "-" ? 0 : ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    err = "cannot open " + name + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(in, &st) == 0) {
    const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
    auto& ids = spooled_ids();
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
      err = "input " + name + " is a stream already given under another name (a stream can be read once)";
      if (in != 0) ::close(in);
      return false;
    }
    ids.push_back(id);
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/nccl-inspector-input-XXXXXX";
  const int out = ::mkostemp(templ.data(), O_CLOEXEC);
  if (out < 0) {
    err = "cannot copy " + name + " to a temporary file in " + templ.substr(0, templ.rfind('/')) + ": " +
          std::strerror(errno);
    if (in != 0) ::close(in);
    return false;
  }
  ::unlink(templ.c_str());
  std::vector<char> buf(1 << 20);
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      err = "cannot read " + name + ": " + std::strerror(errno);
      ok = false;
      break;
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        err = "cannot copy " + name + " to " + templ + ": " + std::strerror(errno);
        ok = false;
        break;
      }
      done += w;
    }
    if (!ok) break;
  }
  if (in != 0) ::close(in);
  if (!ok) {
    ::close(out);
    return false;
  }
  spools()[name] = out;
  return true;
}

// Adds a stream input (spooled once per name; the same stream twice is an error).
bool add_stream(const std::string& name, Discovery& d) {
  std::lock_guard<std::mutex> lock(g_spool_mu);
  if (spools().count(name) != 0) {  // in this list or an earlier one (compare BASE RUN, --baseline)
    d.error = "input " + name + " given twice (a stream can be read once)";
    return false;
  }
  if (!spool(name, d.error)) return false;
  d.files.push_back(name);
  return true;
}

}  // namespace

int open_input(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(g_spool_mu);
    if (auto it = spools().find(path); it != spools().end()) return ::fcntl(it->second, F_DUPFD_CLOEXEC, 0);
  }
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

Discovery discover_files(const std::vector<std::string>& inputs) {
  Discovery d;
  if (inputs.empty()) {
    d.error = "no input given";
    return d;
  }
  for (const auto& in : inputs) {
    if (in == "-") {
      if (!add_stream(in, d)) return d;
      continue;
    }
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) {
      d.error = "no such file or directory: " + in;
      return d;
    }
    if (fs::is_directory(st)) {
      if (!add_directory(in, d)) return d;
    } else if (fs::is_regular_file(st)) {
      d.files.push_back(in);
    } else if (!add_stream(in, d)) {  // a pipe, FIFO, /dev/stdin, <(...)
      return d;
    }
  }
  if (d.files.empty()) d.error = "no log files (*.jsonl.gz, *.jsonl, *.log, *.log.gz) found in the input";
  return d;
}

}  // namespace ni::analysis
