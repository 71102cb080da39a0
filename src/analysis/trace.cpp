#include "src/analysis/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "include/nccl_inspector/version.h"
#include "src/analysis/analysis.h"
#include "src/analysis/stragglers.h"
#include "src/analysis/table.h"
#include "src/analysis/tags.h"
#include "src/analysis/trace_json.h"

namespace ni::analysis {

namespace {

constexpr int kTidMarkers = 1;
constexpr int kCommTidStride = 10000;
constexpr int kMaxOpLanes = 999;     // tid 10000*(c+1) + 0..998
constexpr int kChannelBase = 1000;   // tid 10000*(c+1) + 1000 + 10*ch + lane
constexpr int kMaxChannelLanes = 10;
constexpr int kMaxChannel = 899;
// pid 0 (findings) threads: the detectors' tracks keep fixed tids (1-5), others follow
// (6-19); time windows go on lanes of 10 from 20 ("change points") and 30, 40, ...
constexpr int kFindTidFree = 6, kFindTidWindowBase = 20, kMaxChangeLanes = 10;

std::int64_t end_ns_of(std::int64_t start, double dur_us) {
  return start + (std::isfinite(dur_us) && dur_us > 0 ? std::llround(dur_us * 1000.0) : 0);
}

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

// The tracks of the findings process (pid 0), by the markers' track names.
class FindingTracks {
 public:
  int instant_tid(const std::string& track) {
    static const std::map<std::string, int> kFixed = {
        {"stragglers", 1}, {"outliers", 2}, {"bimodal latency", 3}, {"channel imbalance", 4}, {"HCA", 5}};
    auto it = tid_.find(track);
    if (it != tid_.end()) return it->second;
    auto f = kFixed.find(track);
    const int tid = f != kFixed.end() ? f->second : std::min(next_free_++, kFindTidWindowBase - 1);
    names_.emplace(tid, track);
    return tid_[track] = tid;
  }
  // Lane `lane` of a window track.
  int window_tid(const std::string& track, int lane) {
    auto it = window_base_.find(track);
    if (it == window_base_.end()) {
      const int base = track == "change points" ? kFindTidWindowBase : kFindTidWindowBase + 10 * next_window_++;
      it = window_base_.emplace(track, base).first;
    }
    const int tid = it->second + lane;
    names_.emplace(tid, track + (lane ? " \u00b7 " + std::to_string(lane) : std::string()));
    return tid;
  }
  Lanes& lanes(const std::string& track) { return lanes_[track]; }
  std::string name_of(int tid) const {
    auto it = names_.find(tid);
    return it == names_.end() ? std::string() : it->second;
  }

 private:
  std::map<std::string, int> tid_, window_base_;
  std::map<std::string, Lanes> lanes_;
  std::map<int, std::string> names_;
  int next_free_ = kFindTidFree, next_window_ = 1;
};

// A marker's args when its analysis gives none: what, where, when, how big, the evidence.
std::string default_args(const Marker& m) {
  char mag[32];
  std::snprintf(mag, sizeof mag, "%.3g", m.magnitude);
  return "\"kind\":\"" + json_escape(m.kind) + "\",\"where\":\"" + json_escape(m.where) + "\",\"when\":\"" +
         json_escape(m.when) + "\",\"magnitude\":" + mag + ",\"evidence\":\"" + json_escape(m.evidence) + "\"";
}

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

namespace {

struct Flow {
  std::uint32_t src_k, dst_k;  // indices into the selection
};
struct Instant {
  int pid, tid;
  std::int64_t ts;
  std::string name, cat, args;  // args: a JSON object body without braces
};
struct Window {  // time windows (change points) on a findings track
  int tid;
  std::int64_t start, end;
  std::string name, args;
};
struct Series {
  std::map<std::string, std::vector<double>> hca;  // dev -> bytes per bin
  std::vector<double> net;                          // bytes per bin
};

// One trace: the planning stages fill the members in order (selection, lanes,
// flows, markers, counters), then one writer per part of the file reads them.
class TraceBuild {
 public:
  TraceBuild(const ViewSink& data, const ReadResult& res, const TraceOptions& o)
      : data_(data), ops_(data.coll.ops), res_(res), o_(o), given_(o.given),
        gm_(given_ ? given_->gpus_of(ops_) : map_gpus(ops_, res)),
        tags_((given_ ? given_->tagged : !data.tagged.empty()) ? tag_names(res, o.tag_map) : TagNames()) {
    st.ops_input = given_ ? given_->ops_input : ops_.size();
  }
  // t0, filters and the selection; false + error when there is nothing to place or an argument is wrong.
  bool select(std::string& error) {
    return find_t0(error) && filter_.init(o_, gm_, res_, t0_, error) && (select_ops(), true);
  }
  void plan() {
    decide_channel_tracks();
    assign_lanes();
    plan_flows();
    health_markers();
    if (o_.findings) finding_markers();
    name_finding_tracks();
    bin_counters();
  }
  void write(std::ostream& out, std::string& error);

  TraceStats st;

