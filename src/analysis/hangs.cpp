// `hangs` (see hangs.h).
#include "src/analysis/hangs.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <iomanip>
#include <sstream>
#include <tuple>

#include "src/analysis/stragglers.h"

namespace ni::analysis {

namespace {

// Without the setting in the log (older plugins) the analyzer assumes the
// plugin's default.
constexpr std::int64_t kDefaultHangMs = 5000;
// Ranks judged per communicator at most (a garbage rank number must not make
// the tables huge).
constexpr int kMaxRanks = 1 << 20;

constexpr const char* kNoLogNote =
    "no log of this communicator from it: its process died before its first write, or its log is not among the "
    "inputs";

std::string wall_text(std::int64_t ns) {
  if (ns <= 0) return "";
  const std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];  // room for any int fields, so that no truncation is possible
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ns / 1000000 % 1000));
  return buf;
}

std::string seconds(std::int64_t ns) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << static_cast<double>(ns) / 1e9 << " s";
  return o.str();
}

std::string channels(std::uint64_t m) {
  std::vector<int> v;
  for (; m != 0; m &= m - 1) v.push_back(std::countr_zero(m));
  return v.empty() ? "none" : rank_list(v);
}

std::string op_text(const StuckOpInfo& o) {
  std::string s = o.func_name.empty() ? std::string(to_string(o.func)) : o.func_name;
  s += " seq " + std::to_string(o.seq);
  if (o.bytes != 0) s += " (" + format_bytes(static_cast<double>(o.bytes)) + ")";
  if (o.kind == OpKind::kP2p) s += (o.func == Func::kRecv ? " from " : " to ") + std::to_string(o.peer);
  else if (o.peer >= 0 && (o.func == Func::kBroadcast || o.func == Func::kReduce)) s += " root " + std::to_string(o.peer);
  return s;
}

// How far an op in flight got, as its progress line said.
std::string progress_text(const StuckOpInfo& o) {
  if (o.reclaimed) return "reclaimed by the timeout (no progress detail)";
  std::string s;
  if (o.ch_started == 0) {
    s = "kernel never started (no channel began)";
  } else {
    s = "channels started " + channels(o.ch_started) + ", ended " + channels(o.ch_done);
    const std::uint64_t open = o.ch_started & ~o.ch_done;
    if (open != 0) s += ", running " + channels(open);
  }
  for (const StuckNet& n : o.net) {
    s += "; " + std::string(n.send ? "send to " : "recv from ") + std::to_string(n.peer) + " " +
         std::to_string(n.done) + "/" + std::to_string(n.posted) + " steps";
  }
  return s;
}

// One comm rank, over its process's files (a rotated log is several).
struct RankData {
  std::uint32_t file = UINT32_MAX;
  bool finalized = false;
  bool clean_end = false;
  std::int64_t log_end = 0;
  std::int64_t hang_ms = kDefaultHangMs;
  const CommRankProgress* latest = nullptr;  // the part with the latest progress line
  std::uint64_t issued = 0;
  std::int64_t done_issue = -1, done_wall = 0, p2p_done_wall = 0;
  std::vector<CollSig> recent;
  std::vector<StuckOpInfo> pending;  // in flight at the end (progress) or reclaimed after the last completion
  std::int64_t started() const {
    std::int64_t s = static_cast<std::int64_t>(issued);
    s = std::max(s, done_issue + 1);
    for (const StuckOpInfo& o : pending)
      if (o.kind == OpKind::kColl && o.issue >= 0) s = std::max(s, o.issue + 1);
    return s;
  }
  // Its stuck collective with the lowest issue, or nullptr.
  const StuckOpInfo* first_coll() const {
    const StuckOpInfo* best = nullptr;
    for (const StuckOpInfo& o : pending)
      if (o.kind == OpKind::kColl && o.issue > done_issue && (best == nullptr || o.issue < best->issue)) best = &o;
    return best;
  }
  const StuckOpInfo* coll_at(std::int64_t issue) const {
    for (const StuckOpInfo& o : pending)
      if (o.kind == OpKind::kColl && o.issue == issue) return &o;
    return nullptr;
  }
  const CollSig* done_at(std::int64_t issue) const {
    for (const CollSig& c : recent)
      if (c.issue == issue) return &c;
    return nullptr;
  }
  // Its state stayed put long enough to be a hang, not a snapshot of a
  // running job: nothing started after its last progress line, which either
  // was written because the comm had been quiet for HANG_MS or came with an
  // op stuck that never completed.
  bool settled() const {
    if (latest == nullptr || static_cast<std::int64_t>(latest->issued) != started()) return false;
    return !pending.empty() || latest->quiet_ms >= hang_ms;
  }
  // An op a progress line showed stuck that never completed.
  bool stuck_at_end() const {
    for (const StuckOpInfo& o : pending)
      if (!o.reclaimed) return true;
    return false;
  }
  // Its comm ended normally: comm_end, and nothing stuck (a comm aborted by a
  // watchdog also writes comm_end, with its stuck ops never completed).
  bool done_with() const { return finalized && !stuck_at_end(); }
};

