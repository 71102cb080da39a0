#include "src/analysis/view.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>

#include "src/analysis/stragglers.h"

namespace ni::analysis {

void ViewSink::on_op(const Op& op, const OpDetail* d, const FileInfo& file) {
  coll.on_op(op, d, file);
  if (d == nullptr) {
    add_detail(0, [](std::vector<Ch>&) {}, 0, 0);
    return;
  }
  add_detail(
      d->ch_times.size(), [d](std::vector<Ch>& out) { for (const auto& c : d->ch_times) out.push_back(Ch::of(c)); },
      d->net_send_bytes + d->net_recv_bytes, d->user_tag);
}

void ViewSink::add(const Op& op, CollectSink::Extra&& e, const Ch* c, std::size_t nch, std::uint64_t net,
                   std::uint64_t tag) {
  coll.ops.push_back(op);
  coll.extra.push_back(std::move(e));
  add_detail(nch, [c, nch](std::vector<Ch>& out) { out.insert(out.end(), c, c + nch); }, net, tag);
}

std::uint64_t ViewSink::tag_of(std::size_t i) const {
  auto it = std::lower_bound(tagged.begin(), tagged.end(), std::make_pair(static_cast<std::uint32_t>(i), std::uint64_t{0}));
  return it != tagged.end() && it->first == i ? it->second : 0;
}

void ViewSink::merge(ViewSink&& o) {
  coll.merge(std::move(o.coll));
  channel_capped = channel_capped || o.channel_capped || ch.size() + o.ch.size() > kMaxChannelEntries;
  const auto base = static_cast<std::uint32_t>(ch.size());
  const auto op_base = static_cast<std::uint32_t>(ch_end.size());
  for (const auto& [i, tag] : o.tagged) tagged.push_back({op_base + i, tag});
  if (!channel_capped) ch.insert(ch.end(), o.ch.begin(), o.ch.end());
  for (std::uint32_t e : o.ch_end) ch_end.push_back(channel_capped ? base : base + e);
  net_bytes.insert(net_bytes.end(), o.net_bytes.begin(), o.net_bytes.end());
  if (channel_capped) {  // drop everything: channel detail is all or nothing
    ch.clear();
    std::fill(ch_end.begin(), ch_end.end(), 0u);
  }
  o = ViewSink();
}

std::string comm_short(std::uint64_t h, const ReadResult& res) {
  auto it = res.comm_names.find(h);
  if (it != res.comm_names.end() && !it->second.empty()) return it->second;
  return hex_hash(h).substr(0, 10);
}

namespace {

// One OS process: the files of one (host, pid) (rotation).
struct Proc {
  std::string host;
  std::int64_t pid = -1;
  int global_rank = -1;
  std::vector<std::uint64_t> comm_order;         // order of appearance
  std::map<std::uint64_t, std::set<int>> ranks;  // comm -> local ranks
  std::map<std::uint64_t, int> nranks;           // comm -> nranks
};

// map_gpus in named steps: processes, their ranks, GPU ordinals (exact from the
// comm records' cuda_dev, else inferred), the GPUs in display order, and the ops.
class GpuMapper {
 public:
  GpuMapper(const std::vector<Op>& ops, const ReadResult& res) : ops_(ops), res_(res) {}
  GpuMap run() {
    find_processes();
    collect_ranks();
    ngpu_.assign(procs_.size(), 1);
    widest_.assign(procs_.size(), 0);
    proc_devs_.resize(procs_.size());
    for (std::size_t pi = 0; pi < procs_.size(); ++pi) name_by_devices(pi);
    for (std::size_t pi = 0; pi < procs_.size(); ++pi) {
      widest_[pi] = widest_comm(procs_[pi]);
      if (proc_devs_[pi].empty()) infer_ordinals(pi);  // else named by the plugin
    }
    make_gpus();
    number_gpus();
    map_ops();
    order_comms();
    return std::move(m_);
  }