 private:
  bool find_t0(std::string& error);
  bool passes(std::size_t i) const { return filter_.passes(ops_[i], gm_.gpus[gm_.op_gpu[i]].rank); }
  void select_ops();
  void sort_selection();
  void decide_channel_tracks();
  void assign_lanes();
  void assign_channel_lanes(std::uint32_t i, std::uint32_t g, int c, int pid);
  void plan_flows();
  void pair_collectives(std::vector<std::uint32_t>& coll_k);
  void pair_p2p(std::vector<std::uint32_t>& send_k, std::vector<std::uint32_t>& recv_k);
  void health_markers();
  void file_markers(std::size_t f, std::uint32_t g, std::int64_t last);
  void finding_markers();
  void add_marker(const Marker& m);
  void name_finding_tracks();
  void bin_counters();
  void spread(std::vector<double>& v, std::int64_t s, std::int64_t e, double bytes) const;

  void write_metadata(TraceJson& j);
  void write_ops(TraceJson& j);
  void write_op(TraceJson& j, std::size_t k);
  void write_channels(TraceJson& j, std::size_t k);
  void write_flow(TraceJson& j, const Flow& f, std::uint64_t id);
  void write_windows(TraceJson& j);
  void write_counters(TraceJson& j);
  void write_counter(TraceJson& j, int pid, const char* name,
                     const std::vector<std::pair<std::string, const std::vector<double>*>>& cols);
  void write_instants(TraceJson& j);
  void write_footer(TraceJson& j);

  bool in_window(std::int64_t t) const { return filter_.in_window(t); }
  int cidx(std::uint32_t i) const { return gm_.comm_index.at(ops_[i].comm_hash); }
  int pid_of_sel(std::uint32_t k) const { return gm_.gpus[gm_.op_gpu[sel_[k]]].trace_pid; }