struct Sig {
  std::string func;
  std::uint64_t bytes = 0;
  int root = -1;
  bool operator<(const Sig& o) const { return std::tie(func, bytes, root) < std::tie(o.func, o.bytes, o.root); }
  bool operator==(const Sig& o) const { return func == o.func && bytes == o.bytes && root == o.root; }
};
// What ranks must agree on at one issue: the function, the size (not for
// AllGatherV, whose sizes differ per rank by design) and the root.
Sig sig_of(Func f, std::uint64_t bytes, int root) {
  return {std::string(to_string(f)), f == Func::kAllGatherV ? 0 : bytes,
          f == Func::kBroadcast || f == Func::kReduce ? root : -1};
}
Sig sig_of(const StuckOpInfo& o) { return sig_of(o.func, o.bytes, o.peer); }
Sig sig_of(const CollSig& c) { return sig_of(c.func, c.bytes, c.root); }
std::string sig_text(const Sig& s) {
  std::string t = s.func + " " + format_bytes(static_cast<double>(s.bytes));
  if (s.root >= 0) t += " root " + std::to_string(s.root);
  return t;
}

class Finder {
 public:
  explicit Finder(const ReadResult& res) : res_(res) {}

  HangResult run() {
    HangResult out;
    out.files = res_.files.size();
    gather(out);
    for (auto& [comm, ranks] : comms_) {
      ++out.comms;
      // Every rank ended it normally, or every process exited cleanly with
      // nothing stuck (a comm never destroyed).
      bool all_final = true, all_clean = true;
      for (auto& [r, d] : ranks) {
        all_final = all_final && d.done_with();
        all_clean = all_clean && d.clean_end && !d.stuck_at_end();
      }
      if (all_final || all_clean) {
        ++out.comms_finalized;
        continue;
      }
      HangFinding f;
      if (judge(comm, ranks, f)) out.findings.push_back(std::move(f));
    }
    std::sort(out.findings.begin(), out.findings.end(), [](const HangFinding& a, const HangFinding& b) {
      const auto ka = a.since_ns == 0 ? INT64_MAX : a.since_ns, kb = b.since_ns == 0 ? INT64_MAX : b.since_ns;
      return ka != kb ? ka < kb : a.comm < b.comm;
    });
    cross_reference(out);
    notes(out);
    return out;
  }

 private:
  // Per process: the latest time any of its files gives, and whether one ended cleanly.
  void gather(HangResult& out) {
    std::map<std::pair<std::string, std::int64_t>, std::pair<std::int64_t, bool>> proc;
    for (const FileInfo& f : res_.files) {
      auto& p = proc[{f.host, f.pid}];
      p.first = std::max(p.first, f.last_wall_ns);
      p.second = p.second || f.has_end;
    }
    for (std::uint32_t i = 0; i < res_.files.size(); ++i) {
      const FileInfo& f = res_.files[i];
      bool any = false;
      for (const CommRankProgress& p : f.progress) {
        if (p.rank < 0) continue;
        any = any || p.has_progress;
        RankData& d = comms_[p.comm_hash][p.rank];
        nranks_[p.comm_hash] = std::max(nranks_[p.comm_hash], p.nranks);
        if (d.file == UINT32_MAX || f.file_seq > res_.files[d.file].file_seq) d.file = i;
        const auto& pr = proc[{f.host, f.pid}];
        d.log_end = pr.first;
        d.clean_end = pr.second;
        if (f.hang_ms >= 0) d.hang_ms = f.hang_ms;
        d.finalized = d.finalized || p.finalized;
        if (p.has_progress && (d.latest == nullptr || p.progress_wall_ns > d.latest->progress_wall_ns)) d.latest = &p;
        if (p.done_issue > d.done_issue) {
          d.done_issue = p.done_issue;
          d.done_wall = p.done_wall_ns;
        }
        d.p2p_done_wall = std::max(d.p2p_done_wall, p.p2p_done_wall_ns);
        const std::uint64_t n = std::min<std::uint64_t>(p.done_colls, CommRankProgress::kRecent);
        for (std::uint64_t k = 0; k < n; ++k) d.recent.push_back(p.recent[k]);
        for (const StuckOpInfo& o : p.reclaimed) d.pending.push_back(o);
        for (const StuckOpInfo& o : p.seen_stuck) d.pending.push_back(o);
      }
      for (const CommInfo& c : f.comms) nranks_[c.comm_hash] = std::max(nranks_[c.comm_hash], c.nranks);
      out.files_with_progress += any;
    }
    for (auto& [comm, ranks] : comms_) {
      for (auto& entry : ranks) {
        RankData& d = entry.second;  // a plain reference: the lambdas below capture it
        if (d.latest != nullptr) d.issued = d.latest->issued;
        // Ops that completed after all are not pending: a collective whose
        // issue (or a later one) completed; a P2P op before the latest
        // completed P2P op.
        std::erase_if(d.pending, [&](const StuckOpInfo& o) {
          if (o.kind == OpKind::kColl) return o.issue >= 0 && o.issue <= d.done_issue;
          if (o.kind == OpKind::kP2p) return o.enqueue_wall_ns < d.p2p_done_wall;
          return o.enqueue_wall_ns < std::max(d.done_wall, d.p2p_done_wall);
        });
        // The same op seen twice (in a progress line and reclaimed): keep the progress line's.
        std::sort(d.pending.begin(), d.pending.end(), [](const StuckOpInfo& a, const StuckOpInfo& b) {
          return std::tie(a.kind, a.issue, a.func, a.seq, a.peer, a.reclaimed) <
                 std::tie(b.kind, b.issue, b.func, b.seq, b.peer, b.reclaimed);
        });
        d.pending.erase(std::unique(d.pending.begin(), d.pending.end(),
                                    [](const StuckOpInfo& a, const StuckOpInfo& b) {
                                      return a.kind == b.kind && a.issue == b.issue && a.func == b.func &&
                                             a.seq == b.seq && a.peer == b.peer;
                                    }),
                        d.pending.end());
      }
    }
  }

