#include "src/analysis/watch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "src/analysis/reader_record.h"
#include "src/analysis/stats.h"
#include "src/analysis/stragglers.h"

namespace ni::analysis {

// Every op read goes to the window (and the totals).
struct Watch::Sink final : OpSink {
  explicit Sink(Watch& owner) : w(owner) {}
  std::uint32_t op_fields() const override { return kOpFieldsAll; }
  void on_op(const Op& op, const OpDetail*, const FileInfo&) override {
    ++w.ops_total_;
    if (op.has_start()) {
      // A backlog (watch started late, a file found late) is counted, not shown as the last seconds' ops.
      w.newest_start_ns_ = std::max(w.newest_start_ns_, op.start_wall_ns);
      if (w.newest_start_ns_ - op.start_wall_ns > static_cast<std::int64_t>(w.o_.window_s * 1e9)) return;
    }
    w.window_.push_back({w.now_ns_, op});
    if (w.window_.size() > w.o_.max_window_ops) {
      w.window_.pop_front();
      ++w.window_dropped_;
    }
  }
  Watch& w;
};

Watch::Watch(WatchOptions o) : o_(std::move(o)), sink_(std::make_unique<Sink>(*this)) {}
Watch::~Watch() = default;

void Watch::discover() {
  // A dump dir that does not exist yet, or holds no log yet, is the job not
  // having written yet: said on the screen, looked for again next time.
  std::vector<std::string> present;
  error_.clear();
  for (const std::string& in : o_.inputs) {
    std::error_code ec;
    if (std::filesystem::exists(in, ec))
      present.push_back(in);
    else
      error_ += (error_.empty() ? "" : "; ") + ("waiting for " + in + ": it does not exist (yet)");
  }
  if (present.empty()) return;
  const Discovery d = discover_files(present);
  if (d.files.empty() && error_.empty()) error_ = "no log file yet under " + present.front();
  for (const std::string& f : d.files) {
    if (known_.count(f)) continue;
    known_[f] = infos_.size();
    FileInfo& info = infos_.emplace_back();
    info.path = f;
    followers_.push_back(
        std::make_unique<reader_detail::Follower>(info, static_cast<std::uint32_t>(infos_.size() - 1), *sink_));
  }
}

std::uint64_t Watch::poll(std::int64_t now_ns) {
  now_ns_ = now_ns;
  if (first_poll_ns_ == 0) first_poll_ns_ = now_ns;
  discover();
  const std::uint64_t before = ops_total_;
  std::size_t budget = o_.max_poll_bytes;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
                                           std::chrono::duration<double>(std::max(o_.poll_budget_s, 0.01)));
  constexpr std::size_t kStep = std::size_t{256} << 10;
  // Rounds over the files, starting where the last poll stopped (a budget spent
  // part-way through a round leaves no file unread for good); after the first
  // round only the files that had more are read again.
  std::vector<std::size_t> todo(followers_.size());
  for (std::size_t i = 0; i < todo.size(); ++i) todo[i] = (next_follower_ + i) % todo.size();
  bool spent = false;
  while (!todo.empty() && !spent) {
    std::vector<std::size_t> more;
    for (std::size_t k = 0; k < todo.size(); ++k) {
      if (budget == 0 || (o_.stop != nullptr && *o_.stop)) {
        spent = true;
        next_follower_ = todo[k];
        break;
      }
      const std::size_t n = followers_[todo[k]]->poll(std::min(budget, kStep));
      budget -= std::min(budget, n);
      if (n == kStep) more.push_back(todo[k]);
      if (clock::now() >= deadline) {  // after a read: every poll gets somewhere
        spent = true;
        next_follower_ = todo[k] + 1;
        break;
      }
    }
    todo.swap(more);
  }
  behind_bytes_ = 0;
  for (const auto& f : followers_) behind_bytes_ += f->behind();
  // The window: what arrived within window_s.
  const auto span = static_cast<std::int64_t>(o_.window_s * 1e9);
  auto old = [&](const Window& w) {
    return now_ns - w.arrived_ns > span || (w.op.has_start() && newest_start_ns_ - w.op.start_wall_ns > span);
  };
  while (!window_.empty() && old(window_.front())) window_.pop_front();
  rate_.emplace_back(now_ns, ops_total_);
  while (rate_.size() > 2 && now_ns - rate_[1].first >= 10'000'000'000LL) rate_.pop_front();
  return ops_total_ - before;
}

ReadResult Watch::result_for_analysis() const {
  ReadResult res;
  for (const FileInfo& f : infos_) {
    FileInfo& c = res.files.emplace_back();
    c.path = f.path;
    c.host = f.host;
    c.pid = f.pid;
    for (const CommInfo& ci : f.comms)
      if (!ci.name.empty()) res.comm_names[ci.comm_hash] = ci.name;
  }
  assign_racks(res, o_.host_map);
  return res;
}

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string thousands(std::uint64_t v) {
  const std::string d = std::to_string(v);
  std::string s;
  s.reserve(d.size() + d.size() / 3);
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) s.push_back(',');
    s.push_back(d[i]);
  }
  return s;
}

