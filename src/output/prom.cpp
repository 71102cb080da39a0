#include "src/output/prom.h"

#include <fcntl.h>

#include <bit>
#include <cerrno>

#include "src/core/names.h"
#include "src/output/safe_file.h"

namespace ni::out {
namespace {

namespace ctr = ni::counters;

// Upper bounds (le) of the latency histogram, seconds; the literal text is
// what the file shows.
constexpr double kDurLe[PromWriter::kDurBuckets] = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
                                                    2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
constexpr const char* kDurLeText[PromWriter::kDurBuckets] = {
    "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025", "0.05",    "0.1",   "0.25",   "0.5",     "1",      "2.5",   "5",      "10"};
// Bus bandwidth, bytes per second (100 MB/s .. 1.6 TB/s).
constexpr double kBwLe[PromWriter::kBwBuckets] = {1e8,   2.5e8, 5e8,  1e9,  2.5e9, 5e9,   1e10,
                                                  2.5e10, 5e10, 1e11, 2e11, 4e11,  8e11, 1.6e12};
constexpr const char* kBwLeText[PromWriter::kBwBuckets] = {"1e+08", "2.5e+08", "5e+08", "1e+09", "2.5e+09",
                                                           "5e+09", "1e+10",   "2.5e+10", "5e+10", "1e+11",
                                                           "2e+11", "4e+11",   "8e+11", "1.6e+12"};

constexpr int kSizeBits = 8;

// (label id, kind, func, algo, proto, size class).
uint64_t series_key(const OpRecord& r, uint32_t label) {
  unsigned size_class = r.bytes == 0 ? 0u : static_cast<unsigned>(std::bit_width(r.bytes));  // 1 + floor(log2)
  return (static_cast<uint64_t>(label) << 32) | (static_cast<uint64_t>(r.kind & 3u) << 28) |
         (static_cast<uint64_t>(r.func & 0x1Fu) << 20) | (static_cast<uint64_t>(r.algo & 0xFu) << 16) |
         (static_cast<uint64_t>(r.proto & 0xFu) << 12) | size_class;
}

std::string size_text(uint64_t v) {
  static const char* kUnit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (v >= 1024 && (v % 1024) == 0 && u < 6) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + kUnit[u];
}

// "64KiB-128KiB": the power-of-two range [2^k, 2^(k+1)) holding the op's size.
std::string size_bucket(unsigned size_class) {
  if (size_class == 0) return "0B";
  uint64_t lo = uint64_t{1} << (size_class - 1);
  if (size_class >= 64) return size_text(lo) + "-";
  return size_text(lo) + "-" + size_text(lo << 1);
}

void put_value(Buf& b, double v) { b.put_double(v); }

}  // namespace

std::string prom_escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  size_t i = 0;
  while (i < v.size()) {
    auto c = static_cast<unsigned char>(v[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c == '"') {
      out += "\\\"";
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else {
      size_t n = utf8_seq_len(v, i);
      if (n == 0) {
        out.push_back('?');
        ++i;
      } else {
        out.append(v.substr(i, n));
        i += n;
      }
    }
  }
  return out;
}

PromWriter::PromWriter(Io& io, std::string dir, PromIdentity id, Logger log)
    : io_(io), dir_(std::move(dir)), id_(std::move(id)), log_(std::move(log)) {
  std::string d = dir_;
  if (!d.empty() && d.back() != '/') d.push_back('/');
  std::string name = "nccl_inspector_" + id_.host + "_" + std::to_string(id_.pid);
  path_ = d + name + ".prom";
  // "<dir>/.<name>.prom.<random>.tmp" (create_temp): not *.prom, so the
  // collector ignores it.
  tmp_stem_ = d + "." + name + ".prom";
  // Not `job` (Prometheus' own target label) and no per-process id unless
  // nothing else tells two processes of a host apart, or extra labels are on.
  base_labels_ = "host=\"" + prom_escape(id_.host) + "\",nccl_job=\"" + prom_escape(id_.job) + "\"";
  if (!id_.global_rank.empty()) base_labels_ += ",global_rank=\"" + prom_escape(id_.global_rank) + "\"";
  if (id_.global_rank.empty() || id_.extra_labels) base_labels_ += ",pid=\"" + std::to_string(id_.pid) + "\"";
}

uint32_t PromWriter::label_id(const CommInfo& c) {
  std::string l = "rank=\"" + std::to_string(c.rank) + "\",comm_name=\"";
  if (!c.name.empty()) {
    l += prom_escape(c.name);
  } else {  // unnamed: the first 8 hex digits of its hash
    Buf h;
    h.put_hex64(c.comm_hash);
    l += std::string(h.view().substr(0, 10));
  }
  l += "\"";
  if (id_.extra_labels) {
    Buf h;
    h.put_hex64(c.comm_hash);
    l += ",comm_hash=\"" + std::string(h.view()) + "\"";
  }
  if (label_ids_.find(l) == label_ids_.end() && label_ids_.size() >= kMaxCommLabels)
    l = "rank=\"-1\",comm_name=\"other\"";
  auto [it, added] = label_ids_.try_emplace(l, static_cast<uint32_t>(label_text_.size()));
  if (added) label_text_.push_back(l);
  return it->second;
}

void PromWriter::set_comm(const CommInfo& c) { comm_label_[c.comm_id] = label_id(c); }

void PromWriter::add(const OpRecord& r, const CommInfo* comm) {
  if (is_note(r.kind)) return;
  auto lit = comm_label_.find(r.comm_id);
  if (lit == comm_label_.end() && comm != nullptr) lit = comm_label_.emplace(r.comm_id, label_id(*comm)).first;
  if (lit == comm_label_.end()) {  // a record of a comm never announced: its own label
    CommInfo unknown;
    unknown.rank = -1;
    unknown.name = "unknown";
    lit = comm_label_.emplace(r.comm_id, label_id(unknown)).first;
  }
  Series& s = series_[series_key(r, lit->second)];
  ++s.ops;
  OpTiming t = op_timing(r, comm != nullptr ? comm->nranks : 0);
  if (t.has_span) {
    double sec = static_cast<double>(t.span_ns) * 1e-9;
    ++s.dur_count;
    s.dur_sum += sec;
    for (int i = 0; i < kDurBuckets; ++i)
      if (sec <= kDurLe[i]) {
        ++s.dur_bucket[i];  // stored per bucket, made cumulative when rendered
        break;
      }
  }
  if (t.has_busbw) {
    double bps = t.busbw_gbs * 1e9;
    ++s.bw_count;
    s.bw_sum += bps;
    for (int i = 0; i < kBwBuckets; ++i)
      if (bps <= kBwLe[i]) {
        ++s.bw_bucket[i];
        break;
      }
  }
}

namespace {

// "# HELP name help" and "# TYPE name type".
void put_family(Buf& b, std::string_view name, std::string_view type, std::string_view help) {
  b.put(std::string_view("# HELP "));
  b.put(name);
  b.put(' ');
  b.put(help);
  b.put(std::string_view("\n# TYPE "));
  b.put(name);
  b.put(' ');
  b.put(type);
  b.put('\n');
}

}  // namespace

std::string PromWriter::render(const StatsSnapshot& st, int64_t wall_ns) const {
  Buf b;
  put_identity(b, wall_ns);
  put_counters(b, st);
  if (!series_.empty()) {
    put_ops(b);
    put_histogram(b, "nccl_inspector_op_duration_seconds", "Operation duration (earliest channel start to latest stop).",
                  [](const Series& s) { return HistView{s.dur_count, s.dur_sum, s.dur_bucket, kDurBuckets, kDurLeText}; });
    put_histogram(b, "nccl_inspector_op_busbw_bytes_per_second", "Operation bus bandwidth (nccl-tests convention).",
                  [](const Series& s) { return HistView{s.bw_count, s.bw_sum, s.bw_bucket, kBwBuckets, kBwLeText}; });
  }
  return std::string(b.view());
}

// Which plugin and job wrote the file, and when.
void PromWriter::put_identity(Buf& b, int64_t wall_ns) const {
  put_family(b, "nccl_inspector_info", "gauge", "NCCL Inspector plugin and job identity; the value is always 1.");
  b.put(std::string_view("nccl_inspector_info{"));
  b.put(base_labels_);
  b.put(std::string_view(",version=\""));
  b.put(prom_escape(id_.version));
  b.put(std::string_view("\"} 1\n"));

  put_family(b, "nccl_inspector_last_update_timestamp_seconds", "gauge", "Unix time when this file was written.");
  b.put(std::string_view("nccl_inspector_last_update_timestamp_seconds{"));
  b.put(base_labels_);
  b.put(std::string_view("} "));
  put_value(b, static_cast<double>(wall_ns) * 1e-9);
  b.put('\n');
}

// The exported rows of counters.h; a group's rows share one family,
// labelled by reason.
void PromWriter::put_counters(Buf& b, const StatsSnapshot& st) const {
  const auto values = counter_values(st);
  std::string_view last_family;
  for (size_t i = 0; i < ctr::kCount; ++i) {
    const ctr::Counter& c = ctr::kCounters[i];
    if (c.prom_name.empty()) continue;
    if (c.prom_name != last_family) {
      put_family(b, c.prom_name, c.kind == ctr::Kind::kCounter ? "counter" : "gauge", c.prom_help);
      last_family = c.prom_name;
    }
    b.put(c.prom_name);
    b.put('{');
    b.put(base_labels_);
    if (c.group != ctr::Group::kTop) {
      b.put(std::string_view(",reason=\""));
      b.put(c.key);
      b.put('"');
    }
    b.put(std::string_view("} "));
    b.put_int(values[i]);
    b.put('\n');
  }
}

void PromWriter::put_ops(Buf& b) const {
  put_family(b, "nccl_inspector_ops_total", "counter",
             "Operations completed, by communicator, operation, algorithm_protocol and size bucket.");
  for (const auto& [key, s] : series_) {
    b.put(std::string_view("nccl_inspector_ops_total{"));
    b.put(op_labels(key));
    b.put(std::string_view("} "));
    b.put_int(s.ops);
    b.put('\n');
  }
}

// One histogram family: for each live series its cumulative buckets, +Inf,
// sum and count.
template <typename Pick>
void PromWriter::put_histogram(Buf& b, std::string_view name, std::string_view help, Pick pick) const {
  put_family(b, name, "histogram", help);
  // name<suffix>{labels<extra>} (the value follows).
  auto sample = [&](std::string_view suffix, const std::string& labels, std::string_view extra) {
    b.put(name);
    b.put(suffix);
    b.put('{');
    b.put(labels);
    b.put(extra);
    b.put(std::string_view("} "));
  };
  for (const auto& [key, s] : series_) {
    const HistView h = pick(s);
    const std::string l = op_labels(key);
    uint64_t cum = 0;
    for (int i = 0; i < h.n; ++i) {
      cum += h.buckets[i];
      sample("_bucket", l, std::string(",le=\"") + h.le_text[i] + "\"");
      b.put_int(cum);
      b.put('\n');
    }
    sample("_bucket", l, ",le=\"+Inf\"");
    b.put_int(h.count);
    b.put('\n');
    sample("_sum", l, "");
    put_value(b, h.sum);
    b.put('\n');
    sample("_count", l, "");
    b.put_int(h.count);
    b.put('\n');
  }
}

// Labels of one op series, without braces.
std::string PromWriter::op_labels(uint64_t key) const {
  auto label = static_cast<uint32_t>(key >> 32);
  auto kind = static_cast<OpKind>((key >> 28) & 3u);
  auto func = static_cast<Func>((key >> 20) & 0x1Fu);
  auto algo = static_cast<Algo>((key >> 16) & 0xFu);
  auto proto = static_cast<Proto>((key >> 12) & 0xFu);
  auto size_class = static_cast<unsigned>(key & ((1u << kSizeBits) - 1));
  std::string l = base_labels_;
  l += ',';
  l += label_text_[label];
  l += ",kind=\"";
  l += kind_name(kind);
  l += "\",op=\"";
  l += func_name(func < Func::kCount_ ? func : Func::kUnknown);
  l += "\",algo_proto=\"";
  if (kind == OpKind::kColl) {
    l += algo_name(algo < Algo::kCount_ ? algo : Algo::kUnknown);
    l += "_";
    l += proto_name(proto < Proto::kCount_ ? proto : Proto::kUnknown);
  } else {
    l += "none";
  }
  l += "\",size_bucket=\"";
  l += size_bucket(size_class);
  l += "\"";
  return l;
}

bool PromWriter::write(const StatsSnapshot& st, int64_t wall_ns, uint64_t now_ns) {
  if (failing_ && now_ns < retry_at_ns_) return false;
  const std::string text = render(st, wall_ns);
  auto fail = [&](int err, const char* what, const std::string& p) {
    retry_at_ns_ = now_ns + 1000000000ull;
    if (!failing_)
      log_(ni::abi::kLogWarn, "NCCL Inspector: cannot " + std::string(what) + " " + p + ": " + errno_text(err) +
                                   " (Prometheus file not updated; retrying)");
    failing_ = true;
    return false;
  };
  // A fresh file under a random name, never one that exists: whoever can write
  // the directory must not make us write through a symlink they planted.
  std::string tmp;
  int fd = create_temp(io_, tmp_stem_, 0666, &tmp);
  if (fd < 0 && errno == ENOENT) {
    int me = mkdir_p(io_, dir_);
    if (me != 0) return fail(me, "create directory", dir_);
    fd = create_temp(io_, tmp_stem_, 0666, &tmp);
  }
  if (fd < 0) return fail(errno, "create", tmp_stem_ + ".*.tmp");
  size_t done = 0;
  int err = write_all(io_, fd, text.data(), text.size(), &done);
  int cerr = io_.close(fd) != 0 ? errno : 0;
  if (err != 0 || (cerr != 0 && cerr != EINTR)) {
    io_.unlink(tmp.c_str());
    return fail(err != 0 ? err : cerr, err != 0 ? "write" : "close", tmp);
  }
  // rename() replaces whatever is at the final name (a symlink included)
  // without following it.
  if (io_.rename(tmp.c_str(), path_.c_str()) != 0) {
    int e = errno;
    io_.unlink(tmp.c_str());
    return fail(e, "rename onto", path_);
  }
  if (!dir_checked_) {
    dir_checked_ = true;
    warn_if_unsafe_dir(io_, dir_, [this](const std::string& w) { log_(ni::abi::kLogWarn, w); });
  }
  if (failing_) log_(ni::abi::kLogWarn, "NCCL Inspector: writing " + path_ + " works again.");
  failing_ = false;
  return true;
}

}  // namespace ni::out