  HangRank rank_row(int r, const RankData* d) {
    HangRank h;
    h.rank = r;
    if (d == nullptr) {
      h.state = "no_log";
      return h;
    }
    h.file = d->file;
    h.started = d->started();
    h.done_issue = d->done_issue;
    h.log_end_ns = d->log_end;
    return h;
  }

  std::string where(const HangRank& h) const {
    if (h.file == UINT32_MAX) return "no log";
    const FileInfo& f = res_.files[h.file];
    std::string s = f.host + " pid " + std::to_string(f.pid);
    if (f.global_rank >= 0) s += " (global rank " + std::to_string(f.global_rank) + ")";
    return s;
  }

  bool judge(std::uint64_t comm, std::map<int, RankData>& ranks, HangFinding& f) {
    // The comm's size: as its ranks said, else its highest rank + 1; ranks
    // beyond it (garbage) are left out.
    int n = nranks_[comm];
    if (n <= 0)
      for (auto& [r, d] : ranks) n = std::max(n, std::min(r, kMaxRanks - 1) + 1);
    n = std::min(n, kMaxRanks);
    std::erase_if(ranks, [&](const auto& e) { return e.first >= n; });
    f.comm = comm;
    f.nranks = n;
    f.comm_name = comm_display(comm, res_);
    // Candidates: the first collective each rank is stuck in, and the first
    // one the ranks disagree on having started once every rank's state
    // stayed put (a running job's last moment is not a hang). The hang is
    // the first candidate no rank completed (a collective completes on every
    // rank or on none).
    std::vector<std::int64_t> cand;
    std::int64_t lo = INT64_MAX, hi = -1, done_max = -1;
    bool settled = true;
    const std::int64_t end = job_end(ranks);
    for (auto& [r, d] : ranks) {
      done_max = std::max(done_max, d.done_issue);
      if (d.done_with()) continue;
      if (const StuckOpInfo* o = d.first_coll()) cand.push_back(o->issue);
      lo = std::min(lo, d.started());
      hi = std::max(hi, d.started());
      settled = settled && (d.settled() || (!d.clean_end && d.log_end < end - d.hang_ms * 1000000));
    }
    if (hi > lo && settled) cand.push_back(lo);
    std::sort(cand.begin(), cand.end());
    std::int64_t k = INT64_MAX;
    for (std::int64_t c : cand)
      if (c > done_max) {
        k = c;
        break;
      }
    if (k == INT64_MAX) return judge_api(ranks, f) || judge_p2p(ranks, f);
    f.issue = k;
    // What the ranks that have it issued there: the majority.
    std::map<Sig, std::vector<int>> by_sig;
    std::map<Sig, std::pair<std::uint64_t, bool>> seq_of;
    std::int64_t since = 0;
    for (auto& [r, d] : ranks) {
      if (const StuckOpInfo* o = d.coll_at(k)) {
        by_sig[sig_of(*o)].push_back(r);
        seq_of[sig_of(*o)] = {o->seq, true};
        if (o->enqueue_wall_ns > 0 && (since == 0 || o->enqueue_wall_ns < since)) since = o->enqueue_wall_ns;
      } else if (const CollSig* c = d.done_at(k)) {
        by_sig[sig_of(*c)].push_back(r);
        seq_of[sig_of(*c)] = {c->seq, true};
      }
    }
    Sig major;
    std::size_t best = 0;
    for (auto& [s, v] : by_sig)
      if (v.size() > best) {
        best = v.size();
        major = s;
      }
    if (best != 0) {
      f.func = major.func;
      std::tie(f.seq, f.has_seq) = seq_of[major];
    } else {
      // A collective no rank recorded (filtered by size): its function is
      // what the ranks that started it last started.
      for (auto& [r, d] : ranks)
        if (d.latest != nullptr && d.started() == k + 1 && !d.latest->last_func.empty()) {
          f.func = d.latest->last_func;
          for (const auto& [fn, sq] : d.latest->started)
            if (fn == f.func) std::tie(f.seq, f.has_seq) = std::pair{sq, true};
        }
    }
    if (since == 0) {
      // No op of it in flight on record: the hang began no later than the
      // settled ranks' last progress line less its quiet time.
      for (auto& [r, d] : ranks)
        if (d.latest != nullptr && d.started() > k && d.latest->quiet_ms >= 0) {
          const std::int64_t t = d.latest->progress_wall_ns - d.latest->quiet_ms * 1000000;
          if (since == 0 || t < since) since = t;
        }
    }
    f.since_ns = since;
    std::vector<int> missing, died, desync, kernel_idle, waiting, no_log;
    for (int r = 0; r < n; ++r) {
      auto it = ranks.find(r);
      const RankData* d = it == ranks.end() ? nullptr : &it->second;
      HangRank h = rank_row(r, d);
      if (d == nullptr) {
        h.note = kNoLogNote;
        no_log.push_back(r);
        f.ranks.push_back(h);
        continue;
      }
      const StuckOpInfo* o = d->coll_at(k);
      const CollSig* c = d->done_at(k);
      if (o != nullptr) h.op = op_text(*o), h.progress = progress_text(*o);
      else if (c != nullptr) h.op = std::string(to_string(c->func)) + " seq " + std::to_string(c->seq) + " (completed)";
      if (d->done_with() && d->started() <= k && c == nullptr) {
        h.state = "left";
        h.note = "last started issue " + std::to_string(d->started() - 1) +
                 "; it ended the communicator (comm_end) without starting it";
        missing.push_back(r);
      } else if (d->done_with()) {
        h.state = "finalized";
      } else if (c != nullptr && o == nullptr) {
        h.state = "completed";
      } else if (o != nullptr || (d->started() > k && best == 0)) {
        const bool differs = o != nullptr && best != 0 && !(sig_of(*o) == major);
        h.state = differs ? "desync" : "waiting";
        if (differs) desync.push_back(r);
        else waiting.push_back(r);
        if (o != nullptr && !o->reclaimed && o->ch_started == 0) kernel_idle.push_back(r);
        if (o == nullptr) h.note = "started it (not recorded: filtered by size or sampled out)";
      } else if (d->started() <= k) {
        h.note = "last started issue " + std::to_string(d->started() - 1);
        classify_missing(*d, since, end, h);
        if (h.state == "died") died.push_back(r);
        missing.push_back(r);
      } else {
        h.state = "waiting";
        waiting.push_back(r);
      }
      f.ranks.push_back(h);
    }
    const std::string at = f.func + (f.has_seq ? " seq " + std::to_string(f.seq) : std::string()) + " (issue " +
                           std::to_string(k) + ")";
    auto culprit_where = [&](const std::vector<int>& v) {
      std::string s;
      for (int r : v) {
        if (!s.empty()) s += "; ";
        s += "rank " + std::to_string(r) + ": " + where(f.ranks[static_cast<std::size_t>(r)]);
      }
      return s;
    };
    bool from_no_log = false;
    if (missing.empty() && !no_log.empty() && waiting.size() + no_log.size() == static_cast<std::size_t>(n)) {
      // Every rank that left a log waits in it; the others left none of
      // this communicator (a process killed before its first write, or
      // logs that were not given to the analyzer).
      missing = no_log;
      from_no_log = true;
    }
    if (!missing.empty()) {
      f.kind = "missing_ranks";
      f.culprits = missing;
      const bool all_died = died.size() == missing.size() && !died.empty();
      f.verdict = std::string(missing.size() == 1 ? "rank " : "ranks ") + rank_list(missing) + " never joined " + at +
                  (all_died ? (missing.size() == 1 ? " (its process died: its log stopped)"
                                                   : " (their processes died: their logs stopped)")
                            : "") +
                  "; " + std::to_string(waiting.size()) + " of " + std::to_string(n) + " ranks wait in it" +
                  (from_no_log ? std::string("; no log of ") + (missing.size() == 1 ? "it" : "them") +
                                     " was read: if not every host's logs were given, give them and run again"
                               : std::string());
      for (int r : missing)
        f.evidence.push_back("rank " + std::to_string(r) + " (" + where(f.ranks[static_cast<std::size_t>(r)]) +
                             "): " + f.ranks[static_cast<std::size_t>(r)].note);
    } else if (!desync.empty() && by_sig.size() > 1 && std::count_if(by_sig.begin(), by_sig.end(), [&](const auto& e) {
                 return e.second.size() == best;
               }) > 1) {
      // As many ranks on each side: which is wrong cannot be told.
      f.kind = "desync";
      std::vector<int> all;
      std::string sides;
      for (auto& [sg, v] : by_sig) {
        all.insert(all.end(), v.begin(), v.end());
        sides += (sides.empty() ? "" : "; ") + sig_text(sg) + " on rank" + (v.size() > 1 ? "s " : " ") + rank_list(v);
      }
      std::sort(all.begin(), all.end());
      f.culprits = all;
      f.func.clear();
      f.has_seq = false;
      f.verdict = "ranks " + rank_list(all) + " issued different collectives at issue " + std::to_string(k) + ": " +
                  sides + "; as many ranks on each side, so which side is wrong cannot be told";
      f.evidence.push_back(sides);
    } else if (!desync.empty() && by_sig.size() > 1) {
      f.kind = "desync";
      f.culprits = desync;
      std::string other;
      for (auto& [s, v] : by_sig)
        if (!(s == major)) other += (other.empty() ? "" : ", ") + sig_text(s) + " on rank" + (v.size() > 1 ? "s " : " ") + rank_list(v);
      f.verdict = std::string(desync.size() == 1 ? "rank " : "ranks ") + rank_list(desync) + " issued " + other +
                  " where the others issued " + sig_text(major) + " (issue " + std::to_string(k) + ")";
      f.evidence.push_back("issue " + std::to_string(k) + ": " + sig_text(major) + " on " +
                           std::to_string(by_sig[major].size()) + " ranks; " + other);
      f.evidence.push_back(culprit_where(desync));
    } else {
      f.kind = "stuck_collective";
      stuck_culprit(ranks, k, waiting, kernel_idle, at, f);
    }
    return true;
  }