 private:
  void find_processes();
  void collect_ranks();
  void name_by_devices(std::size_t pi);
  static std::uint64_t widest_comm(const Proc& p);
  void infer_ordinals(std::size_t pi);
  Gpu make_gpu(std::size_t pi, int o) const;
  void make_gpus();
  void number_gpus();
  void map_ops();
  void order_comms();
  int& ordinal(std::size_t pi, std::uint64_t c, int r) { return ordinal_[{static_cast<int>(pi), c, r}]; }

  const std::vector<Op>& ops_;
  const ReadResult& res_;
  GpuMap m_;
  std::vector<int> file_proc_;  // per file: its process
  std::vector<Proc> procs_;
  std::set<std::uint64_t> all_comms_;
  std::map<std::tuple<int, std::uint64_t, int>, int> ordinal_;  // (proc, comm, rank) -> GPU ordinal
  std::vector<int> ngpu_;
  std::vector<std::uint64_t> widest_;
  // The CUDA devices a process's comm records name (cuda_dev), when every
  // (comm, rank) it has ops for names one: then the GPUs are exact.
  std::vector<std::vector<int>> proc_devs_;
  std::map<std::pair<int, int>, std::string> bus_of_;  // (proc, cuda_dev) -> pci_bus_id
  std::map<std::pair<int, int>, std::uint32_t> gpu_of_;  // (proc, ordinal) -> index in gpus_
  std::vector<Gpu> gpus_;
  std::vector<std::uint32_t> new_index_;  // gpus_ index -> index in m_.gpus
};

// OS processes: files of one (host, pid) (rotation) are one process.
void GpuMapper::find_processes() {
  std::map<std::pair<std::string, std::int64_t>, int> proc_of;
  file_proc_.assign(res_.files.size(), 0);
  for (std::size_t f = 0; f < res_.files.size(); ++f) {
    const auto key = std::make_pair(res_.files[f].host, res_.files[f].pid >= 0 ? res_.files[f].pid : -static_cast<std::int64_t>(f) - 2);
    auto it = proc_of.emplace(key, static_cast<int>(proc_of.size())).first;
    file_proc_[f] = it->second;
  }
  procs_.resize(proc_of.size());
  for (const auto& [key, p] : proc_of) {
    procs_[static_cast<std::size_t>(p)].host = key.first;
    procs_[static_cast<std::size_t>(p)].pid = key.second;
  }
  for (std::size_t f = 0; f < res_.files.size(); ++f) {
    Proc& p = procs_[static_cast<std::size_t>(file_proc_[f])];
    if (res_.files[f].global_rank >= 0) p.global_rank = res_.files[f].global_rank;
    for (const auto& c : res_.files[f].comms)
      if (std::find(p.comm_order.begin(), p.comm_order.end(), c.comm_hash) == p.comm_order.end())
        p.comm_order.push_back(c.comm_hash);
  }
}

// The (comm, rank) pairs each process has ops for.
void GpuMapper::collect_ranks() {
  for (const auto& op : ops_) {
    Proc& p = procs_[static_cast<std::size_t>(file_proc_[op.file_idx])];
    p.ranks[op.comm_hash].insert(op.rank);
    int& n = p.nranks[op.comm_hash];
    n = std::max(n, op.nranks);
    all_comms_.insert(op.comm_hash);
  }
}

// Exact GPUs: every (comm, rank) of the process names its CUDA device.
void GpuMapper::name_by_devices(std::size_t pi) {
  std::map<std::pair<std::uint64_t, int>, int> dev_of;  // (comm, rank) -> cuda_dev
  for (std::size_t f = 0; f < res_.files.size(); ++f) {
    if (file_proc_[f] != static_cast<int>(pi)) continue;
    for (const auto& ci : res_.files[f].comms) {
      if (ci.cuda_dev < 0) continue;
      dev_of[{ci.comm_hash, ci.rank}] = ci.cuda_dev;
      if (!ci.pci_bus_id.empty()) bus_of_[{static_cast<int>(pi), ci.cuda_dev}] = ci.pci_bus_id;
    }
  }
  const Proc& p = procs_[pi];
  bool exact = !p.ranks.empty();
  std::set<int> devs;
  for (const auto& [c, rs] : p.ranks)
    for (int r : rs) {
      auto it = dev_of.find({c, r});
      if (it == dev_of.end()) exact = false;
      else devs.insert(it->second);
    }
  if (!exact) return;
  const auto& dv = proc_devs_[pi] = std::vector<int>(devs.begin(), devs.end());
  for (const auto& [c, rs] : p.ranks)
    for (int r : rs)
      ordinal(pi, c, r) = static_cast<int>(std::lower_bound(dv.begin(), dv.end(), dev_of.at({c, r})) - dv.begin());
  ngpu_[pi] = static_cast<int>(dv.size());
}

// The widest comm: most ranks, then most local ranks, then lowest hash.
std::uint64_t GpuMapper::widest_comm(const Proc& p) {
  std::uint64_t widest = 0;
  std::tuple<int, int, std::uint64_t> best{-1, -1, 0};
  for (const auto& [c, rs] : p.ranks) {
    const std::tuple<int, int, std::uint64_t> k{p.nranks.at(c), static_cast<int>(rs.size()), ~c};
    if (k > best) {
      best = k;
      widest = c;
    }
  }
  return widest;
}

// Without device ids: one GPU unless some comm has several local ranks. Then the
// (comm, rank) pairs of one comm name, in the order their comm records appeared
// (NCCL inits per device in device order), are GPUs 0, 1, ...; pairs without a
// comm record follow by (hash, rank). Unnamed comms stand alone.
void GpuMapper::infer_ordinals(std::size_t pi) {
  const Proc& p = procs_[pi];
  int local_max = 1;  // most local ranks in one comm: > 1 means a multi-GPU process
  for (const auto& [c, rs] : p.ranks) local_max = std::max(local_max, static_cast<int>(rs.size()));
  if (local_max == 1) {
    for (const auto& [c, rs] : p.ranks)
      for (int r : rs) ordinal(pi, c, r) = 0;
    return;
  }
  std::map<std::string, std::vector<std::pair<std::uint64_t, int>>> groups;
  std::set<std::pair<std::uint64_t, int>> seen;
  auto group_of = [&](std::uint64_t c) {
    auto it = res_.comm_names.find(c);
    return it != res_.comm_names.end() && !it->second.empty() ? "n:" + it->second : "h:" + hex_hash(c);
  };
  for (std::size_t f = 0; f < res_.files.size(); ++f) {
    if (file_proc_[f] != static_cast<int>(pi)) continue;
    for (const auto& ci : res_.files[f].comms) {
      auto it = p.ranks.find(ci.comm_hash);
      if (it == p.ranks.end() || !it->second.count(ci.rank) || !seen.insert({ci.comm_hash, ci.rank}).second) continue;
      groups[group_of(ci.comm_hash)].push_back({ci.comm_hash, ci.rank});
    }
  }
  for (const auto& [c, rs] : p.ranks)
    for (int r : rs)
      if (seen.insert({c, r}).second) groups[group_of(c)].push_back({c, r});
  int g = local_max;
  for (const auto& [name, pairs] : groups) g = std::max(g, static_cast<int>(pairs.size()));
  ngpu_[pi] = g;
  for (const auto& [name, pairs] : groups)
    for (std::size_t k = 0; k < pairs.size(); ++k) ordinal(pi, pairs[k].first, pairs[k].second) = static_cast<int>(k) % g;
}

// GPU `o` of process pi, with its displayed rank (see view.h).
Gpu GpuMapper::make_gpu(std::size_t pi, int o) const {
  const Proc& p = procs_[pi];
  Gpu g;
  g.host = p.host;
  g.pid = p.pid;
  g.ordinal = o;
  g.ngpus_in_process = ngpu_[pi];
  if (!proc_devs_[pi].empty()) {
    g.cuda_dev = proc_devs_[pi][static_cast<std::size_t>(o)];
    auto b = bus_of_.find({static_cast<int>(pi), g.cuda_dev});
    if (b != bus_of_.end()) g.pci_bus_id = b->second;
  }
  if (ngpu_[pi] == 1 && p.global_rank >= 0) {
    g.rank = p.global_rank;
    g.rank_source = "global_rank";
  } else if (!p.ranks.empty()) {
    // its rank in the widest comm, or in a comm of the same name (the GPU's own "tp" of several)
    const std::string wname = comm_short(widest_[pi], res_);
    for (const auto& [key, ord] : ordinal_) {
      const auto& [kp, c, r] = key;
      if (kp != static_cast<int>(pi) || ord != o) continue;
      if (c == widest_[pi]) {
        g.rank = r;
        break;
      }
      if (g.rank < 0 && comm_short(c, res_) == wname) g.rank = r;
    }
    g.rank_source = "rank in " + wname;
  }
  return g;
}

void GpuMapper::make_gpus() {
  for (std::size_t pi = 0; pi < procs_.size(); ++pi)
    for (int o = 0; o < ngpu_[pi]; ++o) {
      gpu_of_[{static_cast<int>(pi), o}] = static_cast<std::uint32_t>(gpus_.size());
      gpus_.push_back(make_gpu(pi, o));
    }
}

// Sort GPUs by (global rank, host, pid, ordinal) and renumber: GPUs without a
// global rank follow, in (host, pid, ordinal) order. Each gets its label.
void GpuMapper::number_gpus() {
  std::vector<std::uint32_t> perm(gpus_.size());
  for (std::uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
  auto global = [](const Gpu& g) { return g.rank_source == "global_rank" ? g.rank : INT32_MAX; };
  std::sort(perm.begin(), perm.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Gpu& x = gpus_[a];
    const Gpu& y = gpus_[b];
    return std::make_tuple(global(x), x.host, x.pid, x.ordinal) < std::make_tuple(global(y), y.host, y.pid, y.ordinal);
  });
  new_index_.resize(gpus_.size());
  for (std::uint32_t k = 0; k < perm.size(); ++k) {
    new_index_[perm[k]] = k;
    Gpu g = gpus_[perm[k]];
    g.trace_pid = static_cast<int>(k) + 1;
    // "host · rank 3 · pid 123" with a global rank; "host · tp rank 3 · pid 123 GPU 1" without
    std::string rank = g.rank >= 0 ? std::to_string(g.rank) : std::string("?");
    if (g.rank_source != "global_rank" && g.rank_source.rfind("rank in ", 0) == 0)
      rank = g.rank_source.substr(8) + " rank " + rank;
    else
      rank = "rank " + rank;
    // The CUDA device when the plugin named it; else the inferred ordinal of a multi-GPU process.
    g.label = g.host + " \u00b7 " + rank + " \u00b7 pid " + std::to_string(g.pid) +
              (g.cuda_dev >= 0              ? " GPU " + std::to_string(g.cuda_dev)
               : g.ngpus_in_process > 1 ? " GPU " + std::to_string(g.ordinal)
                                        : std::string());
    m_.gpus.push_back(std::move(g));
  }
}

void GpuMapper::map_ops() {
  m_.op_gpu.resize(ops_.size());
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = ops_[i];
    const int pi = file_proc_[op.file_idx];
    const int o = ordinal_[{pi, op.comm_hash, op.rank}];
    const std::uint32_t g = new_index_[gpu_of_[{pi, o}]];
    m_.op_gpu[i] = g;
    m_.by_comm_rank.emplace(std::make_pair(op.comm_hash, static_cast<int>(op.rank)), g);
  }
}

// Every comm, ordered by (name, hash).
void GpuMapper::order_comms() {
  m_.comms.assign(all_comms_.begin(), all_comms_.end());
  std::stable_sort(m_.comms.begin(), m_.comms.end(), [&](std::uint64_t a, std::uint64_t b) {
    auto na = res_.comm_names.find(a), nb = res_.comm_names.find(b);
    const std::string sa = na == res_.comm_names.end() ? std::string() : na->second;
    const std::string sb = nb == res_.comm_names.end() ? std::string() : nb->second;
    return std::tie(sa, a) < std::tie(sb, b);
  });
  for (std::size_t i = 0; i < m_.comms.size(); ++i) m_.comm_index[m_.comms[i]] = static_cast<int>(i);
}

}  // namespace

GpuMap map_gpus(const std::vector<Op>& ops, const ReadResult& res) { return GpuMapper(ops, res).run(); }

}  // namespace ni::analysis
