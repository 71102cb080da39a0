#include "trace.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <streambuf>
#include <tuple>
#include <unordered_map>

#include "table.h"

namespace nccl_inspector::analysis {

namespace {

constexpr int kTidMarkers = 1;
constexpr int kCommTidStride = 10000;
constexpr int kMaxOpLanes = 999;     // tid 10000*(c+1) + 0..998
constexpr int kChannelBase = 1000;   // tid 10000*(c+1) + 1000 + 10*ch + lane
constexpr int kMaxChannelLanes = 10;
constexpr int kMaxChannel = 899;
// pid 0 (findings) threads
constexpr int kFindTidStraggler = 1, kFindTidOutlier = 2, kFindTidBimodal = 3, kFindTidChannel = 4, kFindTidHca = 5,
              kFindTidChangeBase = 20, kMaxChangeLanes = 10;

std::int64_t end_ns_of(std::int64_t start, double dur_us) {
  return start + (std::isfinite(dur_us) && dur_us > 0 ? std::llround(dur_us * 1000.0) : 0);
}

// Buffered JSON text writer: one event at a time, flushed every ~1 MiB.
class Json {
 public:
  explicit Json(std::ostream& out) : out_(out) { buf_.reserve(kFlush + 65536); }
  ~Json() = default;
  Json(const Json&) = delete;
  Json& operator=(const Json&) = delete;

  void raw(std::string_view s) { buf_.append(s); }
  void ch(char c) { buf_.push_back(c); }
  void i64(std::int64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    buf_.append(b, static_cast<std::size_t>(r.ptr - b));
  }
  void u64(std::uint64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    buf_.append(b, static_cast<std::size_t>(r.ptr - b));
  }
  // Nanoseconds as microseconds with 3 decimals (exact).
  void us(std::int64_t ns) {
    if (ns < 0) {
      ch('-');
      ns = -ns;
    }
    u64(static_cast<std::uint64_t>(ns / 1000));
    const int frac = static_cast<int>(ns % 1000);
    char b[5] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                 static_cast<char>('0' + frac % 10), 0};
    buf_.append(b, 4);
  }
  void num(double v) {
    if (!std::isfinite(v)) {
      raw("null");
      return;
    }
    char b[32];
    const int n = std::snprintf(b, sizeof b, "%.4g", v);
    buf_.append(b, static_cast<std::size_t>(n));
  }
  void str(std::string_view s) {
    ch('"');
    bool plain = true;
    for (unsigned char c : s)
      if (c < 0x20 || c == '"' || c == '\\') plain = false;
    if (plain) buf_.append(s);
    else buf_.append(json_escape(std::string(s)));
    ch('"');
  }
  void key(std::string_view k) {
    ch('"');
    buf_.append(k);
    raw("\":");
  }
  // Starts an event: {"ph":"X","name":..,"cat":..,"pid":..,"tid":..,"ts":..
  void begin(char ph, std::string_view name, std::string_view cat, int pid, int tid, std::int64_t ts_ns) {
    raw(events_++ ? ",\n" : "\n");  // one event per line (tests and grep rely on it)
    raw("{\"ph\":\"");
    ch(ph);
    raw("\",\"name\":");
    str(name);
    raw(",\"cat\":");
    str(cat);
    raw(",\"pid\":");
    i64(pid);
    raw(",\"tid\":");
    i64(tid);
    raw(",\"ts\":");
    us(ts_ns);
  }
  void end() {
    ch('}');
    if (buf_.size() >= kFlush) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    bytes_ += buf_.size();
    buf_.clear();
  }
  std::uint64_t events() const { return events_; }
  std::uint64_t bytes() const { return bytes_ + buf_.size(); }
  bool ok() const { return static_cast<bool>(out_); }

 private:
  static constexpr std::size_t kFlush = 1u << 20;
  std::ostream& out_;
  std::string buf_;
  std::uint64_t events_ = 0, bytes_ = 0;
};

// Lane allocation on one track: the first lane whose events all ended by `start`.
struct Lanes {
  std::vector<std::int64_t> end;
  int place(std::int64_t start, std::int64_t stop, int max_lanes) {
    for (std::size_t l = 0; l < end.size(); ++l)
      if (end[l] <= start) {
        end[l] = std::max(end[l], stop);
        return static_cast<int>(l);
      }
    if (static_cast<int>(end.size()) >= max_lanes) return -1;
    end.push_back(stop);
    return static_cast<int>(end.size()) - 1;
  }
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string iso_utc(std::int64_t ns) {
  const std::time_t s = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char b[64];
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns % 1000000000 / 1000));
  return b;
}

