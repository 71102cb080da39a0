// Truth output: one JSON line per issued op per rank, then a summary line.
#include <nlohmann/json.hpp>
#include <ostream>

#include "src/emu/emu.h"

namespace ni::emu {

namespace {
std::string hash_hex(uint64_t h) {
  char hash[32];
  std::snprintf(hash, sizeof hash, "0x%016llx", static_cast<unsigned long long>(h));
  return hash;
}

nlohmann::json op_json(const TruthOp& t) {
  nlohmann::json j;
  j["type"] = "op";
  j["comm"] = t.comm;
  j["comm_hash"] = hash_hex(t.comm_hash);
  j["comm_index"] = t.comm_index;
  j["rank"] = t.rank;
  j["nranks"] = t.nranks;
  j["nnodes"] = t.nnodes;
  j["world_rank"] = t.world_rank;
  j["kind"] = t.kind;
  j["func"] = t.func;
  j["api_func"] = t.api_func;
  if (t.user_tag != 0) j["user_tag"] = t.user_tag;
  if (!t.kernel_variant.empty()) j["kernel_variant"] = t.kernel_variant;
  if (t.sym_plan_tasks > 0) j["sym_plan_tasks"] = t.sym_plan_tasks;
  if (t.phase_events) j["ch_phase_ns"] = t.ch_phase_ns;
  j["seq"] = t.seq;
  j["count"] = t.count;
  j["dtype"] = t.dtype;
  j["bytes"] = t.bytes;
  j["algo"] = t.algo;
  j["proto"] = t.proto;
  j["root"] = t.root;
  j["peer"] = t.peer;
  j["net"] = t.net;
  j["channels"] = t.channels;
  j["ch_start_ptimer_ns"] = t.ch_start_ptimer;
  j["ch_stop_ptimer_ns"] = t.ch_stop_ptimer;
  j["ptimer_to_realtime_ns"] = t.ptimer_to_realtime_ns;
  j["ptimer_to_monotonic_ns"] = t.ptimer_to_monotonic_ns;
  j["duration_us"] = t.duration_us;
  j["busbw_gbps"] = t.busbw_gbps;
  j["visible"] = t.visible;
  j["why"] = t.why;
  j["kernel_events"] = t.kernel_events;
  j["kernel_stamps_shifted"] = t.kernel_stamps_shifted;
  j["graph_replay"] = t.graph_replay;
  j["faults"] = t.faults;
  j["planted"] = t.planted;
  return j;
}

nlohmann::json hang_json(const HangTruth& h) {
  nlohmann::json j;
  j["type"] = "hang";
  j["kind"] = h.kind;
  j["comm"] = h.comm;
  j["comm_hash"] = hash_hex(h.comm_hash);
  j["group"] = h.group;
  j["at_op"] = h.at_op;
  j["func"] = h.func;
  j["seq"] = h.seq;
  j["culprit_world_ranks"] = h.culprit_world_ranks;
  j["culprit_comm_ranks"] = h.culprit_comm_ranks;
  if (h.kind == "recv_stuck") j["peer_comm_rank"] = h.peer_comm_rank;
  if (h.kind == "desync") j["desync_func"] = h.desync_func;
  j["group_world_ranks"] = h.group_world_ranks;
  j["end"] = h.end;
  return j;
}
}  // namespace

std::string truth_op_json(const TruthOp& t) { return op_json(t).dump(); }

void write_truth_jsonl(std::ostream& os, const RunResult& r) {
  for (const TruthOp& t : r.truth) os << op_json(t).dump() << '\n';
  if (r.hang) os << hang_json(*r.hang).dump() << '\n';
  // The culprits planted in the model: what a detector should name.
  const TruthKnobs& k = r.planted;
  const int per_node = std::max(1, r.world / std::max(1, r.nodes));
  for (const auto& [g, us] : k.rank_skew_us) {
    nlohmann::json j{{"type", "planted"}, {"kind", "straggler"}, {"world_rank", g}, {"node", g / per_node},
                     {"skew_us", us}};
    os << j.dump() << '\n';
  }
  for (const auto& [ch, f] : k.channel_slowdown)
    os << nlohmann::json{{"type", "planted"}, {"kind", "slow_channel"}, {"channel", ch}, {"factor", f}}.dump() << '\n';
  for (const auto& sc : k.slow_channels)
    os << nlohmann::json{{"type", "planted"}, {"kind", "slow_channel"}, {"comm", sc.comm},
                         {"group", sc.group},  {"channel", sc.channel},  {"factor", sc.factor}}
              .dump()
       << '\n';
  for (const auto& sh : k.slow_hcas)
    os << nlohmann::json{{"type", "planted"}, {"kind", "slow_hca"},   {"world_rank", sh.world_rank},
                         {"node", sh.world_rank / per_node}, {"hca", sh.hca}, {"factor", sh.factor},
                         {"from_op", sh.from_op}}
              .dump()
       << '\n';
  for (const auto& lo : k.late_once)
    os << nlohmann::json{{"type", "planted"}, {"kind", "late_once"}, {"world_rank", lo.world_rank},
                         {"node", lo.world_rank / per_node}, {"op", lo.op}, {"us", lo.us}}
              .dump()
       << '\n';
  for (const auto& [node, us] : k.host_jitter_us)
    os << nlohmann::json{{"type", "planted"}, {"kind", "host_jitter"}, {"node", node}, {"mean_us", us}}.dump() << '\n';
  for (const auto& [h, f] : k.hca_slowdown)
    os << nlohmann::json{{"type", "planted"}, {"kind", "slow_hca"}, {"hca", h}, {"factor", f}}.dump() << '\n';
  if (k.congestion_factor != 1 && k.congestion_from >= 0)
    os << nlohmann::json{{"type", "planted"},          {"kind", "congestion"}, {"from_op", k.congestion_from},
                         {"to_op", k.congestion_to}, {"factor", k.congestion_factor}}
              .dump()
       << '\n';
  if (k.bimodal_p > 0)
    os << nlohmann::json{{"type", "planted"}, {"kind", "bimodal"}, {"proto", k.bimodal_proto}, {"p", k.bimodal_p},
                         {"factor", k.bimodal_factor}}
              .dump()
       << '\n';
  nlohmann::json s;
  s["type"] = "summary";
  s["bound_abi"] = r.bound_abi;
  s["bound_symbol"] = r.bound_symbol;
  s["plugin_name"] = r.summary.plugin_name;
  s["ops"] = r.summary.ops_by_comm_kind;
  s["callbacks"] = r.summary.callbacks;
  s["total_callbacks"] = r.summary.total_callbacks;
  s["wall_s"] = r.summary.wall_s;
  s["world"] = r.world;
  s["nodes"] = r.nodes;
  os << s.dump() << '\n';
}

}  // namespace ni::emu