  // A rank that never started what the others did: alive (its log goes on
  // after the others got stuck), exited normally, or died (its log stopped
  // while the others' went on). Sets h.state and adds to h.note.
  static void classify_missing(const RankData& d, std::int64_t since, std::int64_t end, HangRank& h) {
    const std::int64_t grace = std::max<std::int64_t>(d.hang_ms, 1) * 1000000;
    if (since != 0 && d.log_end >= since + grace) {
      h.state = "missing";
      h.note += "; alive: its log goes on " + seconds(d.log_end - since) + " after the others got stuck";
    } else if (d.clean_end) {
      h.state = "exited";
      h.note += "; its process ended normally without issuing it";
    } else if (since != 0 && end >= since + grace) {
      h.state = "died";
      h.note += "; its log stops " +
                (d.log_end >= since ? seconds(d.log_end - since) + " after" : seconds(since - d.log_end) + " before") +
                " the others got stuck, while theirs went on " + seconds(end - since) + ": the process died";
    } else {
      h.state = "missing";
      h.note += "; the logs end too soon after the hang to tell whether it was alive";
    }
  }

  // No collective stuck or disagreed on at the Coll level, but the ranks'
  // settled counts of collective calls (CollApi, v5+) differ: a call NCCL
  // gave no Coll event (Broadcast on 2.29+), so no seq and no issue.
  bool judge_api(std::map<int, RankData>& ranks, HangFinding& f) {
    std::uint64_t lo = UINT64_MAX, hi = 0;
    bool settled = true;
    const std::int64_t end = job_end(ranks);
    // Ranks without a count: no log of the comm, or no progress line (a
    // process that died first). They can only be suspects if their log
    // stopped well before the others' and the others were still alive.
    std::vector<int> unknown;
    bool alive_at_end = true;
    for (int r = 0; r < f.nranks; ++r) {
      auto it = ranks.find(r);
      if (it == ranks.end()) {
        unknown.push_back(r);
        continue;
      }
      const RankData& d = it->second;
      if (d.done_with()) continue;
      if (d.latest == nullptr || d.latest->api_issued == 0) {
        if (d.clean_end || d.log_end >= end - d.hang_ms * 1000000) return false;
        unknown.push_back(r);
        continue;
      }
      lo = std::min(lo, d.latest->api_issued);
      hi = std::max(hi, d.latest->api_issued);
      settled = settled && d.latest->quiet_ms >= d.hang_ms;
      alive_at_end = alive_at_end && !d.clean_end;
    }
    if (lo == UINT64_MAX || !settled) return false;
    if (hi == lo) {
      // Everyone with a count agrees: a hang only if they were all alive and
      // waiting at the end, and some rank died before (it is the culprit).
      if (unknown.empty() || !alive_at_end) return false;
      lo = lo - 1;  // the others' last call is the one the unknown ranks never made
    }
    std::int64_t since = 0;
    for (auto& [r, d] : ranks)
      if (!d.done_with() && d.latest != nullptr && d.latest->api_issued > lo) {
        if (f.func.empty() && d.latest->api_issued == lo + 1) f.func = d.latest->last_api_func;
        const std::int64_t t = d.latest->progress_wall_ns - d.latest->quiet_ms * 1000000;
        if (since == 0 || t < since) since = t;
      }
    f.since_ns = since;
    f.kind = "missing_ranks";
    std::vector<int> missing, waiting;
    for (int r = 0; r < f.nranks; ++r) {
      auto it = ranks.find(r);
      HangRank h = rank_row(r, it == ranks.end() ? nullptr : &it->second);
      if (it == ranks.end()) {
        h.note = kNoLogNote;
        missing.push_back(r);
      } else {
        const RankData& d = it->second;
        if (d.done_with()) {
          h.state = "finalized";
        } else if (d.latest == nullptr || d.latest->api_issued == 0) {
          h.note = "no count of its collective calls (no progress line)";
          classify_missing(d, since, end, h);
          missing.push_back(r);
        } else if (d.latest->api_issued > lo) {
          h.state = "waiting";
          h.note = std::to_string(d.latest->api_issued) + " collective calls";
          waiting.push_back(r);
        } else {
          h.note = std::to_string(d.latest->api_issued) + " collective calls";
          classify_missing(d, since, end, h);
          missing.push_back(r);
        }
      }
      f.ranks.push_back(h);
    }
    f.culprits = missing;
    f.verdict = std::string(missing.size() == 1 ? "rank " : "ranks ") + rank_list(missing) + " never made collective call " +
                std::to_string(lo + 1) + " (" + (f.func.empty() ? "unknown" : f.func) + ") that " +
                std::to_string(waiting.size()) + " of " + std::to_string(f.nranks) +
                " ranks made and wait in; NCCL reported no Coll event for it (so no seq: Broadcast on NCCL 2.29+ "
                "unless NCCL_ALLGATHERV_ENABLE=0)";
    for (int r : missing)
      f.evidence.push_back("rank " + std::to_string(r) + " (" + where(f.ranks[static_cast<std::size_t>(r)]) +
                           "): " + f.ranks[static_cast<std::size_t>(r)].note);
    return true;
  }

