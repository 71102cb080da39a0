#include "src/analysis/slow_hca.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "src/analysis/stats.h"

namespace ni::analysis {

SlowHcaResult find_slow_hcas(const CollectSink& c, const ReadResult& res, const SlowHcaOptions& o) {
  SlowHcaResult out;
  using Key = std::tuple<std::uint64_t, int, std::string>;  // (comm, rank, device)
  std::map<Key, std::vector<double>> bw;
  std::map<Key, std::uint32_t> file_of;
  for (std::size_t i = 0; i < c.ops.size() && i < c.extra.size(); ++i) {
    const Op& op = c.ops[i];
    if (c.extra[i].hcas.empty()) continue;
    bool wire = false;
    for (const HcaUse& h : c.extra[i].hcas) {
      if (!std::isfinite(h.wire_us) || h.bytes < o.min_bytes) continue;
      wire = true;
      const Key k{op.comm_hash, op.rank, h.dev};
      bw[k].push_back(static_cast<double>(h.bytes) / (h.wire_us * 1000.0));
      file_of.emplace(k, op.file_idx);
    }
    ++(wire ? out.ops_with_wire : out.ops_without_wire);
  }
  std::map<Key, double> med;
  for (auto& [k, v] : bw)
    if (v.size() >= o.min_ops) med[k] = median_of(v);
  out.measured = med.size();
  // Per (file, device): the NIC, over the comms it was measured in.
  std::map<std::pair<std::uint32_t, std::string>, SlowHca> found;
  for (const auto& [k, b] : med) {
    const auto& [comm, rank, dev] = k;
    std::vector<double> peers, own;
    for (const auto& [k2, b2] : med) {
      if (std::get<0>(k2) != comm) continue;
      if (std::get<1>(k2) != rank && std::get<2>(k2) == dev) peers.push_back(b2);
      if (std::get<1>(k2) == rank && std::get<2>(k2) != dev) own.push_back(b2);
    }
    if (peers.empty()) continue;  // nothing to compare with: a comm seen by one rank only
    const double p = median_of(peers), w = own.empty() ? 0 : median_of(own);
    if (!(b * o.ratio < p) || (!own.empty() && !(b * o.ratio < w))) continue;
    const std::uint32_t file = file_of[k];
    SlowHca& f = found[{file, dev}];
    f.file = file;
    f.host = file < res.files.size() ? res.files[file].host : "";
    f.dev = dev;
    f.ops += bw[k].size();
    f.comm_ranks.emplace_back(comm, rank);
    // The comm where it was measured on the most ops gives the numbers.
    if (bw[k].size() * 2 > f.ops || f.gbs == 0) {
      f.gbs = b;
      f.peers_gbs = p;
      f.own_gbs = w;
      f.factor = p / b;
    }
  }
  for (auto& [k, f] : found) out.found.push_back(std::move(f));
  return out;
}

}  // namespace ni::analysis