// gzip output streambuf (zlib, level 6).
class GzBuf : public std::streambuf {
 public:
  explicit GzBuf(std::FILE* f) : f_(f) {
    std::memset(&z_, 0, sizeof z_);
    ok_ = deflateInit2(&z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    out_.resize(1 << 18);
  }
  ~GzBuf() override {
    if (ok_) deflateEnd(&z_);
  }
  GzBuf(const GzBuf&) = delete;
  GzBuf& operator=(const GzBuf&) = delete;
  bool finish() {
    if (!ok_) return false;
    return pump(nullptr, 0, Z_FINISH);
  }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (!ok_ || !pump(s, static_cast<std::size_t>(n), Z_NO_FLUSH)) return 0;
    return n;
  }
  int overflow(int c) override {
    if (c == traits_type::eof()) return 0;
    const char ch = static_cast<char>(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }

 private:
  bool pump(const char* s, std::size_t n, int flush) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s));
    z_.avail_in = static_cast<uInt>(n);
    for (;;) {
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      const int r = deflate(&z_, flush);
      if (r == Z_STREAM_ERROR) return ok_ = false;
      const std::size_t have = out_.size() - z_.avail_out;
      if (have && std::fwrite(out_.data(), 1, have, f_) != have) return ok_ = false;
      if (flush == Z_FINISH ? r == Z_STREAM_END : z_.avail_in == 0 && z_.avail_out != 0) return true;
    }
  }
  std::FILE* f_;
  z_stream z_;
  std::vector<char> out_;
  bool ok_ = false;
};

}  // namespace

bool parse_time_arg(const std::string& s, std::int64_t t0_ns, std::int64_t& out_ns, std::string& error) {
  if (s.empty()) {
    error = "empty time";
    return false;
  }
  // seconds from the start
  {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end && *end == 0 && std::isfinite(v)) {
      out_ns = t0_ns + std::llround(v * 1e9);
      return true;
    }
  }
  // ISO 8601: YYYY-MM-DDTHH:MM:SS[.fff][Z]  (UTC; a space may replace the T)
  int Y, M, D, h, m;
  char sep = 0;
  double sec = 0;
  int used = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d:%lf%n", &Y, &M, &D, &sep, &h, &m, &sec, &used) == 7 &&
      (sep == 'T' || sep == ' ')) {
    const std::string rest = s.substr(static_cast<std::size_t>(used));
    if (rest.empty() || rest == "Z" || rest == "+00:00") {
      std::tm tm{};
      tm.tm_year = Y - 1900;
      tm.tm_mon = M - 1;
      tm.tm_mday = D;
      tm.tm_hour = h;
      tm.tm_min = m;
      tm.tm_sec = 0;
      const std::time_t t = timegm(&tm);
      out_ns = static_cast<std::int64_t>(t) * 1000000000 + std::llround(sec * 1e9);
      return true;
    }
  }
  error = "bad time '" + s + "' (seconds from the first op, e.g. 12.5, or ISO 8601 UTC, e.g. 2025-01-01T00:00:12Z)";
  return false;
}