  // Every rank is in collective k and none completed it: who holds it up.
  void stuck_culprit(std::map<int, RankData>& ranks, std::int64_t k, const std::vector<int>& waiting,
                     const std::vector<int>& kernel_idle, const std::string& at, HangFinding& f) {
    const std::string all = "every rank (" + std::to_string(waiting.size()) + " of " + std::to_string(f.nranks) +
                            ") started " + at + " and none completed it";
    std::size_t with_channels = 0;
    for (int r : waiting)
      if (const StuckOpInfo* o = ranks[r].coll_at(k); o != nullptr && !o->reclaimed) with_channels += o->ch_started != 0;
    if (!kernel_idle.empty() && with_channels != 0) {
      f.culprits = kernel_idle;
      f.verdict = std::string(kernel_idle.size() == 1 ? "rank " : "ranks ") + rank_list(kernel_idle) +
                  ": the kernel never started (no channel began) while the other ranks' kernels run and wait; " + all;
      f.evidence.push_back(std::to_string(with_channels) + " ranks have channels running in it; rank" +
                           (kernel_idle.size() > 1 ? "s " : " ") + rank_list(kernel_idle) +
                           " none: its GPU never ran the kernel (a hung earlier kernel on its stream, or the GPU)");
      return;
    }
    // Network: receives whose data never came, while the rest of the op's
    // transfers completed.
    struct Pend {
      int rank, peer;
      std::uint32_t posted, done;
    };
    std::vector<Pend> recv_stuck;
    std::size_t transfers = 0;
    for (int r : waiting) {
      const StuckOpInfo* o = ranks[r].coll_at(k);
      if (o == nullptr) continue;
      for (const StuckNet& nt : o->net) {
        ++transfers;
        if (!nt.send && nt.posted > nt.done) recv_stuck.push_back({r, nt.peer, nt.posted, nt.done});
      }
    }
    if (!recv_stuck.empty() && recv_stuck.size() < transfers) {
      // The receive that got the least of what it posted went first.
      std::sort(recv_stuck.begin(), recv_stuck.end(), [](const Pend& a, const Pend& b) {
        return static_cast<double>(a.done) / a.posted < static_cast<double>(b.done) / b.posted;
      });
      const Pend& p = recv_stuck.front();
      f.culprits = {p.rank};
      f.peer = p.peer;
      f.verdict = "rank " + std::to_string(p.rank) + "'s receives from rank " + std::to_string(p.peer) +
                  " never completed (" + std::to_string(p.done) + " of " + std::to_string(p.posted) +
                  " steps arrived): the link from rank " + std::to_string(p.peer) + " to rank " +
                  std::to_string(p.rank) + ", or rank " + std::to_string(p.peer) + "; " + all;
      for (const Pend& q : recv_stuck)
        f.evidence.push_back("rank " + std::to_string(q.rank) + " recv from " + std::to_string(q.peer) + ": " +
                             std::to_string(q.done) + "/" + std::to_string(q.posted) + " steps");
      f.evidence.push_back(std::to_string(transfers - recv_stuck.size()) + " other transfers of the op completed");
      return;
    }
    // Channels that never ended on any rank.
    std::uint64_t open_all = ~0ull;
    bool any = false;
    for (int r : waiting) {
      const StuckOpInfo* o = ranks[r].coll_at(k);
      if (o == nullptr || o->reclaimed || o->ch_started == 0) continue;
      open_all &= o->ch_started & ~o->ch_done;
      any = true;
    }
    if (any && open_all != 0 && std::popcount(open_all) < 64) {
      bool some_done = false;
      for (int r : waiting)
        if (const StuckOpInfo* o = ranks[r].coll_at(k)) some_done = some_done || (o->ch_done != 0);
      if (some_done) {
        f.verdict = "channel " + channels(open_all) + " never ended on any rank while the others did: its path " +
                    "(the links of that channel's ring or tree); " + all;
        f.evidence.push_back("channels still running on every rank: " + channels(open_all));
        return;
      }
    }
    f.verdict = all + "; no rank, link or channel stands out";
    f.evidence.push_back("each rank's progress in it is in the ranks table");
  }

