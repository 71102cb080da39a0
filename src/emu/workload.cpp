// Workload spec: JSON parsing (strict: unknown keys are errors, so typos do not
// silently change a job) and the default training-like demo job.
#include <nlohmann/json.hpp>

#include <charconv>
#include <set>
#include <stdexcept>

#include "src/emu/binding.h"
#include "src/emu/emu.h"

namespace ni::emu {

namespace {

using nlohmann::json;

void check_keys(const json& j, const std::set<std::string>& allowed, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + ": expected an object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!allowed.count(it.key())) throw std::runtime_error(where + ": unknown key '" + it.key() + "'");
}

template <typename T>
void get(const json& j, const char* k, T& out) {
  if (j.contains(k)) out = j.at(k).get<T>();
}

std::map<int, double> int_map(const json& j) {
  std::map<int, double> m;
  for (auto it = j.begin(); it != j.end(); ++it) m[std::stoi(it.key())] = it.value().get<double>();
  return m;
}

// NCCL 2.31.2 has nccl*Config() variants (the carriers of userProfilerTag) of
// every collective and of AlltoAll, Gather and Scatter, but none of ncclSend
// or ncclRecv: a Send, Recv or SendRecv (an application's group of them)
// cannot be tagged.
void no_p2p_tag(const std::string& func, uint64_t tag, const char* what) {
  if (tag != 0 && (func == "Send" || func == "Recv" || func == "SendRecv"))
    throw std::runtime_error(std::string(what) + ": a " + func +
                             " takes no tag (NCCL has no ncclSendConfig/ncclRecvConfig; tag an AlltoAll, Gather, "
                             "Scatter or a collective)");
}

OpSpec parse_op(const json& j) {
  check_keys(j,
             {"comm", "func", "dtype", "count", "bytes", "root", "peer", "shift", "ranks", "algo", "proto", "nchannels", "ce",
              "graph_replays", "tag", "kernel_variant"},
             "op");
  OpSpec o;
  get(j, "comm", o.comm);
  get(j, "func", o.func);
  get(j, "dtype", o.dtype);
  get(j, "count", o.count);
  if (j.contains("bytes")) {
    const int dt = dtype_code_of(o.dtype);
    if (dt < 0) throw std::runtime_error("op: unknown dtype '" + o.dtype + "'");
    o.count = j.at("bytes").get<uint64_t>() / dtype_size(dt);
  }
  get(j, "root", o.root);
  get(j, "peer", o.peer);
  get(j, "shift", o.shift);
  get(j, "ranks", o.ranks);
  get(j, "algo", o.algo);
  get(j, "proto", o.proto);
  get(j, "nchannels", o.nchannels);
  get(j, "ce", o.ce);
  get(j, "graph_replays", o.graph_replays);
  get(j, "tag", o.tag);
  get(j, "kernel_variant", o.kernel_variant);
  if (o.tag >> 63) throw std::runtime_error("op: tag " + std::to_string(o.tag) + " has the top bit set (reserved by NCCL)");
  no_p2p_tag(o.func, o.tag, "op");
  return o;
}

TruthKnobs::Hang parse_hang(const json& h) {
  check_keys(h, {"kind", "world_rank", "comm", "at_op", "peer", "func", "hold_ms", "end"}, "truth.hang");
  for (const char* k : {"kind", "world_rank", "comm", "at_op"})
    if (!h.contains(k)) throw std::runtime_error(std::string("truth.hang: '") + k + "' is required");
  TruthKnobs::Hang x;
  const auto kind = hang_kind_from_name(h.at("kind").get<std::string>());
  if (!kind) throw std::runtime_error("truth.hang: kind must be stop_issuing, kernel_stuck, recv_stuck, desync or killed");
  x.kind = *kind;
  get(h, "world_rank", x.world_rank);
  get(h, "comm", x.comm);
  get(h, "at_op", x.at_op);
  get(h, "peer", x.peer);
  get(h, "func", x.func);
  get(h, "hold_ms", x.hold_ms);
  const std::string end = h.value("end", "kill");
  if (end != "kill" && end != "exit") throw std::runtime_error("truth.hang: end must be kill or exit");
  x.end = end == "kill" ? HangEnd::kKill : HangEnd::kExit;
  if (x.world_rank < 0 || x.at_op < 0 || x.hold_ms < 0)
    throw std::runtime_error("truth.hang: world_rank, at_op and hold_ms must be >= 0");
  if (h.contains("peer") && (x.kind != HangKind::kRecvStuck || x.peer < 0))
    throw std::runtime_error("truth.hang: peer (a comm rank >= 0) is for recv_stuck only");
  if (h.contains("func")) {
    if (x.kind != HangKind::kDesync) throw std::runtime_error("truth.hang: func is for desync only");
    const int f = func_code_of(x.func);
    if (f < ni::abi::kFuncBroadcast || f > ni::abi::kFuncAllReduce)
      throw std::runtime_error("truth.hang: func must be AllReduce, AllGather, ReduceScatter, Broadcast or Reduce");
  }
  return x;
}

}  // namespace

TruthKnobs::Hang parse_hang_json(const std::string& text) {
  try {
    return parse_hang(json::parse(text));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("truth.hang: ") + e.what());
  }
}