// sorted_quantile() of v, sorted in place.
double quantile(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return sorted_quantile(v, q);
}

std::string pad(std::string s, std::size_t w, bool right = false) {
  if (s.size() >= w) return s + " ";
  return right ? std::string(w - s.size(), ' ') + s + " " : s + std::string(w - s.size(), ' ') + " ";
}

}  // namespace

std::string Watch::render(std::int64_t now_wall_ns) const {
  const auto bold = [&](const std::string& s) { return o_.color ? "\x1b[1m" + s + "\x1b[0m" : s; };
  std::string out;
  // ---- health
  struct Proc {
    std::int64_t last_wall = 0, hang_ms = -1, stats_wall = 0;
    bool ended = false;
    const StatsInfo* stats = nullptr;
    std::string host;
  };
  std::map<std::pair<std::string, std::int64_t>, Proc> procs;  // (host, pid)
  std::set<std::string> hosts;
  std::uint64_t bad = 0, damaged_files = 0;
  std::vector<std::string> damage;
  for (const FileInfo& f : infos_) {
    if (f.lines == 0 && f.error.empty()) continue;  // nothing written yet
    bad += f.bad_lines;
    if (f.corrupt || !f.error.empty()) {
      ++damaged_files;
      if (damage.size() < 3) damage.push_back(f.path + ": " + f.error);
    }
    if (f.pid < 0 && f.host.empty()) continue;  // no meta record (yet): no process to speak of
    Proc& p = procs[{f.host, f.pid}];
    p.host = f.host;
    p.last_wall = std::max(p.last_wall, f.last_wall_ns);
    p.hang_ms = std::max(p.hang_ms, f.hang_ms);
    p.ended = p.ended || f.has_end;
    if (f.stats.present && f.stats.wall_ns >= p.stats_wall) {
      p.stats_wall = f.stats.wall_ns;
      p.stats = &f.stats;  // cumulative per process: its latest
    }
    hosts.insert(f.host);
  }
  std::uint64_t dropped = 0;
  std::map<std::string, std::uint64_t> drop_reasons;
  std::int64_t newest = 0;
  for (const auto& [k, p] : procs) {
    newest = std::max(newest, p.last_wall);
    if (p.stats == nullptr) continue;
    for (const auto& [why, n] : p.stats->dropped) {
      dropped += n;
      drop_reasons[why] += n;
    }
  }
  double rate = kNaN;
  if (rate_.size() >= 2 && rate_.back().first > rate_.front().first)
    rate = static_cast<double>(rate_.back().second - rate_.front().second) * 1e9 /
           static_cast<double>(rate_.back().first - rate_.front().first);
  std::time_t t = static_cast<std::time_t>(now_wall_ns / 1000000000);
  char when[32];
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(when, sizeof when, "%H:%M:%S", &tm);
  std::string inputs;
  for (const auto& i : o_.inputs) inputs += (inputs.empty() ? "" : " ") + i;
  out += bold("nccl-inspector watch " + inputs) + "  " + when + "  (Ctrl-C quits)\n";
  out += "processes " + std::to_string(procs.size()) + " on " + std::to_string(hosts.size()) + " host(s), " +
         std::to_string(infos_.size()) + " file(s) | ops " + thousands(ops_total_) + " | " +
         (std::isnan(rate) ? std::string("- ops/s") : thousands(static_cast<std::uint64_t>(rate + 0.5)) + " ops/s") +
         " | dropped by the plugin " + thousands(dropped) + " | bad lines " + thousands(bad) + "\n";
  if (newest > 0 && now_wall_ns > newest)
    out += "newest record " + fmt("%.1f", static_cast<double>(now_wall_ns - newest) / 1e9) + " s ago\n";

  // ---- op groups of the window, by GPU time
  struct G {
    std::vector<double> dur, bw;
    double total_us = 0;
    std::uint64_t n = 0;
    bool cpu = false;
  };
  std::map<std::tuple<std::uint64_t, int, int>, G> groups;
  std::unordered_map<std::uint64_t, std::string> names;
  for (const FileInfo& f : infos_)
    for (const CommInfo& c : f.comms)
      if (!c.name.empty()) names[c.comm_hash] = c.name;
  double all_us = 0;
  for (const Window& w : window_) {
    const Op& op = w.op;
    G& g = groups[{op.comm_hash, static_cast<int>(op.func), size_bucket(op.bytes)}];
    ++g.n;
    g.dur.push_back(op.dur_us);
    if (op.has_busbw() && !cpu_timed(op.timing)) g.bw.push_back(op.busbw_gbs);
    g.cpu = g.cpu || cpu_timed(op.timing);
    if (!cpu_timed(op.timing)) {
      g.total_us += op.dur_us;
      all_us += op.dur_us;
    }
  }
  std::vector<std::pair<double, decltype(groups)::iterator>> order;
  for (auto it = groups.begin(); it != groups.end(); ++it) order.emplace_back(it->second.total_us, it);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  out += "\n" + bold("Op groups of the last " + fmt("%.0f", o_.window_s) + " s, by GPU time") + " (" +
         thousands(window_.size()) + " ops" +
         (window_dropped_ ? ", window capped: " + thousands(window_dropped_) + " older ops left it early" : "") +
         ")\n";
  if (order.empty()) {
    out += "  no op yet\n";
  } else {
    out += "  " + pad("comm", 28) + pad("op", 14) + pad("size", 7, true) + pad("ops", 8, true) +
           pad("p50_us", 10, true) + pad("p99_us", 10, true) + pad("busbw_p50", 10, true) + pad("time%", 6, true) +
           "\n";
    for (std::size_t i = 0; i < order.size() && i < o_.top; ++i) {
      auto& [k, g] = *order[i].second;
      const auto nm = names.find(std::get<0>(k));
      const std::string hex = hex_hash(std::get<0>(k));
      const std::string comm = nm != names.end() ? nm->second + " (" + hex + ")" : hex;
      std::vector<double> d = g.dur, b = g.bw;
      const double bw = quantile(b, 0.5);
      out += "  " + pad(comm, 28) + pad(std::string(to_string(static_cast<Func>(std::get<1>(k)))), 14) +
             pad(size_bucket_label(std::get<2>(k)), 7, true) + pad(thousands(g.n), 8, true) +
             pad(fmt("%.1f", quantile(d, 0.5)), 10, true) + pad(fmt("%.1f", quantile(d, 0.99)), 10, true) +
             pad(std::isnan(bw) ? (g.cpu ? "cpu-timed" : "-") : fmt("%.1f", bw), 10, true) +
             pad(all_us > 0 && !g.cpu ? fmt("%.0f", 100.0 * g.total_us / all_us) : "-", 6, true) + "\n";
    }
    if (order.size() > o_.top) out += "  (" + std::to_string(order.size() - o_.top) + " more groups)\n";
  }

  // ---- late ranks of the window (clock-free: kernel times)
  std::vector<Op> ops;
  ops.reserve(window_.size());
  for (const Window& w : window_) ops.push_back(w.op);
  const ReadResult res = result_for_analysis();
  const StragglerResult sr = find_stragglers(ops, res, {});
  out += "\n" + bold("Late ranks of the window") + " (arrival from GPU kernel times: no clock trusted)\n";
  std::size_t flagged = 0;
  for (const RankLateness& r : sr.ranks) {
    if (!r.flagged) continue;
    if (++flagged > 5) continue;
    const std::string late = o_.color ? "\x1b[31mLATE\x1b[0m" : "LATE";
    out += "  " + late + " " + comm_display(r.comm, res) + " rank " + std::to_string(r.rank) + " on " +
           (r.host.empty() ? "?" : r.host) + ": last in " + thousands(r.last) + " of " + thousands(r.ops) +
           " instances (" + fmt("%.0f", 100.0 * static_cast<double>(r.last) / static_cast<double>(std::max<std::uint64_t>(r.ops, 1))) +
           "%, chance " + fmt("%.0f", 100.0 / std::max(2, r.nranks)) + "%), " + fmt("%.1f", r.last_margin_us) +
           " us after the next latest\n";
  }
  if (flagged > 5) out += "  (" + std::to_string(flagged - 5) + " more)\n";
  if (flagged == 0)
    out += sr.measured == 0 ? "  none measured yet: needs GPU-timed collectives seen on every rank of a comm\n"
                            : "  none flagged (" + thousands(sr.measured) + " instances measured)\n";

  // ---- findings
  out += "\n" + bold("Findings") + "\n";
  std::size_t findings = 0;
  for (const auto& [k, p] : procs) {
    if (p.ended || newest == 0) continue;
    // A live plugin writes at least every HANG_MS (an "alive" record when idle).
    const std::int64_t quiet_ns = std::max<std::int64_t>(p.hang_ms > 0 ? 2 * p.hang_ms * 1000000 : 60'000'000'000LL,
                                                         10'000'000'000LL);
    if (newest - p.last_wall > quiet_ns) {
      ++findings;
      out += "  " + (k.first.empty() ? std::string("?") : k.first) + " pid " + std::to_string(k.second) +
             ": nothing written for " + fmt("%.0f", static_cast<double>(newest - p.last_wall) / 1e9) +
             " s while others write: stalled or dead (nccl-inspector hangs DIR names what it waits for)\n";
    }
  }
  std::size_t ended = 0;
  for (const auto& [k, p] : procs) ended += p.ended;
  if (ended) {
    ++findings;
    out += "  " + std::to_string(ended) + " of " + std::to_string(procs.size()) + " processes ended their log cleanly\n";
  }
  if (dropped) {
    ++findings;
    std::string why;
    for (const auto& [r, n] : drop_reasons)
      if (n) why += (why.empty() ? "" : ", ") + r + " " + thousands(n);
    out += "  the plugin dropped " + thousands(dropped) + " records (" + why + "): counted, not in the numbers above\n";
  }
  for (const std::string& d : damage) {
    ++findings;
    out += "  damaged: " + d + "\n";
  }
  if (damaged_files > damage.size()) out += "  (" + std::to_string(damaged_files - damage.size()) + " more damaged files)\n";
  if (!error_.empty()) {
    ++findings;
    out += "  " + error_ + "\n";
  }
  if (behind_bytes_ > 0) {
    ++findings;
    out += "  reading behind the job: " + fmt("%.1f", static_cast<double>(behind_bytes_) / 1048576.0) +
           " MiB of its logs not read yet (this screen shows less than was written)\n";
  }
  if (findings == 0) out += "  none\n";
  return out;
}

}  // namespace ni::analysis