  // P2P ops stuck with no collective pending.
  bool judge_p2p(std::map<int, RankData>& ranks, HangFinding& f) {
    const StuckOpInfo* first = nullptr;
    int at = -1;
    for (auto& [r, d] : ranks) {
      // A process that exited cleanly, or a rank whose state was still moving, is not hung.
      if (d.done_with() || d.clean_end || !d.settled()) continue;
      for (const StuckOpInfo& o : d.pending)
        if (o.kind == OpKind::kP2p && (first == nullptr || o.enqueue_wall_ns < first->enqueue_wall_ns)) {
          first = &o;
          at = r;
        }
    }
    if (first == nullptr) return false;
    f.kind = "stuck_p2p";
    f.func = first->func_name;
    f.seq = first->seq;
    f.has_seq = true;
    f.since_ns = first->enqueue_wall_ns;
    f.peer = first->peer;
    // Does the peer have the matching op in flight?
    const Func want = first->func == Func::kRecv ? Func::kSend : Func::kRecv;
    bool peer_has = false, peer_logged = false;
    if (auto it = ranks.find(first->peer); it != ranks.end()) {
      peer_logged = true;
      for (const StuckOpInfo& o : it->second.pending)
        peer_has = peer_has || (o.kind == OpKind::kP2p && o.func == want && o.peer == at && o.seq == first->seq);
    }
    const std::string what = "rank " + std::to_string(at) + "'s " + op_text(*first);
    if (peer_logged && !peer_has) {
      f.culprits = {first->peer};
      f.verdict = "rank " + std::to_string(first->peer) + " never posted the matching " + std::string(to_string(want)) +
                  " (seq " + std::to_string(first->seq) + "): " + what + " waits for it";
    } else {
      f.culprits = {at};
      f.verdict = what + " never completed" +
                  (peer_has ? "; its peer's matching op is stuck too: the link between them"
                            : "; its peer left no log");
    }
    f.evidence.push_back(what + ": " + progress_text(*first));
    for (int r = 0; r < f.nranks; ++r) {
      auto it = ranks.find(r);
      HangRank h = rank_row(r, it == ranks.end() ? nullptr : &it->second);
      if (it != ranks.end()) {
        h.state = it->second.done_with() ? "finalized" : it->second.pending.empty() ? "idle" : "waiting";
        for (const StuckOpInfo& o : it->second.pending)
          if (o.kind == OpKind::kP2p) {
            h.op += (h.op.empty() ? "" : "; ") + op_text(o);
            h.progress = progress_text(o);
          }
      }
      f.ranks.push_back(h);
    }
    return true;
  }

