#include "view.h"

#include <algorithm>
#include <climits>
#include <set>
#include <tuple>

#include "stragglers.h"

namespace nccl_inspector::analysis {

void ViewSink::on_op(const OpRecord& op, const OpDetail* d, const FileInfo& file) {
  coll.on_op(op, d, file);
  if (d && !channel_capped) {
    if (ch.size() + d->ch_times.size() > kMaxChannelEntries) {
      channel_capped = true;
    } else {
      for (const auto& c : d->ch_times)
        ch.push_back({static_cast<std::uint16_t>(std::clamp(c.channel, 0, 65535)), static_cast<float>(c.start_off_us),
                      static_cast<float>(c.dur_us)});
    }
  }
  ch_end.push_back(static_cast<std::uint32_t>(ch.size()));
  net_bytes.push_back(d ? d->net_send_bytes + d->net_recv_bytes : 0);
}

void ViewSink::merge(ViewSink&& o) {
  coll.merge(std::move(o.coll));
  channel_capped = channel_capped || o.channel_capped || ch.size() + o.ch.size() > kMaxChannelEntries;
  const auto base = static_cast<std::uint32_t>(ch.size());
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

GpuMap map_gpus(const std::vector<OpRecord>& ops, const ReadResult& res) {
  GpuMap m;
  // OS processes: files of one (host, pid) (rotation) are one process.
  std::map<std::pair<std::string, std::int64_t>, int> proc_of;
  std::vector<int> file_proc(res.files.size(), 0);
  for (std::size_t f = 0; f < res.files.size(); ++f) {
    const auto key = std::make_pair(res.files[f].host, res.files[f].pid >= 0 ? res.files[f].pid : -static_cast<std::int64_t>(f) - 2);
    auto [it, fresh] = proc_of.emplace(key, static_cast<int>(proc_of.size()));
    file_proc[f] = it->second;
    (void)fresh;
  }
  const std::size_t nproc = proc_of.size();
  struct Proc {
    std::string host;
    std::int64_t pid = -1;
    int global_rank = -1;
    std::vector<std::uint64_t> comm_order;                     // order of appearance
    std::map<std::uint64_t, std::set<int>> ranks;              // comm -> local ranks
    std::map<std::uint64_t, int> nranks;                       // comm -> nranks
  };
  std::vector<Proc> procs(nproc);
  for (const auto& [key, p] : proc_of) {
    procs[static_cast<std::size_t>(p)].host = key.first;
    procs[static_cast<std::size_t>(p)].pid = key.second;
  }
  for (std::size_t f = 0; f < res.files.size(); ++f) {
    Proc& p = procs[static_cast<std::size_t>(file_proc[f])];
    if (res.files[f].global_rank >= 0) p.global_rank = res.files[f].global_rank;
    for (const auto& c : res.files[f].comms)
      if (std::find(p.comm_order.begin(), p.comm_order.end(), c.comm_hash) == p.comm_order.end())
        p.comm_order.push_back(c.comm_hash);
  }
  std::set<std::uint64_t> all_comms;
  for (const auto& op : ops) {
    Proc& p = procs[static_cast<std::size_t>(file_proc[op.file_idx])];
    p.ranks[op.comm_hash].insert(op.rank);
    int& n = p.nranks[op.comm_hash];
    n = std::max(n, op.nranks);
    all_comms.insert(op.comm_hash);
  }
  // GPU ordinal per (proc, comm, rank).
  std::map<std::tuple<int, std::uint64_t, int>, int> ordinal;
  std::vector<int> ngpu(nproc, 1);
  std::vector<std::uint64_t> widest(nproc, 0);
  // The CUDA devices a process's comm records name (cuda_dev), when every
  // (comm, rank) it has ops for names one: then the GPUs are exact.
  std::vector<std::vector<int>> proc_devs(nproc);
  std::map<std::pair<int, int>, std::string> bus_of;  // (proc, cuda_dev) -> pci_bus_id
  for (std::size_t pi = 0; pi < nproc; ++pi) {
    std::map<std::pair<std::uint64_t, int>, int> dev_of;  // (comm, rank) -> cuda_dev
    for (std::size_t f = 0; f < res.files.size(); ++f) {
      if (file_proc[f] != static_cast<int>(pi)) continue;
      for (const auto& ci : res.files[f].comms) {
        if (ci.cuda_dev < 0) continue;
        dev_of[{ci.comm_hash, ci.rank}] = ci.cuda_dev;
        if (!ci.pci_bus_id.empty()) bus_of[{static_cast<int>(pi), ci.cuda_dev}] = ci.pci_bus_id;
      }
    }
    const Proc& p = procs[pi];
    bool exact = !p.ranks.empty();
    std::set<int> devs;
    for (const auto& [c, rs] : p.ranks)
      for (int r : rs) {
        auto it = dev_of.find({c, r});
        if (it == dev_of.end()) exact = false;
        else devs.insert(it->second);
      }
    if (!exact) continue;
    proc_devs[pi].assign(devs.begin(), devs.end());
    for (const auto& [c, rs] : p.ranks)
      for (int r : rs) {
        const auto& dv = proc_devs[pi];
        ordinal[{static_cast<int>(pi), c, r}] =
            static_cast<int>(std::lower_bound(dv.begin(), dv.end(), dev_of.at({c, r})) - dv.begin());
      }
    ngpu[pi] = static_cast<int>(proc_devs[pi].size());
  }
  for (std::size_t pi = 0; pi < nproc; ++pi) {
    Proc& p = procs[pi];
    int local_max = 1;  // most local ranks in one comm: > 1 means a multi-GPU process
    for (const auto& [c, rs] : p.ranks) {
      (void)c;
      local_max = std::max(local_max, static_cast<int>(rs.size()));
    }
    // widest comm: most ranks, then most local ranks, then lowest hash
    std::tuple<int, int, std::uint64_t> best{-1, -1, 0};
    for (const auto& [c, rs] : p.ranks) {
      const std::tuple<int, int, std::uint64_t> k{p.nranks[c], static_cast<int>(rs.size()), ~c};
      if (k > best) {
        best = k;
        widest[pi] = c;
      }
    }
    if (!proc_devs[pi].empty()) continue;  // named by the plugin (above)
    if (local_max == 1) {  // one GPU
      for (const auto& [c, rs] : p.ranks)
        for (int r : rs) ordinal[{static_cast<int>(pi), c, r}] = 0;
      continue;
    }
    // Several GPUs: the (comm, rank) pairs of one comm name, in the order their comm
    // records appeared (NCCL inits per device in device order), are GPUs 0, 1, ...;
    // pairs without a comm record follow by (hash, rank). Unnamed comms stand alone.
    std::map<std::string, std::vector<std::pair<std::uint64_t, int>>> groups;
    std::set<std::pair<std::uint64_t, int>> seen;
    auto group_of = [&](std::uint64_t c) {
      auto it = res.comm_names.find(c);
      return it != res.comm_names.end() && !it->second.empty() ? "n:" + it->second : "h:" + hex_hash(c);
    };
    for (std::size_t f = 0; f < res.files.size(); ++f) {
      if (file_proc[f] != static_cast<int>(pi)) continue;
      for (const auto& ci : res.files[f].comms) {
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
    ngpu[pi] = g;
    for (const auto& [name, pairs] : groups)
      for (std::size_t k = 0; k < pairs.size(); ++k)
        ordinal[{static_cast<int>(pi), pairs[k].first, pairs[k].second}] = static_cast<int>(k) % g;
  }
  // GPUs: (proc, ordinal)
  std::map<std::pair<int, int>, std::uint32_t> gpu_of;
  std::vector<Gpu> gpus;
  for (std::size_t pi = 0; pi < nproc; ++pi) {
    const Proc& p = procs[pi];
    for (int o = 0; o < ngpu[pi]; ++o) {
      Gpu g;
      g.host = p.host;
      g.pid = p.pid;
      g.ordinal = o;
      g.ngpus_in_process = ngpu[pi];
      if (!proc_devs[pi].empty()) {
        g.cuda_dev = proc_devs[pi][static_cast<std::size_t>(o)];
        auto b = bus_of.find({static_cast<int>(pi), g.cuda_dev});
        if (b != bus_of.end()) g.pci_bus_id = b->second;
      }
      if (ngpu[pi] == 1 && p.global_rank >= 0) {
        g.rank = p.global_rank;
        g.rank_source = "global_rank";
      } else if (!p.ranks.empty()) {
        // its rank in the widest comm, or in a comm of the same name (the GPU's own "tp" of several)
        const std::string wname = comm_short(widest[pi], res);
        for (const auto& [key, ord] : ordinal) {
          const auto& [kp, c, r] = key;
          if (kp != static_cast<int>(pi) || ord != o) continue;
          if (c == widest[pi]) {
            g.rank = r;
            break;
          }
          if (g.rank < 0 && comm_short(c, res) == wname) g.rank = r;
        }
        g.rank_source = "rank in " + wname;
      }
      gpu_of[{static_cast<int>(pi), o}] = static_cast<std::uint32_t>(gpus.size());
      gpus.push_back(std::move(g));
    }
  }
  // Sort GPUs by (global rank, host, pid, ordinal) and renumber: GPUs without a
  // global rank follow, in (host, pid, ordinal) order.
  std::vector<std::uint32_t> perm(gpus.size());
  for (std::uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
  auto global = [](const Gpu& g) { return g.rank_source == "global_rank" ? g.rank : INT32_MAX; };
  std::sort(perm.begin(), perm.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Gpu& x = gpus[a];
    const Gpu& y = gpus[b];
    return std::make_tuple(global(x), x.host, x.pid, x.ordinal) < std::make_tuple(global(y), y.host, y.pid, y.ordinal);
  });
  std::vector<std::uint32_t> new_index(gpus.size());
  for (std::uint32_t k = 0; k < perm.size(); ++k) {
    new_index[perm[k]] = k;
    Gpu g = gpus[perm[k]];
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
    m.gpus.push_back(std::move(g));
  }
  m.op_gpu.resize(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpRecord& op = ops[i];
    const int pi = file_proc[op.file_idx];
    const int o = ordinal[{pi, op.comm_hash, op.rank}];
    const std::uint32_t g = new_index[gpu_of[{pi, o}]];
    m.op_gpu[i] = g;
    m.by_comm_rank.emplace(std::make_pair(op.comm_hash, static_cast<int>(op.rank)), g);
  }
  m.comms.assign(all_comms.begin(), all_comms.end());
  std::stable_sort(m.comms.begin(), m.comms.end(), [&](std::uint64_t a, std::uint64_t b) {
    auto na = res.comm_names.find(a), nb = res.comm_names.find(b);
    const std::string sa = na == res.comm_names.end() ? std::string() : na->second;
    const std::string sb = nb == res.comm_names.end() ? std::string() : nb->second;
    return std::tie(sa, a) < std::tie(sb, b);
  });
  for (std::size_t i = 0; i < m.comms.size(); ++i) m.comm_index[m.comms[i]] = static_cast<int>(i);
  return m;
}

}  // namespace nccl_inspector::analysis