TraceStats write_trace(const ViewSink& data, const ReadResult& res, const TraceOptions& o, std::ostream& out,
                       std::string& error) {
  TraceStats st;
  const auto& ops = data.coll.ops;
  const auto& extra = data.coll.extra;
  st.ops_input = ops.size();
  const GpuMap gm = map_gpus(ops, res);

  std::int64_t t0 = std::numeric_limits<std::int64_t>::max();
  for (const auto& op : ops) {
    if (op.has_start()) t0 = std::min(t0, op.start_wall_ns);
    else ++st.ops_no_start;
  }
  if (t0 == std::numeric_limits<std::int64_t>::max()) {
    error = "no op has a start time (upstream Inspector v4.0 logs, or no GPU clock estimate yet): nothing to place on a timeline";
    return st;
  }
  // ---- filters
  std::int64_t from = std::numeric_limits<std::int64_t>::min(), to = std::numeric_limits<std::int64_t>::max();
  if (!o.from.empty() && !parse_time_arg(o.from, t0, from, error)) return st;
  if (!o.to.empty() && !parse_time_arg(o.to, t0, to, error)) return st;
  std::set<std::uint64_t> comm_set;
  for (const auto& c : o.comms) {
    std::uint64_t h = 0;
    bool found = false;
    if (parse_hash(c, h) && gm.comm_index.count(h)) {
      comm_set.insert(h);
      found = true;
    }
    for (std::uint64_t x : gm.comms) {
      auto it = res.comm_names.find(x);
      if ((it != res.comm_names.end() && it->second == c) || hex_hash(x).rfind(lower(c), 0) == 0) {
        comm_set.insert(x);
        found = true;
      }
    }
    if (!found) {
      error = "--comm '" + c + "' matches no communicator (names or 0x hashes; see nccl-inspector summary)";
      return st;
    }
  }
  std::set<Func> func_set;
  for (const auto& f : o.ops) {
    bool found = false;
    for (int i = 0; i < static_cast<int>(Func::kCount_); ++i)
      if (lower(std::string(to_string(static_cast<Func>(i)))) == lower(f)) {
        func_set.insert(static_cast<Func>(i));
        found = true;
      }
    if (!found) {
      error = "--op '" + f + "' is not an NCCL function name (AllReduce, AllGather, Send, ...)";
      return st;
    }
  }
  const std::set<int> rank_set(o.ranks.begin(), o.ranks.end());
  auto passes = [&](std::size_t i) {
    const OpRecord& op = ops[i];
    if (!op.has_start()) return false;
    if (!comm_set.empty() && !comm_set.count(op.comm_hash)) return false;
    if (!func_set.empty() && !func_set.count(op.func)) return false;
    if (!rank_set.empty() && !rank_set.count(gm.gpus[gm.op_gpu[i]].rank)) return false;
    const std::int64_t e = end_ns_of(op.start_wall_ns, op.dur_us);
    return e >= from && op.start_wall_ns <= to;
  };
  std::vector<std::uint32_t> sel;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (passes(i)) sel.push_back(static_cast<std::uint32_t>(i));
  st.ops_selected = sel.size();
  std::uint64_t N = std::max<std::uint64_t>(1, o.sample);
  auto count_sampled = [&](std::uint64_t n) {
    std::uint64_t k = 0;
    for (auto i : sel) k += ops[i].seq % n == 0;
    return k;
  };
  std::uint64_t kept = N == 1 ? sel.size() : count_sampled(N);
  if (o.max_ops && kept > o.max_ops) {
    N *= (kept + o.max_ops - 1) / o.max_ops;
    kept = count_sampled(N);
  }
  st.sample = N;
  if (N > 1) sel.erase(std::remove_if(sel.begin(), sel.end(), [&](std::uint32_t i) { return ops[i].seq % N != 0; }),
                       sel.end());
  auto cidx = [&](std::uint32_t i) { return gm.comm_index.at(ops[i].comm_hash); };
  std::sort(sel.begin(), sel.end(), [&](std::uint32_t a, std::uint32_t b) {
    const OpRecord& x = ops[a];
    const OpRecord& y = ops[b];
    return std::make_tuple(x.start_wall_ns, gm.op_gpu[a], cidx(a), x.seq, x.func, x.dur_us, a) <
           std::make_tuple(y.start_wall_ns, gm.op_gpu[b], cidx(b), y.seq, y.func, y.dur_us, b);
  });

  // ---- channel sub-tracks?
  if (data.channel_capped) st.channel_note = "more channel times than the analyzer keeps";
  else if (data.ch.empty()) st.channel_note = "no ch_times in the logs (set NCCL_INSPECTOR_DUMP_VERBOSE=1)";
  else if (o.channel_ops_max == 0) st.channel_note = "disabled";
  else if (sel.size() > o.channel_ops_max)
    st.channel_note = "more than " + std::to_string(o.channel_ops_max) + " ops (--channel-ops-max)";
  st.channel_tracks = st.channel_note.empty();

  // ---- lanes (pass 1): which tid each slice goes to
  std::vector<std::int32_t> op_tid(sel.size(), -1);
  std::vector<std::int32_t> ch_tid;  // per entry of data.ch (only the selected ops' entries are set)
  if (st.channel_tracks) ch_tid.assign(data.ch.size(), -1);
  std::map<std::pair<std::uint32_t, int>, Lanes> op_lanes;                  // (gpu, comm) -> lanes
  std::map<std::tuple<std::uint32_t, int, int>, Lanes> ch_lanes;            // (gpu, comm, ch)
  std::map<std::pair<int, int>, std::string> thread_names;                  // (pid, tid) -> name
  std::vector<bool> gpu_used(gm.gpus.size(), false);
  for (std::size_t k = 0; k < sel.size(); ++k) {
    const std::uint32_t i = sel[k];
    const OpRecord& op = ops[i];
    const std::uint32_t g = gm.op_gpu[i];
    const int c = cidx(i);
    const int pid = gm.gpus[g].trace_pid;
    gpu_used[g] = true;
    const int lane = op_lanes[{g, c}].place(op.start_wall_ns, end_ns_of(op.start_wall_ns, op.dur_us), kMaxOpLanes);
    if (lane < 0) {
      ++st.lane_dropped;
      continue;
    }
    if (lane > 0) ++st.overflow_ops;
    const int tid = kCommTidStride * (c + 1) + lane;
    op_tid[k] = tid;
    if (!thread_names.count({pid, tid}))
      thread_names[{pid, tid}] = comm_display(op.comm_hash, res) + (lane ? " \u00b7 overflow " + std::to_string(lane) : "");
    if (!st.channel_tracks) continue;
    for (std::size_t e = data.ch_begin(i); e < data.ch_end[i]; ++e) {
      const auto& chx = data.ch[e];
      if (chx.channel > kMaxChannel) continue;
      const std::int64_t s = op.start_wall_ns + std::llround(static_cast<double>(chx.off_us) * 1000.0);
      const int cl = ch_lanes[{g, c, chx.channel}].place(s, end_ns_of(s, static_cast<double>(chx.dur_us)), kMaxChannelLanes);
      if (cl < 0) {
        ++st.lane_dropped;
        continue;
      }
      const int ctid = kCommTidStride * (c + 1) + kChannelBase + 10 * chx.channel + cl;
      ch_tid[e] = ctid;
      if (!thread_names.count({pid, ctid}))
        thread_names[{pid, ctid}] = comm_short(op.comm_hash, res) + " \u00b7 ch " + std::to_string(chx.channel) +
                                    (cl ? " \u00b7 overflow " + std::to_string(cl) : "");
    }
  }

  // ---- flows and lateness: collective instances (comm, func, seq) across ranks; Send -> Recv
  struct Flow {
    std::uint32_t src_k, dst_k;
  };
  std::vector<Flow> flows;
  std::vector<float> late_us(sel.size(), std::numeric_limits<float>::quiet_NaN());
  {
    std::vector<std::uint32_t> coll_k, send_k, recv_k;
    for (std::uint32_t k = 0; k < sel.size(); ++k) {
      if (op_tid[k] < 0) continue;
      const OpRecord& op = ops[sel[k]];
      if (op.kind == OpKind::kP2p) {
        if (op.func == Func::kSend) send_k.push_back(k);
        else if (op.func == Func::kRecv) recv_k.push_back(k);
      } else {
        coll_k.push_back(k);
      }
    }
    std::sort(coll_k.begin(), coll_k.end(), [&](std::uint32_t a, std::uint32_t b) {
      const OpRecord& x = ops[sel[a]];
      const OpRecord& y = ops[sel[b]];
      return std::make_tuple(x.comm_hash, x.func, x.seq, x.start_wall_ns, a) <
             std::make_tuple(y.comm_hash, y.func, y.seq, y.start_wall_ns, b);
    });
    for (std::size_t a = 0; a < coll_k.size();) {
      const OpRecord& first = ops[sel[coll_k[a]]];
      std::size_t b = a + 1;
      while (b < coll_k.size()) {
        const OpRecord& x = ops[sel[coll_k[b]]];
        if (x.comm_hash != first.comm_hash || x.func != first.func || x.seq != first.seq) break;
        ++b;
      }
      if (b - a >= 2) {  // sorted by start within the group: coll_k[a] is the earliest
        const std::uint32_t src = coll_k[a];
        const int src_pid = gm.gpus[gm.op_gpu[sel[src]]].trace_pid;
        for (std::size_t j = a; j < b; ++j) {
          const std::uint32_t k = coll_k[j];
          late_us[k] = static_cast<float>(static_cast<double>(ops[sel[k]].start_wall_ns - first.start_wall_ns) / 1000.0);
          if (j > a && o.flows && gm.gpus[gm.op_gpu[sel[k]]].trace_pid != src_pid) flows.push_back({src, k});
        }
      }
      a = b;
    }
    if (o.flows) {
      // k-th Send from r to p pairs with the k-th Recv on p from r (by seq, then start)
      auto key = [&](std::uint32_t k, bool send) {
        const OpRecord& x = ops[sel[k]];
        const int me = x.rank, other = x.peer;
        return std::make_tuple(x.comm_hash, send ? me : other, send ? other : me, x.seq, x.start_wall_ns, k);
      };
      std::sort(send_k.begin(), send_k.end(), [&](auto a, auto b) { return key(a, true) < key(b, true); });
      std::sort(recv_k.begin(), recv_k.end(), [&](auto a, auto b) { return key(a, false) < key(b, false); });
      std::size_t r = 0;
      for (std::size_t s = 0; s < send_k.size();) {
        const auto ks = key(send_k[s], true);
        std::size_t se = s;
        while (se < send_k.size() && std::get<0>(key(send_k[se], true)) == std::get<0>(ks) &&
               std::get<1>(key(send_k[se], true)) == std::get<1>(ks) && std::get<2>(key(send_k[se], true)) == std::get<2>(ks))
          ++se;
        auto pair_lt = [&](std::uint32_t k, bool send) {
          auto t = key(k, send);
          return std::make_tuple(std::get<0>(t), std::get<1>(t), std::get<2>(t));
        };
        const auto want = std::make_tuple(std::get<0>(ks), std::get<1>(ks), std::get<2>(ks));
        while (r < recv_k.size() && pair_lt(recv_k[r], false) < want) ++r;
        std::size_t re = r;
        while (re < recv_k.size() && pair_lt(recv_k[re], false) == want) ++re;
        for (std::size_t j = 0; j < se - s && r + j < re; ++j) {
          const std::uint32_t a = send_k[s + j], b = recv_k[r + j];
          if (gm.gpus[gm.op_gpu[sel[a]]].trace_pid != gm.gpus[gm.op_gpu[sel[b]]].trace_pid) flows.push_back({a, b});
        }
        r = re;
        s = se;
      }
    }
    std::sort(flows.begin(), flows.end(), [](const Flow& a, const Flow& b) {
      return std::max(a.src_k, a.dst_k) < std::max(b.src_k, b.dst_k) ||
             (std::max(a.src_k, a.dst_k) == std::max(b.src_k, b.dst_k) && a.dst_k < b.dst_k);
    });
  }

  // ---- instants: marks, drops, truncation, findings
  struct Instant {
    int pid, tid;
    std::int64_t ts;
    std::string name, cat, args;  // args: a JSON object body without braces
  };
  std::vector<Instant> instants;
  struct Window {  // change-point windows on the findings track
    int tid;
    std::int64_t start, end;
    std::string name, args;
  };
  std::vector<Window> windows;
  const std::int64_t win_lo = from, win_hi = to;
  auto in_window = [&](std::int64_t t) { return t >= win_lo && t <= win_hi; };
  std::vector<std::set<std::uint32_t>> file_gpus(res.files.size());
  std::vector<std::int64_t> file_last(res.files.size(), std::numeric_limits<std::int64_t>::min());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!gpu_used[gm.op_gpu[i]]) continue;
    file_gpus[ops[i].file_idx].insert(gm.op_gpu[i]);
    if (ops[i].has_start())
      file_last[ops[i].file_idx] = std::max(file_last[ops[i].file_idx], end_ns_of(ops[i].start_wall_ns, ops[i].dur_us));
  }
  for (std::size_t f = 0; f < res.files.size(); ++f) {
    const FileInfo& fi = res.files[f];
    for (std::uint32_t g : file_gpus[f]) {
      const int pid = gm.gpus[g].trace_pid;
      for (const auto& mk : fi.marks)
        if (in_window(mk.wall_ns))
          instants.push_back({pid, kTidMarkers, mk.wall_ns, "mark: " + mk.label, "mark", ""});
      std::uint64_t dropped = 0;
      std::string dargs;
      for (const auto& [k, n] : fi.stats.dropped) {
        dropped += n;
        if (n) dargs += (dargs.empty() ? "\"" : ",\"") + json_escape(k) + "\":" + std::to_string(n);
      }
      if (fi.stats.present && dropped && in_window(fi.stats.wall_ns))
        instants.push_back({pid, kTidMarkers, fi.stats.wall_ns,
                            "drops: " + std::to_string(dropped) + " records lost (cumulative)", "drops", dargs});
      if ((fi.truncated || fi.corrupt) && file_last[f] != std::numeric_limits<std::int64_t>::min() &&
          in_window(file_last[f]))
        instants.push_back({pid, kTidMarkers, file_last[f], fi.corrupt ? "log corrupt: rest unreadable" : "log truncated",
                            "health", "\"file\":\"" + json_escape(fi.path) + "\",\"error\":\"" + json_escape(fi.error) + "\""});
    }
  }
  if (o.findings) {
    auto comm_ok = [&](std::uint64_t c) { return comm_set.empty() || c == 0 || comm_set.count(c); };
    auto gpu_of = [&](std::uint64_t c, int r) -> int {
      auto it = gm.by_comm_rank.find({c, r});
      if (it == gm.by_comm_rank.end() || !gpu_used[it->second]) return -1;
      return gm.gpus[it->second].trace_pid;
    };
    // stragglers: flagged ranks, marked at their first selected op in that comm
    const StragglerResult sr = find_stragglers(ops, res, o.straggler);
    for (const auto& rl : sr.ranks) {
      if (!rl.flagged || !comm_ok(rl.comm)) continue;
      const int pid = gpu_of(rl.comm, rl.rank);
      std::int64_t t = std::numeric_limits<std::int64_t>::max();
      for (std::uint32_t k = 0; k < sel.size(); ++k)
        if (ops[sel[k]].comm_hash == rl.comm && ops[sel[k]].rank == rl.rank) {
          t = ops[sel[k]].start_wall_ns;
          break;
        }
      if (t == std::numeric_limits<std::int64_t>::max()) continue;
      char b[256];
      std::snprintf(b, sizeof b, "straggler: rank %d of %s last in %.0f%% (+%.1f us)", rl.rank,
                    comm_short(rl.comm, res).c_str(),
                    100.0 * static_cast<double>(rl.last) / static_cast<double>(std::max<std::uint64_t>(1, rl.ops)),
                    rl.last_margin_us);
      char a[256];
      std::snprintf(a, sizeof a, "\"comm\":\"%s\",\"rank\":%d,\"last\":%llu,\"ops\":%llu,\"z\":%.1f,\"mean_lateness_us\":%.2f",
                    hex_hash(rl.comm).c_str(), rl.rank, static_cast<unsigned long long>(rl.last),
                    static_cast<unsigned long long>(rl.ops), rl.z, rl.mean_lateness_us);
      instants.push_back({0, kFindTidStraggler, t, b, "finding,straggler", a});
      if (pid > 0) instants.push_back({pid, kTidMarkers, t, b, "finding,straggler", a});
    }
    const AnomalyResult ar = find_anomalies(data.coll, res, o.anomaly);
    Lanes change_lanes;
    auto add_finding = [&](const Finding& f) {
      if (!comm_ok(f.comm) || f.start_ns == 0) return;
      std::string name = f.kind + ": " + (f.comm_label.empty() ? std::string() : f.comm_label + " ") + f.where;
      char mag[32];
      std::snprintf(mag, sizeof mag, "%.3g", f.magnitude);
      const std::string args = "\"kind\":\"" + json_escape(f.kind) + "\",\"where\":\"" + json_escape(f.where) +
                               "\",\"when\":\"" + json_escape(f.when) + "\",\"magnitude\":" + mag + ",\"evidence\":\"" +
                               json_escape(f.evidence) + "\"";
      const int pid = f.rank >= 0 ? gpu_of(f.comm, f.rank) : -1;
      if (f.kind == "change_point" && f.end_ns > f.start_ns) {
        if (f.end_ns < win_lo || f.start_ns > win_hi) return;
        const int lane = change_lanes.place(f.start_ns, f.end_ns, kMaxChangeLanes);
        if (lane >= 0) windows.push_back({kFindTidChangeBase + lane, f.start_ns, f.end_ns, name, args});
        if (in_window(f.start_ns)) instants.push_back({0, kFindTidChangeBase + std::max(lane, 0), f.start_ns, name, "finding,change_point", args});
        return;
      }
      if (!in_window(f.start_ns)) return;
      const int tid = f.kind == "outlier" ? kFindTidOutlier : f.kind == "bimodal" ? kFindTidBimodal
                    : f.kind == "channel_imbalance" ? kFindTidChannel : kFindTidHca;
      instants.push_back({0, tid, f.start_ns, name, "finding," + f.kind, args});
      if (pid > 0) instants.push_back({pid, kTidMarkers, f.start_ns, name, "finding," + f.kind, args});
    };
    for (const auto& f : ar.findings) add_finding(f);
    for (const auto& f : ar.outliers) add_finding(f);
  }
  std::sort(instants.begin(), instants.end(), [](const Instant& a, const Instant& b) {
    return std::tie(a.ts, a.pid, a.tid, a.name) < std::tie(b.ts, b.pid, b.tid, b.name);
  });
  // thread names for pid 0 and the markers tracks
  bool findings_pid = false;
  for (const auto& in : instants)
    if (in.pid == 0) findings_pid = true;
  if (!windows.empty()) findings_pid = true;
  if (findings_pid) {
    for (const auto& in : instants)
      if (in.pid == 0) {
        const int t = in.tid;
        thread_names[{0, t}] = t == kFindTidStraggler ? "stragglers" : t == kFindTidOutlier ? "outliers"
                             : t == kFindTidBimodal ? "bimodal latency" : t == kFindTidChannel ? "channel imbalance"
                             : t == kFindTidHca ? "HCA" : "change points" + (t > kFindTidChangeBase ? " \u00b7 " + std::to_string(t - kFindTidChangeBase) : std::string());
      }
    for (const auto& w : windows)
      thread_names[{0, w.tid}] = "change points" + (w.tid > kFindTidChangeBase ? " \u00b7 " + std::to_string(w.tid - kFindTidChangeBase) : std::string());
  }

  // ---- counters: network and per-HCA GB/s per GPU, binned
  struct Series {
    std::map<std::string, std::vector<double>> hca;  // dev -> bytes per bin
    std::vector<double> net;                          // bytes per bin
  };
  std::map<std::uint32_t, Series> series;
  std::int64_t span_lo = std::numeric_limits<std::int64_t>::max(), span_hi = std::numeric_limits<std::int64_t>::min();
  for (std::size_t k = 0; k < sel.size(); ++k) {
    if (op_tid[k] < 0) continue;
    const OpRecord& op = ops[sel[k]];
    span_lo = std::min(span_lo, op.start_wall_ns);
    span_hi = std::max(span_hi, end_ns_of(op.start_wall_ns, op.dur_us));
  }
  std::size_t nbins = 0;
  std::int64_t bin_ns = 1;
  if (o.counters && span_hi > span_lo) {
    std::size_t ngpu_used = 0;
    for (bool u : gpu_used) ngpu_used += u;
    nbins = std::clamp<std::size_t>(200000 / std::max<std::size_t>(1, ngpu_used), 16, 2000);
    bin_ns = std::max<std::int64_t>(1, (span_hi - span_lo + static_cast<std::int64_t>(nbins) - 1) / static_cast<std::int64_t>(nbins));
    nbins = static_cast<std::size_t>((span_hi - span_lo) / bin_ns + 1);
    auto spread = [&](std::vector<double>& v, std::int64_t s, std::int64_t e, double bytes) {
      if (v.empty()) v.assign(nbins, 0.0);
      if (e <= s) {
        v[static_cast<std::size_t>((s - span_lo) / bin_ns)] += bytes;
        return;
      }
      const double per_ns = bytes / static_cast<double>(e - s);
      for (std::int64_t b = (s - span_lo) / bin_ns; b < static_cast<std::int64_t>(nbins); ++b) {
        const std::int64_t lo = span_lo + b * bin_ns, hi = lo + bin_ns;
        if (lo >= e) break;
        v[static_cast<std::size_t>(b)] += per_ns * static_cast<double>(std::min(hi, e) - std::max(lo, s));
      }
    };
    for (std::size_t k = 0; k < sel.size(); ++k) {
      if (op_tid[k] < 0) continue;
      const std::uint32_t i = sel[k];
      const OpRecord& op = ops[i];
      const std::int64_t e = end_ns_of(op.start_wall_ns, op.dur_us);
      if (i < extra.size() && !extra[i].hcas.empty()) {
        Series& s = series[gm.op_gpu[i]];
        for (const auto& h : extra[i].hcas)
          if (h.bytes) spread(s.hca[h.dev], op.start_wall_ns, e, static_cast<double>(h.bytes));
      }
      if (i < data.net_bytes.size() && data.net_bytes[i])
        spread(series[gm.op_gpu[i]].net, op.start_wall_ns, e, static_cast<double>(data.net_bytes[i]));
    }
  }

  // ---- write
  Json j(out);
  j.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  // metadata events
  auto meta = [&](const char* what, int pid, int tid, const std::string& name_or_empty, long long sort) {
    j.begin('M', what, "__metadata", pid, tid, 0);
    j.raw(",\"args\":{");
    if (!name_or_empty.empty()) {
      j.raw("\"name\":");
      j.str(name_or_empty);
    } else {
      j.raw("\"sort_index\":");
      j.i64(sort);
    }
    j.raw("}");
    j.end();
    ++st.metadata;
  };
  if (findings_pid) {
    meta("process_name", 0, 0, "findings", 0);
    meta("process_sort_index", 0, 0, "", 0);
  }
  std::set<std::pair<int, int>> tids;
  for (std::size_t g = 0; g < gm.gpus.size(); ++g) {
    if (!gpu_used[g]) continue;
    const int pid = gm.gpus[g].trace_pid;
    meta("process_name", pid, 0, gm.gpus[g].label, 0);
    meta("process_sort_index", pid, 0, "", pid);
    thread_names[{pid, kTidMarkers}] = "markers \u00b7 counters";
    ++st.processes;
  }
  for (const auto& [pt, name] : thread_names) {
    meta("thread_name", pt.first, pt.second, name, 0);
    meta("thread_sort_index", pt.first, pt.second, "", pt.second);
    ++st.threads;
  }
  // op slices, channel slices, flows
  std::size_t fi = 0;
  std::uint64_t flow_id = 0;
  for (std::size_t k = 0; k < sel.size(); ++k) {
    const std::uint32_t i = sel[k];
    const OpRecord& op = ops[i];
    const int pid = gm.gpus[gm.op_gpu[i]].trace_pid;
    if (op_tid[k] >= 0) {
      const std::string_view fname = to_string(op.func);
      j.begin('X', fname, to_string(op.kind), pid, op_tid[k], op.start_wall_ns - t0);
      j.raw(",\"dur\":");
      j.us(end_ns_of(op.start_wall_ns, op.dur_us) - op.start_wall_ns);
      j.raw(",\"args\":{\"op\":");
      j.str(fname);
      j.raw(",\"bytes\":");
      j.u64(op.bytes);
      j.raw(",\"seq\":");
      j.u64(op.seq);
      if (op.kind == OpKind::kColl) {
        j.raw(",\"algo\":");
        j.str(to_string(op.algo));
        j.raw(",\"proto\":");
        j.str(to_string(op.proto));
      }
      if (op.kind == OpKind::kP2p) {
        j.raw(",\"peer\":");
        j.i64(op.peer);
      }
      if (op.has_busbw()) {
        j.raw(",\"busbw_gbs\":");
        j.num(op.busbw_gbs);
      }
      j.raw(",\"rank\":");
      j.i64(op.rank);
      j.raw(",\"nranks\":");
      j.i64(op.nranks);
      j.raw(",\"timing\":");
      j.str(to_string(op.timing));
      if (op.transport) j.raw(op.transport == 2 ? ",\"transport\":\"network\"" : ",\"transport\":\"intra_node\"");
      if (i < data.net_bytes.size() && data.net_bytes[i]) {
        j.raw(",\"net_bytes\":");
        j.u64(data.net_bytes[i]);
      }
      if (op.nchannels) {
        j.raw(",\"nchannels\":");
        j.i64(op.nchannels);
      }
      if (op.ch_balance >= 0) {
        j.raw(",\"ch_balance\":");
        j.num(static_cast<double>(op.ch_balance));
      }
      if (!std::isnan(late_us[k])) {
        j.raw(",\"late_us\":");
        j.num(static_cast<double>(late_us[k]));
      }
      if (op.flags & kFlagReclaimed) j.raw(",\"reclaimed\":true");
      if (op.flags & kFlagPartial) j.raw(",\"partial\":true");
      if (op.flags & kFlagGraph) j.raw(",\"graph\":true");
      j.raw("}");
      j.end();
      ++st.ops_written;
      if (st.channel_tracks) {
        for (std::size_t e = data.ch_begin(i); e < data.ch_end[i]; ++e) {
          if (ch_tid[e] < 0) continue;
          const auto& chx = data.ch[e];
          const std::int64_t s = op.start_wall_ns + std::llround(static_cast<double>(chx.off_us) * 1000.0);
          j.begin('X', fname, "channel", pid, ch_tid[e], s - t0);
          j.raw(",\"dur\":");
          j.us(end_ns_of(s, static_cast<double>(chx.dur_us)) - s);
          j.raw(",\"args\":{\"channel\":");
          j.i64(chx.channel);
          j.raw(",\"seq\":");
          j.u64(op.seq);
          j.raw("}");
          j.end();
          ++st.channel_slices;
        }
      }
    }
    // flows whose later end is this op
    while (fi < flows.size() && std::max(flows[fi].src_k, flows[fi].dst_k) <= k) {
      const Flow& f = flows[fi++];
      const OpRecord& a = ops[sel[f.src_k]];
      const OpRecord& b = ops[sel[f.dst_k]];
      char id[24];
      std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(++flow_id));
      const std::string_view fname = to_string(a.func);
      const std::string_view cat = a.kind == OpKind::kP2p ? "flow,p2p" : "flow,coll";
      j.begin('s', fname, cat, gm.gpus[gm.op_gpu[sel[f.src_k]]].trace_pid, op_tid[f.src_k], a.start_wall_ns - t0);
      j.raw(",\"id\":\"");
      j.raw(id);
      j.raw("\"");
      j.end();
      j.begin('f', fname, cat, gm.gpus[gm.op_gpu[sel[f.dst_k]]].trace_pid, op_tid[f.dst_k], b.start_wall_ns - t0);
      j.raw(",\"bp\":\"e\",\"id\":\"");
      j.raw(id);
      j.raw("\"");
      j.end();
      st.flows += 2;
    }
  }
  // change windows
  for (const auto& w : windows) {
    j.begin('X', w.name, "finding,change_point", 0, w.tid, w.start - t0);
    j.raw(",\"dur\":");
    j.us(w.end - w.start);
    j.raw(",\"args\":{");
    j.raw(w.args);
    j.raw("}");
    j.end();
  }
  // counters
  for (const auto& [g, s] : series) {
    const int pid = gm.gpus[g].trace_pid;
    const double to_gbs = 1.0 / static_cast<double>(bin_ns);  // bytes/ns == GB/s
    auto emit = [&](const char* name, const std::vector<std::pair<std::string, const std::vector<double>*>>& cols) {
      std::vector<double> prev(cols.size(), -1.0);
      for (std::size_t b = 0; b <= nbins; ++b) {
        bool changed = false;
        std::vector<double> cur(cols.size());
        for (std::size_t c = 0; c < cols.size(); ++c) {
          cur[c] = b < nbins ? (*cols[c].second)[b] * to_gbs : 0.0;
          if (std::fabs(cur[c] - prev[c]) > 1e-9) changed = true;
        }
        if (!changed) continue;
        const std::int64_t ts = span_lo + static_cast<std::int64_t>(b) * bin_ns;
        j.begin('C', name, "counter", pid, kTidMarkers, std::min(ts, span_hi) - t0);
        j.raw(",\"args\":{");
        for (std::size_t c = 0; c < cols.size(); ++c) {
          if (c) j.ch(',');
          j.str(cols[c].first);
          j.ch(':');
          j.num(cur[c]);
        }
        j.raw("}");
        j.end();
        ++st.counters;
        prev = cur;
      }
    };
    if (!s.net.empty()) emit("net GB/s", {{"send+recv", &s.net}});
    if (!s.hca.empty()) {
      std::vector<std::pair<std::string, const std::vector<double>*>> cols;
      for (const auto& [dev, v] : s.hca) cols.push_back({"hca " + dev, &v});
      emit("HCA GB/s", cols);
    }
  }
  // instants
  for (const auto& in : instants) {
    j.begin('i', in.name, in.cat, in.pid, in.tid, in.ts - t0);
    j.raw(",\"s\":\"t\",\"args\":{");
    j.raw(in.args);
    j.raw("}");
    j.end();
    ++st.instants;
  }
  st.events = j.events();
  // top-level metadata
  j.raw("\n],\"metadata\":{\"tool\":\"nccl-inspector trace\",\"version\":\"0.1.0\",\"t0_wall_ns\":\"");
  j.i64(t0);
  j.raw("\",\"t0_utc\":\"");
  j.raw(iso_utc(t0));
  j.raw("\",\"clock\":\"ts = microseconds since t0 on the aligned wall clock (start_wall_ns: GPU times converted with each comm's clock estimate)\"");
  std::map<std::uint64_t, std::int64_t> unc;
  for (const auto& f : res.files)
    for (const auto& c : f.clocks)
      if (c.uncertainty_ns >= 0) unc[c.comm_hash] = std::max(unc[c.comm_hash], c.uncertainty_ns);
  j.raw(",\"clock_uncertainty_ns\":{");
  bool first = true;
  for (const auto& [c, u] : unc) {
    if (!first) j.ch(',');
    first = false;
    j.str(comm_short(c, res) + " " + hex_hash(c));
    j.ch(':');
    j.i64(u);
  }
  j.raw("},\"gpu_identity\":\"a process per GPU: (host, pid, CUDA device from the comm records' cuda_dev; inferred from comm order when absent), rank = meta job.global_rank when set, else the rank in the widest communicator; see docs/analysis.md\"");
  j.raw(",\"ops_input\":");
  j.u64(st.ops_input);
  j.raw(",\"ops_selected\":");
  j.u64(st.ops_selected);
  j.raw(",\"ops_written\":");
  j.u64(st.ops_written);
  j.raw(",\"ops_without_start\":");
  j.u64(st.ops_no_start);
  j.raw(",\"sample_every\":");
  j.u64(st.sample);
  j.raw(",\"channel_tracks\":");
  j.raw(st.channel_tracks ? "true" : "false");
  if (!st.channel_note.empty()) {
    j.raw(",\"channel_tracks_note\":");
    j.str(st.channel_note);
  }
  j.raw(",\"overflow_ops\":");
  j.u64(st.overflow_ops);
  j.raw(",\"lane_dropped\":");
  j.u64(st.lane_dropped);
  if (!o.from.empty() || !o.to.empty()) {
    j.raw(",\"window_utc\":[");
    j.str(from == std::numeric_limits<std::int64_t>::min() ? "" : iso_utc(from));
    j.ch(',');
    j.str(to == std::numeric_limits<std::int64_t>::max() ? "" : iso_utc(to));
    j.ch(']');
  }
  j.raw("}}\n");
  j.flush();
  st.bytes = j.bytes();
  if (!j.ok()) error = "write error";
  return st;
}