  // A rank missing from one hung collective is often waiting in another
  // (its process is the same): say where, and that the hang began there.
  void cross_reference(HangResult& out) {
    for (HangFinding& f : out.findings) {
      if (f.kind != "missing_ranks") continue;
      for (int r : f.culprits) {
        HangRank& m = f.ranks[static_cast<std::size_t>(r)];
        if (m.state != "missing" || m.file == UINT32_MAX) continue;
        const FileInfo& mf = res_.files[m.file];
        for (const HangFinding& g : out.findings) {
          if (&g == &f) continue;
          for (const HangRank& w : g.ranks) {
            if (w.state != "waiting" || w.file == UINT32_MAX) continue;
            const FileInfo& wf = res_.files[w.file];
            if (wf.host != mf.host || wf.pid != mf.pid) continue;
            const std::string s = "it waits in " + g.comm_name + " " + g.func +
                                  (g.has_seq ? " seq " + std::to_string(g.seq) : std::string()) + " as rank " +
                                  std::to_string(w.rank) + (g.since_ns != 0 && g.since_ns <= f.since_ns
                                                                ? " (a hang that began earlier: the cause)"
                                                                : "");
            m.note += "; " + s;
            f.evidence.push_back("rank " + std::to_string(r) + ": " + s);
          }
        }
      }
    }
  }