Workload parse_workload_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("workload: invalid JSON: ") + e.what());
  }
  try {
    check_keys(j, {"world", "nodes", "comms", "program", "mix", "iterations", "group_size", "mark_every", "iteration_gap_us", "net_profiler", "truth", "model", "tag_names"},
               "workload");
    Workload w;
    get(j, "world", w.world);
    get(j, "nodes", w.nodes);
    get(j, "iterations", w.iterations);
    get(j, "group_size", w.group_size);
    get(j, "mark_every", w.mark_every);
    if (w.mark_every < 0) throw std::runtime_error("mark_every must be >= 0");
    get(j, "iteration_gap_us", w.iteration_gap_us);
    if (w.iteration_gap_us < 0) throw std::runtime_error("iteration_gap_us must be >= 0");
    if (j.contains("net_profiler")) {
      const std::string np = j.at("net_profiler").get<std::string>();
      if (np == "none") w.net_profiler = NetProfiler::kNone;
      else if (np == "ib") w.net_profiler = NetProfiler::kIb;
      else if (np == "socket") w.net_profiler = NetProfiler::kSocket;
      else throw std::runtime_error("net_profiler must be none, ib or socket");
    }
    for (const json& c : j.value("comms", json::array())) {
      check_keys(c,
                 {"name", "nranks", "layout", "nchannels", "p2p_channels", "p2p_channels_per_peer", "blocking",
                  "host_callback", "share_progress_with", "set_comm_name"},
                 "comm");
      CommSpec s;
      get(c, "name", s.name);
      get(c, "nranks", s.nranks);
      const std::string layout = c.value("layout", "contiguous");
      if (layout != "contiguous" && layout != "strided") throw std::runtime_error("comm layout must be contiguous or strided");
      s.strided = layout == "strided";
      get(c, "nchannels", s.nchannels);
      get(c, "p2p_channels", s.p2p_channels);
      get(c, "p2p_channels_per_peer", s.p2p_channels_per_peer);
      get(c, "blocking", s.blocking);
      get(c, "host_callback", s.host_callback);
      get(c, "share_progress_with", s.share_progress_with);
      get(c, "set_comm_name", s.set_comm_name);
      w.comms.push_back(s);
    }
    for (const json& st : j.value("program", json::array())) {
      StepSpec s;
      if (st.contains("group")) {
        check_keys(st, {"group", "depth"}, "program step");
        s.group = true;
        get(st, "depth", s.depth);
        for (const json& op : st.at("group")) s.ops.push_back(parse_op(op));
      } else {
        s.ops.push_back(parse_op(st));
      }
      w.program.push_back(std::move(s));
    }
    if (j.contains("tag_names")) {
      const json& tn = j.at("tag_names");
      if (!tn.is_object()) throw std::runtime_error("tag_names must be an object {\"tag\": \"name\"}");
      for (auto it = tn.begin(); it != tn.end(); ++it) {
        uint64_t tag = 0;
        const std::string& k = it.key();
        const auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), tag);
        if (ec != std::errc() || p != k.data() + k.size() || tag == 0 || (tag >> 63) != 0 || !it.value().is_string())
          throw std::runtime_error("tag_names: \"" + k + "\" is not a tag (1 .. 2^63-1) with a name string");
        w.tag_names[tag] = it.value().get<std::string>();
      }
    }
    for (const json& m : j.value("mix", json::array())) {
      check_keys(m, {"comm", "func", "dtype", "bytes", "weight", "tag"}, "mix entry");
      MixEntry e;
      get(m, "comm", e.comm);
      get(m, "func", e.func);
      get(m, "dtype", e.dtype);
      get(m, "bytes", e.bytes);
      get(m, "weight", e.weight);
      get(m, "tag", e.tag);
      if (e.tag >> 63) throw std::runtime_error("mix entry: tag " + std::to_string(e.tag) + " has the top bit set (reserved by NCCL)");
      no_p2p_tag(e.func, e.tag, "mix entry");
      w.mix.push_back(e);
    }
    if (j.contains("truth")) {
      const json& t = j.at("truth");
      check_keys(t, {"rank_skew_us", "channel_slowdown", "hca_slowdown", "slow_channels", "slow_hcas", "host_jitter_us", "congestion",
                     "bimodal", "hang", "late_once"},
                 "truth");
      if (t.contains("hang")) w.truth.hang = parse_hang(t.at("hang"));
      if (t.contains("rank_skew_us")) w.truth.rank_skew_us = int_map(t.at("rank_skew_us"));
      if (t.contains("channel_slowdown")) w.truth.channel_slowdown = int_map(t.at("channel_slowdown"));
      if (t.contains("hca_slowdown")) w.truth.hca_slowdown = int_map(t.at("hca_slowdown"));
      if (t.contains("host_jitter_us")) w.truth.host_jitter_us = int_map(t.at("host_jitter_us"));
      for (const json& sh : t.value("slow_hcas", json::array())) {
        check_keys(sh, {"world_rank", "hca", "factor", "from_op"}, "slow_hcas entry");
        TruthKnobs::SlowHca x;
        get(sh, "world_rank", x.world_rank);
        get(sh, "hca", x.hca);
        get(sh, "factor", x.factor);
        get(sh, "from_op", x.from_op);
        if (x.hca < 0 || x.hca >= 64) throw std::runtime_error("slow_hcas: hca must be 0..63");
        if (!(x.factor > 0)) throw std::runtime_error("slow_hcas: factor must be > 0");
        w.truth.slow_hcas.push_back(x);
      }
      for (const json& lo : t.value("late_once", json::array())) {
        check_keys(lo, {"world_rank", "op", "us"}, "late_once entry");
        if (!lo.contains("world_rank") || !lo.contains("op") || !lo.contains("us"))
          throw std::runtime_error("late_once entry: 'world_rank', 'op' and 'us' are required");
        TruthKnobs::LateOnce x;
        get(lo, "world_rank", x.world_rank);
        get(lo, "op", x.op);
        get(lo, "us", x.us);
        if (x.world_rank < 0 || x.op < 0) throw std::runtime_error("late_once: world_rank and op must be >= 0");
        if (!(x.us > 0) || x.us > 1e7) throw std::runtime_error("late_once: us must be in (0, 1e7]");
        w.truth.late_once.push_back(x);
      }
      for (const json& sc : t.value("slow_channels", json::array())) {
        check_keys(sc, {"comm", "group", "channel", "factor"}, "slow_channels entry");
        TruthKnobs::SlowChannel x;
        get(sc, "comm", x.comm);
        get(sc, "group", x.group);
        get(sc, "channel", x.channel);
        get(sc, "factor", x.factor);
        if (x.channel < 0 || x.channel >= 64) throw std::runtime_error("slow_channels: channel must be 0..63");
        if (!(x.factor > 0)) throw std::runtime_error("slow_channels: factor must be > 0");
        w.truth.slow_channels.push_back(x);
      }
      if (t.contains("congestion")) {
        const json& c = t.at("congestion");
        check_keys(c, {"from", "to", "factor"}, "congestion");
        get(c, "from", w.truth.congestion_from);
        get(c, "to", w.truth.congestion_to);
        get(c, "factor", w.truth.congestion_factor);
      }
      if (t.contains("bimodal")) {
        const json& b = t.at("bimodal");
        check_keys(b, {"proto", "p", "factor"}, "bimodal");
        get(b, "proto", w.truth.bimodal_proto);
        get(b, "p", w.truth.bimodal_p);
        get(b, "factor", w.truth.bimodal_factor);
      }
    }
    if (j.contains("model")) {
      const json& m = j.at("model");
      check_keys(m,
                 {"nvlink_busbw_gbps", "net_busbw_gbps", "latency_us", "net_latency_us", "gap_us", "jitter",
                  "hcas_per_node", "hca_gbps"},
                 "model");
      get(m, "nvlink_busbw_gbps", w.model.nvlink_busbw_gbps);
      get(m, "net_busbw_gbps", w.model.net_busbw_gbps);
      get(m, "latency_us", w.model.latency_us);
      get(m, "net_latency_us", w.model.net_latency_us);
      get(m, "gap_us", w.model.gap_us);
      get(m, "jitter", w.model.jitter);
      get(m, "hcas_per_node", w.model.hcas_per_node);
      get(m, "hca_gbps", w.model.hca_gbps);
      if (w.model.hca_gbps < 0) throw std::runtime_error("model: hca_gbps must be >= 0");
    }
    return w;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("workload: ") + e.what());
  }
}