  const ViewSink& data_;
  const std::vector<Op>& ops_;
  const ReadResult& res_;
  const TraceOptions& o_;
  const TraceGlobals* given_;  // the bounded read's view of every op (nullptr: ops_ are every op)
  const GpuMap gm_;
  const TagNames tags_;  // names of the user tags (only when some op has one)
  std::int64_t t0_ = std::numeric_limits<std::int64_t>::max();
  TraceFilter filter_;
  std::vector<std::uint32_t> sel_;        // selected op indices, in time order
  std::vector<std::int32_t> op_tid_;      // per selected op: its track (-1: dropped)
  std::vector<std::int32_t> ch_tid_;      // per entry of data.ch (only the selected ops' entries are set)
  std::map<std::pair<int, int>, std::string> thread_names_;  // (pid, tid) -> name
  std::map<std::tuple<std::uint32_t, int, int>, Lanes> ch_lanes_;  // (gpu, comm, ch)
  std::vector<bool> gpu_used_;
  std::vector<Flow> flows_;
  std::vector<float> late_us_;            // per selected op: start - earliest rank's start
  std::vector<Instant> instants_;
  std::vector<Window> windows_;
  FindingTracks tracks_;
  bool findings_pid_ = false;
  std::map<std::uint32_t, Series> series_;  // per GPU
  std::int64_t span_lo_ = std::numeric_limits<std::int64_t>::max(), span_hi_ = std::numeric_limits<std::int64_t>::min();
  std::size_t nbins_ = 0;
  std::int64_t bin_ns_ = 1;
};

bool TraceBuild::find_t0(std::string& error) {
  if (given_ != nullptr) {
    t0_ = given_->t0;
    st.ops_no_start = given_->ops_no_start;
  } else {
    for (const auto& op : ops_) {
      if (op.has_start()) t0_ = std::min(t0_, op.start_wall_ns);
      else ++st.ops_no_start;
    }
  }
  if (t0_ != std::numeric_limits<std::int64_t>::max()) return true;
  error = "no op has a start time (upstream Inspector v4.0 logs, or no GPU clock estimate yet): nothing to place on a timeline";
  return false;
}

// The ops that pass the filters, sampled by seq (the same instances on every rank), in time order.
void TraceBuild::select_ops() {
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (passes(i)) sel_.push_back(static_cast<std::uint32_t>(i));
  st.ops_selected = sel_.size();
  if (given_ != nullptr) {  // the bounded read kept only these, sampled as below from every op
    st.ops_selected = given_->ops_selected;
    st.sample = given_->sample;
    sort_selection();
    return;
  }
  std::uint64_t N = std::max<std::uint64_t>(1, o_.sample);
  auto count_sampled = [&](std::uint64_t n) {
    std::uint64_t k = 0;
    for (auto i : sel_) k += ops_[i].seq % n == 0;
    return k;
  };
  N = trace_sample(N, N == 1 ? sel_.size() : count_sampled(N), o_.max_ops);
  st.sample = N;
  if (N > 1)
    sel_.erase(std::remove_if(sel_.begin(), sel_.end(), [&](std::uint32_t i) { return ops_[i].seq % N != 0; }),
               sel_.end());
  sort_selection();
}

void TraceBuild::sort_selection() {
  const auto& gm = gm_;
  std::sort(sel_.begin(), sel_.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Op& x = ops_[a];
    const Op& y = ops_[b];
    return std::make_tuple(x.start_wall_ns, gm.op_gpu[a], cidx(a), x.seq, x.func, x.dur_us, a) <
           std::make_tuple(y.start_wall_ns, gm.op_gpu[b], cidx(b), y.seq, y.func, y.dur_us, b);
  });
}

void TraceBuild::decide_channel_tracks() {
  if (given_ ? given_->ch_capped : data_.channel_capped) st.channel_note = "more channel times than the analyzer keeps";
  else if (given_ ? !given_->ch_any : data_.ch.empty()) st.channel_note = "no ch_times in the logs (set NCCL_INSPECTOR_DUMP_VERBOSE=1)";
  else if (o_.channel_ops_max == 0) st.channel_note = "disabled";
  else if (sel_.size() > o_.channel_ops_max)
    st.channel_note = "more than " + std::to_string(o_.channel_ops_max) + " ops (--channel-ops-max)";
  st.channel_tracks = st.channel_note.empty();
}

// Which tid each slice goes to: per (GPU, comm) the first lane free at its start.
void TraceBuild::assign_lanes() {
  op_tid_.assign(sel_.size(), -1);
  if (st.channel_tracks) ch_tid_.assign(data_.ch.size(), -1);
  gpu_used_.assign(gm_.gpus.size(), false);
  std::map<std::pair<std::uint32_t, int>, Lanes> op_lanes;  // (gpu, comm) -> lanes
  for (std::size_t k = 0; k < sel_.size(); ++k) {
    const std::uint32_t i = sel_[k];
    const Op& op = ops_[i];
    const std::uint32_t g = gm_.op_gpu[i];
    const int c = cidx(i);
    const int pid = gm_.gpus[g].trace_pid;
    gpu_used_[g] = true;
    const int lane = op_lanes[{g, c}].place(op.start_wall_ns, end_ns_of(op.start_wall_ns, op.dur_us), kMaxOpLanes);
    if (lane < 0) {
      ++st.lane_dropped;
      continue;
    }
    if (lane > 0) ++st.overflow_ops;
    const int tid = kCommTidStride * (c + 1) + lane;
    op_tid_[k] = tid;
    if (!thread_names_.count({pid, tid}))
      thread_names_[{pid, tid}] =
          comm_display(op.comm_hash, res_) + (lane ? " \u00b7 overflow " + std::to_string(lane) : "");
    if (st.channel_tracks) assign_channel_lanes(i, g, c, pid);
  }
}

void TraceBuild::assign_channel_lanes(std::uint32_t i, std::uint32_t g, int c, int pid) {
  const Op& op = ops_[i];
  for (std::size_t e = data_.ch_begin(i); e < data_.ch_end[i]; ++e) {
    const auto& chx = data_.ch[e];
    if (chx.channel > kMaxChannel) continue;
    const std::int64_t s = op.start_wall_ns + std::llround(static_cast<double>(chx.off_us) * 1000.0);
    const int cl = ch_lanes_[{g, c, chx.channel}].place(s, end_ns_of(s, static_cast<double>(chx.dur_us)), kMaxChannelLanes);
    if (cl < 0) {
      ++st.lane_dropped;
      continue;
    }
    const int ctid = kCommTidStride * (c + 1) + kChannelBase + 10 * chx.channel + cl;
    ch_tid_[e] = ctid;
    if (!thread_names_.count({pid, ctid}))
      thread_names_[{pid, ctid}] = comm_short(op.comm_hash, res_) + " \u00b7 ch " + std::to_string(chx.channel) +
                                   (cl ? " \u00b7 overflow " + std::to_string(cl) : "");
  }
}

// Flows and lateness: collective instances (comm, func, seq) across ranks; Send -> Recv.
void TraceBuild::plan_flows() {
  late_us_.assign(sel_.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<std::uint32_t> coll_k, send_k, recv_k;
  for (std::uint32_t k = 0; k < sel_.size(); ++k) {
    if (op_tid_[k] < 0) continue;
    const Op& op = ops_[sel_[k]];
    if (op.kind == OpKind::kP2p) {
      if (op.func == Func::kSend) send_k.push_back(k);
      else if (op.func == Func::kRecv) recv_k.push_back(k);
    } else {
      coll_k.push_back(k);
    }
  }
  pair_collectives(coll_k);
  if (o_.flows) pair_p2p(send_k, recv_k);
  std::sort(flows_.begin(), flows_.end(), [](const Flow& a, const Flow& b) {
    return std::max(a.src_k, a.dst_k) < std::max(b.src_k, b.dst_k) ||
           (std::max(a.src_k, a.dst_k) == std::max(b.src_k, b.dst_k) && a.dst_k < b.dst_k);
  });
}

// Each instance's earliest rank: every rank's lateness from it, and a flow to every other process.
void TraceBuild::pair_collectives(std::vector<std::uint32_t>& coll_k) {
  const auto& ops = ops_;
  const auto& sel = sel_;
  std::sort(coll_k.begin(), coll_k.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Op& x = ops[sel[a]];
    const Op& y = ops[sel[b]];
    return std::make_tuple(x.comm_hash, x.func, x.seq, x.start_wall_ns, a) <
           std::make_tuple(y.comm_hash, y.func, y.seq, y.start_wall_ns, b);
  });
  std::vector<std::uint32_t> group;
  std::vector<double> late;
  for (std::size_t a = 0; a < coll_k.size();) {
    const Op& first = ops[sel[coll_k[a]]];
    std::size_t b = a + 1;
    while (b < coll_k.size()) {
      const Op& x = ops[sel[coll_k[b]]];
      if (x.comm_hash != first.comm_hash || x.func != first.func || x.seq != first.seq) break;
      ++b;
    }
    if (b - a >= 2) {  // sorted by start within the group: coll_k[a] is the earliest
      const std::uint32_t src = coll_k[a];
      const int src_pid = pid_of_sel(src);
      group.clear();
      for (std::size_t j = a; j < b; ++j) group.push_back(sel[coll_k[j]]);
      // Lateness measured without clocks where the ranks are GPU-timed (stragglers.h).
      if (instance_lateness(ops, group, 0, group.size(), late))
        for (std::size_t j = a; j < b; ++j) late_us_[coll_k[j]] = static_cast<float>(late[j - a]);
      // No arrow to a rank that started at the same nanosecond: it says
      // nothing, and viewers cannot order a flow whose two ends share a
      // timestamp (Chrome's trace engine then drops it).
      const std::int64_t src_start = ops[sel[src]].start_wall_ns;
      for (std::size_t j = a + 1; j < b; ++j)
        if (o_.flows && pid_of_sel(coll_k[j]) != src_pid && ops[sel[coll_k[j]]].start_wall_ns != src_start)
          flows_.push_back({src, coll_k[j]});
    }
    a = b;
  }
}

// The k-th Send from r to p pairs with the k-th Recv on p from r (by seq, then start).
void TraceBuild::pair_p2p(std::vector<std::uint32_t>& send_k, std::vector<std::uint32_t>& recv_k) {
  auto key = [&](std::uint32_t k, bool send) {
    const Op& x = ops_[sel_[k]];
    const int me = x.rank, other = x.peer;
    return std::make_tuple(x.comm_hash, send ? me : other, send ? other : me, x.seq, x.start_wall_ns, k);
  };
  std::sort(send_k.begin(), send_k.end(), [&](auto a, auto b) { return key(a, true) < key(b, true); });
  std::sort(recv_k.begin(), recv_k.end(), [&](auto a, auto b) { return key(a, false) < key(b, false); });
  auto pair_of = [&](std::uint32_t k, bool send) {
    auto t = key(k, send);
    return std::make_tuple(std::get<0>(t), std::get<1>(t), std::get<2>(t));
  };
  std::size_t r = 0;
  for (std::size_t s = 0; s < send_k.size();) {
    const auto want = pair_of(send_k[s], true);
    std::size_t se = s;
    while (se < send_k.size() && pair_of(send_k[se], true) == want) ++se;
    while (r < recv_k.size() && pair_of(recv_k[r], false) < want) ++r;
    std::size_t re = r;
    while (re < recv_k.size() && pair_of(recv_k[re], false) == want) ++re;
    for (std::size_t j = 0; j < se - s && r + j < re; ++j) {
      const std::uint32_t a = send_k[s + j], b = recv_k[r + j];
      if (pid_of_sel(a) != pid_of_sel(b) && ops_[sel_[a]].start_wall_ns != ops_[sel_[b]].start_wall_ns)
        flows_.push_back({a, b});
    }
    r = re;
    s = se;
  }
}

// Marks, drops and truncation on the markers track of every GPU a file's ops ran on.
void TraceBuild::health_markers() {
  std::vector<std::set<std::uint32_t>> file_gpus(res_.files.size());
  std::vector<std::int64_t> file_last(res_.files.size(), std::numeric_limits<std::int64_t>::min());
  if (given_ != nullptr) {  // every op's (file, comm, rank), its GPU and latest end
    for (const auto& [k, ki] : given_->keys) {
      if (!gpu_used_[ki.gpu]) continue;
      file_gpus[k.file].insert(ki.gpu);
      if (ki.any_start) file_last[k.file] = std::max(file_last[k.file], ki.last_end);
    }
  }
  for (std::size_t i = 0; given_ == nullptr && i < ops_.size(); ++i) {
    if (!gpu_used_[gm_.op_gpu[i]]) continue;
    file_gpus[ops_[i].file_idx].insert(gm_.op_gpu[i]);
    if (ops_[i].has_start())
      file_last[ops_[i].file_idx] = std::max(file_last[ops_[i].file_idx], end_ns_of(ops_[i].start_wall_ns, ops_[i].dur_us));
  }
  for (std::size_t f = 0; f < res_.files.size(); ++f)
    for (std::uint32_t g : file_gpus[f]) file_markers(f, g, file_last[f]);
}

void TraceBuild::file_markers(std::size_t f, std::uint32_t g, std::int64_t last) {
  const FileInfo& fi = res_.files[f];
  const int pid = gm_.gpus[g].trace_pid;
  for (const auto& mk : fi.marks)
    if (in_window(mk.wall_ns)) instants_.push_back({pid, kTidMarkers, mk.wall_ns, "mark: " + mk.label, "mark", ""});
  std::uint64_t dropped = 0;
  std::string dargs;
  for (const auto& [k, n] : fi.stats.dropped) {
    dropped += n;
    if (n) dargs += (dargs.empty() ? "\"" : ",\"") + json_escape(k) + "\":" + std::to_string(n);
  }
  if (fi.stats.present && dropped && in_window(fi.stats.wall_ns))
    instants_.push_back({pid, kTidMarkers, fi.stats.wall_ns,
                         "drops: " + std::to_string(dropped) + " records lost (cumulative)", "drops", dargs});
  if ((fi.truncated || fi.corrupt) && last != std::numeric_limits<std::int64_t>::min() && in_window(last))
    instants_.push_back({pid, kTidMarkers, last, fi.corrupt ? "log corrupt: rest unreadable" : "log truncated", "health",
                         "\"file\":\"" + json_escape(fi.path) + "\",\"error\":\"" + json_escape(fi.error) + "\""});
}

// The markers of every registered analysis that runs on ops (analysis.h).
void TraceBuild::finding_markers() {
  if (given_ != nullptr) {
    for (const auto& m : given_->markers) add_marker(m);
    return;
  }
  for (const auto& ran : run_op_analyses(data_.coll, res_))
    for (const auto& m : ran.result.markers) add_marker(m);
}

void TraceBuild::add_marker(const Marker& m) {
  if (!m.in_trace || !(m.comm == 0 || filter_.comm_shown(m.comm))) return;
  const std::string name = !m.trace_name.empty() ? m.trace_name
                           : m.kind + ": " + (m.comm_label.empty() ? std::string() : m.comm_label + " ") + m.where;
  const std::string args = !m.trace_args.empty() ? m.trace_args : default_args(m);
  const std::string cat = "finding," + m.kind;
  int pid = -1;  // the rank's process, when it is shown
  if (auto it = gm_.by_comm_rank.find({m.comm, m.rank}); m.rank >= 0 && it != gm_.by_comm_rank.end() && gpu_used_[it->second])
    pid = gm_.gpus[it->second].trace_pid;
  std::int64_t t = m.start_ns;
  if (m.at_first_op) {  // the rank's first selected op in the communicator
    t = std::numeric_limits<std::int64_t>::max();
    for (std::uint32_t k = 0; k < sel_.size(); ++k)
      if (ops_[sel_[k]].comm_hash == m.comm && ops_[sel_[k]].rank == m.rank) {
        t = ops_[sel_[k]].start_wall_ns;
        break;
      }
    if (t == std::numeric_limits<std::int64_t>::max()) return;
  } else if (t == 0) {
    return;
  } else if (m.window) {
    if (m.end_ns < filter_.from() || m.start_ns > filter_.to()) return;
    const int lane = tracks_.lanes(m.track).place(m.start_ns, m.end_ns, kMaxChangeLanes);
    if (lane >= 0) windows_.push_back({tracks_.window_tid(m.track, lane), m.start_ns, m.end_ns, name, args});
    if (in_window(m.start_ns))
      instants_.push_back({0, tracks_.window_tid(m.track, std::max(lane, 0)), m.start_ns, name, cat, args});
    return;
  } else if (!in_window(t)) {
    return;
  }
  instants_.push_back({0, tracks_.instant_tid(m.track), t, name, cat, args});
  if (pid > 0) instants_.push_back({pid, kTidMarkers, t, name, cat, args});
}

// Instants in time order; the findings process and its tracks are named when used.
void TraceBuild::name_finding_tracks() {
  std::sort(instants_.begin(), instants_.end(), [](const Instant& a, const Instant& b) {
    return std::tie(a.ts, a.pid, a.tid, a.name) < std::tie(b.ts, b.pid, b.tid, b.name);
  });
  for (const auto& in : instants_)
    if (in.pid == 0) findings_pid_ = true;
  if (!windows_.empty()) findings_pid_ = true;
  if (!findings_pid_) return;
  for (const auto& in : instants_)
    if (in.pid == 0) thread_names_[{0, in.tid}] = tracks_.name_of(in.tid);
  for (const auto& w : windows_) thread_names_[{0, w.tid}] = tracks_.name_of(w.tid);
}

// Network and per-HCA GB/s per GPU, binned over the span of the ops shown.
void TraceBuild::bin_counters() {
  for (std::size_t k = 0; k < sel_.size(); ++k) {
    if (op_tid_[k] < 0) continue;
    const Op& op = ops_[sel_[k]];
    span_lo_ = std::min(span_lo_, op.start_wall_ns);
    span_hi_ = std::max(span_hi_, end_ns_of(op.start_wall_ns, op.dur_us));
  }
  if (!o_.counters || span_hi_ <= span_lo_) return;
  std::size_t ngpu_used = 0;
  for (bool u : gpu_used_) ngpu_used += u;
  nbins_ = std::clamp<std::size_t>(200000 / std::max<std::size_t>(1, ngpu_used), 16, 2000);
  bin_ns_ = std::max<std::int64_t>(1, (span_hi_ - span_lo_ + static_cast<std::int64_t>(nbins_) - 1) /
                                          static_cast<std::int64_t>(nbins_));
  nbins_ = static_cast<std::size_t>((span_hi_ - span_lo_) / bin_ns_ + 1);
  const auto& extra = data_.coll.extra;
  for (std::size_t k = 0; k < sel_.size(); ++k) {
    if (op_tid_[k] < 0) continue;
    const std::uint32_t i = sel_[k];
    const Op& op = ops_[i];
    const std::int64_t e = end_ns_of(op.start_wall_ns, op.dur_us);
    if (i < extra.size() && !extra[i].hcas.empty()) {
      Series& s = series_[gm_.op_gpu[i]];
      for (const auto& h : extra[i].hcas)
        if (h.bytes) spread(s.hca[h.dev], op.start_wall_ns, e, static_cast<double>(h.bytes));
    }
    if (i < data_.net_bytes.size() && data_.net_bytes[i])
      spread(series_[gm_.op_gpu[i]].net, op.start_wall_ns, e, static_cast<double>(data_.net_bytes[i]));
  }
}

// Adds `bytes` over [s, e) to the bins, in proportion to the overlap.
void TraceBuild::spread(std::vector<double>& v, std::int64_t s, std::int64_t e, double bytes) const {
  if (v.empty()) v.assign(nbins_, 0.0);
  if (e <= s) {
    v[static_cast<std::size_t>((s - span_lo_) / bin_ns_)] += bytes;
    return;
  }
  const double per_ns = bytes / static_cast<double>(e - s);
  for (std::int64_t b = (s - span_lo_) / bin_ns_; b < static_cast<std::int64_t>(nbins_); ++b) {
    const std::int64_t lo = span_lo_ + b * bin_ns_, hi = lo + bin_ns_;
    if (lo >= e) break;
    v[static_cast<std::size_t>(b)] += per_ns * static_cast<double>(std::min(hi, e) - std::max(lo, s));
  }
}

// Process and thread names and sort indices.
void TraceBuild::write_metadata(TraceJson& j) {
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
  if (findings_pid_) {
    meta("process_name", 0, 0, "findings", 0);
    meta("process_sort_index", 0, 0, "", 0);
  }
  for (std::size_t g = 0; g < gm_.gpus.size(); ++g) {
    if (!gpu_used_[g]) continue;
    const int pid = gm_.gpus[g].trace_pid;
    meta("process_name", pid, 0, gm_.gpus[g].label, 0);
    meta("process_sort_index", pid, 0, "", pid);
    thread_names_[{pid, kTidMarkers}] = "markers \u00b7 counters";
    ++st.processes;
  }
  for (const auto& [pt, name] : thread_names_) {
    meta("thread_name", pt.first, pt.second, name, 0);
    meta("thread_sort_index", pt.first, pt.second, "", pt.second);
    ++st.threads;
  }
}

// Op slices with their channel slices, and each flow right after its later end.
void TraceBuild::write_ops(TraceJson& j) {
  std::size_t fi = 0;
  std::uint64_t flow_id = 0;
  for (std::size_t k = 0; k < sel_.size(); ++k) {
    if (op_tid_[k] >= 0) {
      write_op(j, k);
      if (st.channel_tracks) write_channels(j, k);
    }
    while (fi < flows_.size() && std::max(flows_[fi].src_k, flows_[fi].dst_k) <= k) write_flow(j, flows_[fi++], ++flow_id);
  }
}

void TraceBuild::write_op(TraceJson& j, std::size_t k) {
  const std::uint32_t i = sel_[k];
  const Op& op = ops_[i];
  const std::string_view fname = to_string(op.func);
  // A tagged call's slice says which of the model's collectives it is: "AllReduce (layer 12 fwd)".
  const std::uint64_t tag = data_.tagged.empty() ? 0 : data_.tag_of(i);
  const std::string tag_label = tag != 0 ? tags_.label(tag) : std::string();
  const bool named = tag != 0 && tag_label != std::to_string(tag);
  const std::string name =
      tag != 0 ? std::string(fname) + " (" + (named ? tag_label : "tag " + tag_label) + ")" : std::string();
  j.begin('X', tag != 0 ? std::string_view(name) : fname, to_string(op.kind), pid_of_sel(static_cast<std::uint32_t>(k)),
          op_tid_[k], op.start_wall_ns - t0_);
  j.raw(",\"dur\":");
  j.us(end_ns_of(op.start_wall_ns, op.dur_us) - op.start_wall_ns);
  j.raw(",\"args\":{\"op\":");
  j.str(fname);
  j.raw(",\"bytes\":");
  j.u64(op.bytes);
  j.raw(",\"seq\":");
  j.u64(op.seq);
  if (tag != 0) {
    j.raw(",\"user_tag\":");
    j.u64(tag);
    if (named) {
      j.raw(",\"tag_name\":");
      j.str(tag_label);
    }
  }
  if (op.kind == OpKind::kColl) {
    j.raw(",\"algo\":");
    j.str(to_string(op.algo));
    j.raw(",\"proto\":");
    j.str(proto_label(op.algo, op.proto));
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
  if (i < data_.net_bytes.size() && data_.net_bytes[i]) {
    j.raw(",\"net_bytes\":");
    j.u64(data_.net_bytes[i]);
  }
  if (op.nchannels) {
    j.raw(",\"nchannels\":");
    j.i64(op.nchannels);
  }
  if (op.ch_balance >= 0) {
    j.raw(",\"ch_balance\":");
    j.num(static_cast<double>(op.ch_balance));
  }
  if (!std::isnan(late_us_[k])) {
    j.raw(",\"late_us\":");
    j.num(static_cast<double>(late_us_[k]));
  }
  if (op.flags & kFlagReclaimed) j.raw(",\"reclaimed\":true");
  if (op.flags & kFlagPartial) j.raw(",\"partial\":true");
  if (op.flags & kFlagGraph) j.raw(",\"graph\":true");
  j.raw("}");
  j.end();
  ++st.ops_written;
}

void TraceBuild::write_channels(TraceJson& j, std::size_t k) {
  const std::uint32_t i = sel_[k];
  const Op& op = ops_[i];
  const int pid = pid_of_sel(static_cast<std::uint32_t>(k));
  for (std::size_t e = data_.ch_begin(i); e < data_.ch_end[i]; ++e) {
    if (ch_tid_[e] < 0) continue;
    const auto& chx = data_.ch[e];
    const std::int64_t s = op.start_wall_ns + std::llround(static_cast<double>(chx.off_us) * 1000.0);
    j.begin('X', to_string(op.func), "channel", pid, ch_tid_[e], s - t0_);
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

void TraceBuild::write_flow(TraceJson& j, const Flow& f, std::uint64_t flow_id) {
  const Op& a = ops_[sel_[f.src_k]];
  const Op& b = ops_[sel_[f.dst_k]];
  char id[24];
  std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(flow_id));
  const std::string_view fname = to_string(a.func);
  // The slices' own category: viewers bind a flow event to the slice with the
  // same ts, pid, tid and cat (Chrome's trace engine bound none with "flow,coll").
  const std::string_view cat = to_string(a.kind);
  j.begin('s', fname, cat, pid_of_sel(f.src_k), op_tid_[f.src_k], a.start_wall_ns - t0_);
  j.raw(",\"id\":\"");
  j.raw(id);
  j.raw("\"");
  j.end();
  j.begin('f', fname, cat, pid_of_sel(f.dst_k), op_tid_[f.dst_k], b.start_wall_ns - t0_);
  j.raw(",\"bp\":\"e\",\"id\":\"");
  j.raw(id);
  j.raw("\"");
  j.end();
  st.flows += 2;
}

// Time windows (change points) as slices on the findings process.
void TraceBuild::write_windows(TraceJson& j) {
  for (const auto& w : windows_) {
    j.begin('X', w.name, "finding,change_point", 0, w.tid, w.start - t0_);
    j.raw(",\"dur\":");
    j.us(w.end - w.start);
    j.raw(",\"args\":{");
    j.raw(w.args);
    j.raw("}");
    j.end();
  }
}

void TraceBuild::write_counters(TraceJson& j) {
  for (const auto& [g, s] : series_) {
    const int pid = gm_.gpus[g].trace_pid;
    if (!s.net.empty()) write_counter(j, pid, "net GB/s", {{"send+recv", &s.net}});
    if (!s.hca.empty()) {
      std::vector<std::pair<std::string, const std::vector<double>*>> cols;
      for (const auto& [dev, v] : s.hca) cols.push_back({"hca " + dev, &v});
      write_counter(j, pid, "HCA GB/s", cols);
    }
  }
}

// One counter track: an event at each bin where some column changes, and a last one at 0.
void TraceBuild::write_counter(TraceJson& j, int pid, const char* name,
                               const std::vector<std::pair<std::string, const std::vector<double>*>>& cols) {
  const double to_gbs = 1.0 / static_cast<double>(bin_ns_);  // bytes/ns == GB/s
  std::vector<double> prev(cols.size(), -1.0);
  for (std::size_t b = 0; b <= nbins_; ++b) {
    bool changed = false;
    std::vector<double> cur(cols.size());
    for (std::size_t c = 0; c < cols.size(); ++c) {
      cur[c] = b < nbins_ ? (*cols[c].second)[b] * to_gbs : 0.0;
      if (std::fabs(cur[c] - prev[c]) > 1e-9) changed = true;
    }
    if (!changed) continue;
    const std::int64_t ts = span_lo_ + static_cast<std::int64_t>(b) * bin_ns_;
    j.begin('C', name, "counter", pid, kTidMarkers, std::min(ts, span_hi_) - t0_);
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
}

void TraceBuild::write_instants(TraceJson& j) {
  for (const auto& in : instants_) {
    j.begin('i', in.name, in.cat, in.pid, in.tid, in.ts - t0_);
    j.raw(",\"s\":\"t\",\"args\":{");
    j.raw(in.args);
    j.raw("}");
    j.end();
    ++st.instants;
  }
}

// The top-level metadata: the clock, what was selected and dropped.
void TraceBuild::write_footer(TraceJson& j) {
  j.raw("\n],\"metadata\":{\"tool\":\"nccl-inspector trace\",\"version\":\"");
  j.raw(kVersion);
  j.raw("\",\"t0_wall_ns\":\"");
  j.i64(t0_);
  j.raw("\",\"t0_utc\":\"");
  j.raw(iso_utc(t0_));
  if (o_.calibration != nullptr && !o_.calibration->comms.empty())
    j.raw("\",\"clock\":\"ts = microseconds since t0 on the aligned wall clock (start_wall_ns: GPU times converted with each "
          "comm's clock estimate), each (comm, rank) then shifted by its clock offset measured from the collectives' "
          "common end (clock_calibration_us; docs/analysis.md, stragglers)\"");
  else
    j.raw("\",\"clock\":\"ts = microseconds since t0 on the aligned wall clock (start_wall_ns: GPU times converted with each "
          "comm's clock estimate; not calibrated)\"");
  if (o_.calibration != nullptr) {
    // Per corrected comm: the range and scatter of its ranks' offsets, and the shift applied to each rank.
    j.raw(",\"clock_calibration_us\":{");
    bool fc = true;
    for (const CommClock& c : o_.calibration->comms) {
      if (!fc) j.ch(',');
      fc = false;
      j.str(comm_short(c.comm, res_) + " " + hex_hash(c.comm));
      j.raw(":{\"range\":");
      j.num(c.range_us);
      j.raw(",\"uncertainty\":");
      j.num(c.spread_us);
      j.raw(",\"shift\":{");
      bool fr = true;
      for (auto it = o_.calibration->shift_ns.lower_bound({c.comm, INT32_MIN});
           it != o_.calibration->shift_ns.end() && it->first.first == c.comm; ++it) {
        if (!fr) j.ch(',');
        fr = false;
        j.str("rank " + std::to_string(it->first.second));
        j.ch(':');
        j.num(static_cast<double>(it->second) / 1000.0);
      }
      j.raw("}}");
    }
    j.raw("}");
  }
  std::map<std::uint64_t, std::int64_t> unc;
  for (const auto& f : res_.files)
    for (const auto& c : f.clocks)
      if (c.uncertainty_ns >= 0) unc[c.comm_hash] = std::max(unc[c.comm_hash], c.uncertainty_ns);
  j.raw(",\"clock_uncertainty_ns\":{");
  bool first = true;
  for (const auto& [c, u] : unc) {
    if (!first) j.ch(',');
    first = false;
    j.str(comm_short(c, res_) + " " + hex_hash(c));
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
  if (!o_.from.empty() || !o_.to.empty()) {
    j.raw(",\"window_utc\":[");
    j.str(filter_.from() == std::numeric_limits<std::int64_t>::min() ? "" : iso_utc(filter_.from()));
    j.ch(',');
    j.str(filter_.to() == std::numeric_limits<std::int64_t>::max() ? "" : iso_utc(filter_.to()));
    j.ch(']');
  }
  j.raw("}}\n");
}

// The parts of the file, in order (the events array, then the footer).
using TracePart = void (TraceBuild::*)(TraceJson&);

void TraceBuild::write(std::ostream& out, std::string& error) {
  static constexpr TracePart kParts[] = {&TraceBuild::write_metadata, &TraceBuild::write_ops, &TraceBuild::write_windows,
                                         &TraceBuild::write_counters, &TraceBuild::write_instants};
  TraceJson j(out);
  j.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  for (TracePart part : kParts) (this->*part)(j);
  st.events = j.events();
  write_footer(j);
  j.flush();
  st.bytes = j.bytes();
  if (!j.ok()) error = "write error";
}

}  // namespace

bool TraceFilter::init(const TraceOptions& o, const GpuMap& gm, const ReadResult& res, std::int64_t t0,
                       std::string& error) {
  if (!o.from.empty() && !parse_time_arg(o.from, t0, from_, error)) return false;
  if (!o.to.empty() && !parse_time_arg(o.to, t0, to_, error)) return false;
  if (!o.from.empty() && !o.to.empty() && from_ >= to_) {
    error = "--from " + o.from + " is not before --to " + o.to + ": the window holds no time (" + iso_utc(from_) +
            " .. " + iso_utc(to_) + ")";
    return false;
  }
  for (const auto& c : o.comms) {
    std::uint64_t h = 0;
    bool found = false;
    if (parse_hash(c, h) && gm.comm_index.count(h)) {
      comms_.insert(h);
      found = true;
    }
    for (std::uint64_t x : gm.comms) {
      auto it = res.comm_names.find(x);
      if ((it != res.comm_names.end() && it->second == c) || hex_hash(x).rfind(lower(c), 0) == 0) {
        comms_.insert(x);
        found = true;
      }
    }
    if (!found) {
      error = "--comm '" + c + "' matches no communicator (names or 0x hashes; see nccl-inspector summary)";
      return false;
    }
  }
  for (const auto& f : o.ops) {
    bool found = false;
    for (int i = 0; i < static_cast<int>(Func::kCount_); ++i)
      if (lower(std::string(to_string(static_cast<Func>(i)))) == lower(f)) {
        funcs_.insert(static_cast<Func>(i));
        found = true;
      }
    if (!found) {
      error = "--op '" + f + "' is not an NCCL function name (AllReduce, AllGather, Send, ...)";
      return false;
    }
  }
  ranks_.insert(o.ranks.begin(), o.ranks.end());
  return true;
}

bool TraceFilter::passes(const Op& op, int rank) const {
  if (!op.has_start()) return false;
  if (!comms_.empty() && !comms_.count(op.comm_hash)) return false;
  if (!funcs_.empty() && !funcs_.count(op.func)) return false;
  if (!ranks_.empty() && !ranks_.count(rank)) return false;
  const std::int64_t e = end_ns_of(op.start_wall_ns, op.dur_us);
  return e >= from_ && op.start_wall_ns <= to_;
}

std::int64_t trace_end_ns(std::int64_t start, double dur_us) { return end_ns_of(start, dur_us); }

GpuMap TraceGlobals::gpus_of(const std::vector<Op>& ops) const {
  GpuMap m = gm;
  m.op_gpu.resize(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) m.op_gpu[i] = keys.at({ops[i].file_idx, ops[i].comm_hash, ops[i].rank}).gpu;
  return m;
}

TraceStats write_trace(const ViewSink& data, const ReadResult& res, const TraceOptions& o, std::ostream& out,
                       std::string& error) {
  TraceBuild b(data, res, o);
  if (!b.select(error)) return b.st;
  b.plan();
  b.write(out, error);
  return b.st;
}

}  // namespace ni::analysis