  static std::int64_t job_end(const std::map<int, RankData>& ranks) {
    std::int64_t e = 0;
    for (auto& [r, d] : ranks) e = std::max(e, d.log_end);
    return e;
  }

  void notes(HangResult& out) {
    if (out.files_with_progress == 0 && out.files != 0)
      out.notes.push_back("no progress lines in these logs (a plugin before 0.2, or NCCL_INSPECTOR_HANG_MS=0): "
                          "hangs are judged from completed records and reclaimed ops only");
    out.notes.push_back(std::to_string(out.comms) + (out.comms == 1 ? " communicator; " : " communicators; ") +
                        std::to_string(out.comms_finalized) + " finalized by every rank that logged it (not hung)");
    out.notes.push_back("issue = a collective's place in its communicator's issue order on each rank; seq = NCCL's "
                        "per-function sequence number (docs/log-format.md)");
  }

  const ReadResult& res_;
  std::map<std::uint64_t, std::map<int, RankData>> comms_;
  std::map<std::uint64_t, int> nranks_;
};

}  // namespace

HangResult find_hangs(const ReadResult& res) { return Finder(res).run(); }

void add_hang_sections(Report& r, const HangResult& h, const ReadResult& res) {
  Section& s = r.add("hangs", "Hangs: who never joined which collective");
  s.table.columns = {"comm", "kind", "func", "seq", "issue", "culprit_ranks", "peer", "stuck_since", "verdict",
                     "evidence"};
  for (const HangFinding& f : h.findings) {
    std::string ev;
    for (const std::string& e : f.evidence) ev += (ev.empty() ? "" : " | ") + e;
    s.table.rows.push_back({f.comm_name, f.kind, f.func, f.has_seq ? Cell(f.seq) : Cell(),
                            f.issue >= 0 ? Cell(f.issue) : Cell(), rank_list(f.culprits),
                            f.peer >= 0 ? Cell(f.peer) : Cell(), wall_text(f.since_ns), f.verdict, ev});
  }
  if (h.findings.empty()) s.notes.push_back("no hang: every communicator finalized, or none was left with an op stuck "
                                            "or ranks disagreeing on what they started");
  for (const std::string& n : h.notes) s.notes.push_back(n);
  if (h.findings.empty()) return;
  Section& t = r.add("hang_ranks", "Each rank of a hung communicator, side by side");
  t.table.columns = {"comm", "rank", "host", "pid", "state", "started", "last_done_issue", "op_at_hang", "progress",
                     "log_ends_after_hang_s", "note"};
  for (const HangFinding& f : h.findings) {
    for (const HangRank& k : f.ranks) {
      const FileInfo* fi = k.file == UINT32_MAX ? nullptr : &res.files[k.file];
      t.table.rows.push_back({f.comm_name, k.rank, fi ? Cell(fi->host) : Cell(), fi ? Cell(fi->pid) : Cell(), k.state,
                              k.started >= 0 ? Cell(k.started) : Cell(), k.done_issue >= 0 ? Cell(k.done_issue) : Cell(),
                              k.op, k.progress,
                              f.since_ns != 0 && k.log_end_ns != 0
                                  ? Cell(static_cast<double>(k.log_end_ns - f.since_ns) / 1e9, 1)
                                  : Cell(),
                              k.note});
    }
  }
  t.notes.push_back("started: collectives the rank started on the comm; states: waiting (in it), missing (never "
                    "started it, alive), died (never started it, its log stopped), exited (its process ended "
                    "normally), left (it ended the communicator without starting it), desync (a different op "
                    "there), completed, finalized, no_log");
}

std::vector<Marker> hang_markers(const HangResult& h) {
  std::vector<Marker> out;
  for (const HangFinding& f : h.findings) {
    Marker m;
    m.kind = "hang:" + f.kind;
    m.comm_label = f.comm_name;
    m.where = "rank " + rank_list(f.culprits);
    m.when = wall_text(f.since_ns);
    m.evidence = f.verdict;
    m.magnitude = static_cast<double>(f.culprits.size());
    m.track = "hangs";
    m.comm = f.comm;
    m.rank = f.culprits.size() == 1 ? f.culprits[0] : -1;
    m.start_ns = f.since_ns;
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

class HangsAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "hangs"; }
  std::string_view help() const override {
    return "after a hang: which rank never joined which collective, stuck kernels and links, desyncs (exit 4 when "
           "found)";
  }
  Input input() const override { return Input::kOps; }
  bool keeps_ops() const override { return false; }  // find_hangs reads the files' progress state only
  AnalysisResult run(const AnalysisInput& in) override {
    AnalysisResult r;
    HangResult h = find_hangs(in.res);
    add_hang_sections(r.report, h, in.res);
    r.markers = hang_markers(h);
    if (!h.findings.empty()) r.exit = kExitHang;
    r.detail = std::move(h);
    return r;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_hangs_analysis() { return std::make_unique<HangsAnalysis>(); }

}  // namespace ni::analysis