bool write_trace_file(const ViewSink& data, const ReadResult& res, const TraceOptions& o, const std::string& path,
                      TraceStats& stats, std::string& error) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) {
    error = "cannot write " + path;
    return false;
  }
  if (gz) {
    GzBuf buf(f.get());
    std::ostream os(&buf);
    stats = write_trace(data, res, o, os, error);
    if (!error.empty()) return false;
    if (!os || !buf.finish()) {
      error = "write error on " + path;
      return false;
    }
  } else {
    struct FileBuf : std::streambuf {
      std::FILE* fp;
      explicit FileBuf(std::FILE* p) : fp(p) {}
      std::streamsize xsputn(const char* s, std::streamsize n) override {
        return static_cast<std::streamsize>(std::fwrite(s, 1, static_cast<std::size_t>(n), fp));
      }
      int overflow(int c) override { return c == traits_type::eof() ? 0 : std::fputc(c, fp); }
    } buf(f.get());
    std::ostream os(&buf);
    stats = write_trace(data, res, o, os, error);
    if (!error.empty()) return false;
    if (!os || std::fflush(f.get()) != 0) {
      error = "write error on " + path;
      return false;
    }
  }
  if (std::fclose(f.release()) != 0) {
    error = "write error on " + path;
    return false;
  }
  return true;
}

}  // namespace nccl_inspector::analysis