Workload default_workload(int iterations) {
  Workload w;
  w.world = 8;
  w.nodes = 2;
  CommSpec tp;
  tp.name = "tp";
  tp.nranks = 4;  // contiguous: one node, NVLink
  tp.nchannels = 16;
  CommSpec dp;
  dp.name = "dp";
  dp.nranks = 2;  // strided: ranks g and g+4, across the two nodes
  dp.strided = true;
  dp.nchannels = 8;
  w.comms = {tp, dp};
  // One grouped step first: three collectives in one ncclGroupStart/End, so
  // later ops get channel ranges above 0 and the group needs two plans.
  StepSpec g;
  g.group = true;
  for (uint64_t bytes : {262144ull, 33554432ull, 1048576ull}) {
    OpSpec op;
    op.comm = "tp";
    op.func = "AllReduce";
    op.dtype = "ncclBfloat16";
    op.count = bytes / 2;
    g.ops.push_back(op);
  }
  w.program.push_back(g);
  auto mix = [&](const char* comm, const char* func, std::vector<uint64_t> bytes, double weight) {
    MixEntry m;
    m.comm = comm;
    m.func = func;
    m.dtype = "ncclBfloat16";
    m.bytes = std::move(bytes);
    m.weight = weight;
    w.mix.push_back(m);
  };
  mix("tp", "AllReduce", {1u << 20, 8u << 20, 32u << 20}, 4);
  mix("tp", "AllGather", {512u << 10, 4u << 20}, 2);
  mix("tp", "ReduceScatter", {4u << 20}, 2);
  mix("tp", "Broadcast", {64u << 10}, 0.5);
  mix("tp", "SendRecv", {256u << 10}, 1);
  mix("dp", "AllReduce", {128u << 10, 16u << 20, 64u << 20}, 3);
  mix("dp", "SendRecv", {1u << 20}, 1);
  w.iterations = iterations;
  w.truth.rank_skew_us[5] = 150;  // a straggler
  return w;
}

}  // namespace ni::emu
