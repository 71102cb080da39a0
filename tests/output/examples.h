// One deterministic example line of every record type, produced by the real
// encoder. docs/log-format.md quotes them verbatim; docs_test fails when they
// drift apart (regenerate with build/tests/output/log_examples).
#pragma once

#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/output/encoder.h"

namespace ni::out::testing {

inline std::vector<std::pair<std::string, std::string>> log_examples() {
  const ClockAnchor anchor{1735689600000000000, 1000000000000};  // 2025-01-01T00:00:00Z
  Encoder enc(anchor, false);
  Encoder verbose(anchor, true);
  std::vector<std::pair<std::string, std::string>> out;
  auto take = [&](const char* name, Buf& b) {
    std::string s(b.view());
    if (!s.empty() && s.back() == '\n') s.pop_back();
    out.emplace_back(name, s);
    b.clear();
  };
  Buf b;

  MetaInfo m;
  m.plugin_version = "0.1.0";
  m.host = "node-a01";
  m.pid = 48213;
  m.instance = "5f0c2a9e71d34b86";
  m.abi_version = 5;
  std::unordered_map<std::string, std::string> env = {
      {"SLURM_JOB_ID", "123456"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"},
      {"RANK", "3"},              {"LOCAL_RANK", "3"},   {"WORLD_SIZE", "16"}};
  m.job = detect_job([&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  }, "");
  Config cfg;
  cfg.dump_dir = "nccl-inspector-123456";
  cfg.prom_dir = cfg.dump_dir;
  m.config = config_json_fields(cfg);
  enc.meta(b, m, 0);
  take("meta", b);

  CommInfo c{1, 0x3f1a6c0e9b2d4471ull, "dp", 3, 16, 2, 5, 3, "0000:1b:00.0"};
  enc.comm(b, c, 1735689600012000000);
  take("comm", b);
  enc.comm_end(b, c, 1735689700000000000);
  take("comm_end", b);

  OpRecord r;
  std::memset(&r, 0, sizeof r);
  r.kind = static_cast<uint8_t>(OpKind::kColl);
  r.comm_id = 1;
  r.comm_hash = c.comm_hash;
  r.seq = 1041;
  r.func = static_cast<uint8_t>(Func::kAllReduce);
  r.dtype = static_cast<uint8_t>(DType::kBfloat16);
  r.count = 13107200;
  r.bytes = 26214400;
  r.algo = static_cast<uint8_t>(Algo::kRing);
  r.proto = static_cast<uint8_t>(Proto::kSimple);
  r.timing = static_cast<uint8_t>(TimingSource::kGpu);
  r.transport = static_cast<uint8_t>(Transport::kNetwork);
  r.rank = 3;
  r.peer = -1;
  r.n_channels = 8;
  r.n_warps = 16;
  r.channel_mask = 0xFF;
  r.channels_started = r.channels_stopped = 8;
  const int64_t offset = 1000000000000 - 7000000000;  // mono = pTimer + offset
  r.enqueue_ns = 1000123400000;
  r.start_ns = 1000123406150 - static_cast<uint64_t>(offset);
  r.end_ns = r.start_ns + 638752;
  r.max_channel_ns = 634900;
  r.min_channel_ns = 571900;
  r.busy_ns = 4827200;
  for (int i = 0; i < 8; ++i) r.channels[i] = {static_cast<uint32_t>(200 * i), static_cast<uint32_t>(571900 + 9000 * i)};
  ClockEstimate est{1, true, offset, 850, 4096};
  enc.op(b, r, &c, &est);
  take("coll", b);
  verbose.op(b, r, &c, &est);
  take("coll (verbose)", b);

  OpRecord n = r;
  n.net_ops = 8;
  n.net_send_bytes = n.net_recv_bytes = 24576000;
  n.net_steps = 512;
  n.net_peer_count = 2;
  n.net_gpu_wait_100ns = 238;
  n.net_wait_100ns = 852;
  n.net_first_ns = 1000123407000;
  n.net_last_ns = 1000123407000 + 637000;
  n.n_hcas = 2;
  n.hcas[0] = {0, 4, 256, 12288000};
  n.hcas[1] = {1, 4, 256, 12288000};
  n.hca_wire_100ns[0] = 3120;  // 312 us on the wire: 39.4 GB/s
  n.hca_wire_100ns[1] = 6240;  // the slow one: half that
  enc.op(b, n, &c, &est);
  take("coll (network events)", b);

  OpRecord p = r;
  p.kind = static_cast<uint8_t>(OpKind::kP2p);
  p.func = static_cast<uint8_t>(Func::kSend);
  p.issue = 12;  // its launch group
  p.seq = 77;
  p.flags = kFlagSeqOwn;
  p.peer = 4;
  p.count = 2097152;
  p.bytes = 4194304;
  p.n_channels = 2;
  p.channel_mask = 0x300;
  p.end_ns = p.start_ns + 38450;
  p.max_channel_ns = 35300;
  p.min_channel_ns = 34200;
  p.busy_ns = 69500;
  p.transport = static_cast<uint8_t>(Transport::kIntraNode);
  enc.op(b, p, &c, &est);
  take("p2p", b);

  OpRecord e = r;
  e.kind = static_cast<uint8_t>(OpKind::kCe);
  e.func = static_cast<uint8_t>(Func::kAllGather);
  e.seq = 12;
  e.count = 1048576;
  e.bytes = 2097152;
  e.channel_mask = 0;
  e.n_channels = 0;
  e.busy_ns = e.max_channel_ns = e.min_channel_ns = 0;
  e.timing = static_cast<uint8_t>(TimingSource::kEnqueueCpu);
  e.start_ns = 1000200000000;
  e.end_ns = e.start_ns + 41250;
  e.enqueue_ns = e.start_ns;
  e.transport = static_cast<uint8_t>(Transport::kIntraNode);
  enc.op(b, e, &c, nullptr);
  take("ce", b);

  OpRecord mk;
  std::memset(&mk, 0, sizeof mk);
  mk.kind = static_cast<uint8_t>(kMarkKind);
  mk.rank = -1;
  mk.enqueue_ns = 1000300000000;
  std::memcpy(mk.channels, "iter 100 begin", 15);
  enc.op(b, mk, nullptr, nullptr);
  take("mark", b);

  OpRecord tg;
  std::memset(&tg, 0, sizeof tg);
  tg.kind = static_cast<uint8_t>(kTagNameKind);
  tg.rank = -1;
  tg.user_tag = 12001;
  tg.enqueue_ns = 1000299000000;
  std::memcpy(tg.channels, "layer 12 fwd TP AllReduce", 26);
  enc.op(b, tg, nullptr, nullptr);
  take("tag", b);

  enc.clock(b, est, c.comm_hash, 1735689600112000000);
  take("clock", b);

  StatsSnapshot s;
  s.core.ops_completed = 52011;
  s.core.dropped_ring_full = 0;
  s.core.filtered_min_size = 3112;
  s.core.ring_high_water = 211;
  s.core.rings = 3;
  s.core.pool_in_use = 4;
  s.core.pool_high_water = 64;
  s.records_written = 52011;
  enc.stats(b, s, 1735689610000000000);
  take("stats", b);

  enc.end(b, s, 1735689700000500000);
  take("end", b);

  CommProgress pr;
  pr.comm_id = c.comm_id;
  pr.issued = 1042;
  pr.func_seq[static_cast<int>(Func::kAllReduce)] = 1042;
  pr.func_seq[static_cast<int>(Func::kBroadcast)] = 3;
  pr.p2p_started = 78;
  pr.done_seq[static_cast<int>(Func::kAllReduce)] = 1041;
  pr.done_seq[static_cast<int>(Func::kBroadcast)] = 3;
  pr.last_func = static_cast<uint8_t>(Func::kAllReduce);
  pr.api_issued = 1045;
  pr.last_api_func = static_cast<uint8_t>(Func::kAllReduce);
  pr.in_flight = 1;
  pr.quiet_ns = 5011000000;
  StuckOp so;
  so.kind = static_cast<uint8_t>(OpKind::kColl);
  so.func = static_cast<uint8_t>(Func::kAllReduce);
  so.dtype = static_cast<uint8_t>(DType::kBfloat16);
  so.seq = 1041;
  so.issue = 1041;
  so.bytes = 26214400;
  so.n_channels = 8;
  so.enqueue_ns = 1000000000000 + 601000000;
  so.ch_started = 0xFF;
  so.ch_stopped = 0x7F;
  so.net.push_back({2, false, 1, 8, 8});
  so.net.push_back({4, false, 1, 8, 3});
  so.net.push_back({4, true, 1, 8, 8});
  pr.stuck.push_back(so);
  enc.progress(b, pr, c, 1000000000000 + 6612000000);
  take("progress", b);
  enc.alive(b, 1735689611612000000);
  take("alive", b);
  return out;
}

}  // namespace ni::out::testing
