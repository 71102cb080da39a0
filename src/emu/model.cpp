// The GPU model: algorithm/protocol/channel choice, P2P channel rule, network
// step sizes, and per-rank per-channel GPU times with the cross-rank rule.
//
// Everything here is a pure function of (seed, comm instance, per-comm op
// index, message), so every rank -- in this process or another process with
// the same seed -- computes the same schedule for a collective: rank r arrives
// at a_r = base + skew_r, the transfer ends at max_r(a_r) + duration, so the
// late rank's kernel is the shortest.
#include <time.h>

#include <algorithm>
#include <cmath>

#include "src/emu/engine.h"

namespace ni::emu {

using namespace ni::abi;

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint64_t hash_str(uint64_t seed, const std::string& s) {
  uint64_t h = 1469598103934665603ull ^ mix64(seed);
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return mix64(h);
}
double unit_hash(uint64_t h) { return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0); }

uint64_t now_mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t now_real_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void Proc::pace_until(uint64_t t_ns) const {
  if (o->pace != Pace::kRealtime) return;
  const uint64_t target = t0_mono_ns + t_ns;
  const uint64_t now = now_mono_ns();
  if (now >= target) return;
  const uint64_t d = target - now;
  timespec ts{static_cast<time_t>(d / 1000000000ull), static_cast<long>(d % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
  }
}

// nccl-tests bus factor applied to the message size (bytes of the descriptor
// count): AllReduce 2(n-1)/n; AllGather/ReduceScatter size*n*(n-1)/n;
// Broadcast/Reduce/P2P 1.
double busbw_factor(int func, int n) {
  const double dn = n;
  switch (func) {
    case kFuncAllReduce: return n > 1 ? 2.0 * (dn - 1) / dn : 0;
    case kFuncAllGather:
    case kFuncReduceScatter: return dn - 1;
    default: return 1;
  }
}

void choose_algo_proto(const Proc& P, const Comm& c, Task& t, const OpSpec& op) {
  (void)P;
  const uint64_t b = t.bytes;
  t.proto = !op.proto.empty() && proto_code_of(op.proto) >= 0 ? proto_code_of(op.proto)
            : b < (64u << 10)                                 ? kProtoLL
            : b < (2u << 20)                                  ? kProtoLL128
                                                              : kProtoSimple;
  if (!op.algo.empty() && algo_code_of(op.algo) >= 0) {
    t.algo = algo_code_of(op.algo);
  } else if (t.func == kFuncAllReduce && c.nnodes > 1 && b < (4u << 20)) {
    t.algo = kAlgoTree;
  } else if ((t.func == kFuncAllGather || t.func == kFuncReduceScatter) && c.nnodes > 1 && c.nnodes == c.nranks &&
             b < (1u << 20)) {
    t.algo = kAlgoPat;
  } else {
    t.algo = kAlgoRing;
  }
  t.nwarps = t.proto == kProtoSimple ? 16 : 8;
}

// NCCL's rule: the channels for a peer are (base + part) & (nP2pChannels-1),
// base = the round (peer distance) bit-reversed over log2(nP2pChannels) bits.
std::vector<int> p2p_channels(const Comm& c, int peer, bool is_send, uint64_t bytes) {
  const int n = c.nranks;
  const int round = is_send ? (peer - c.rank + n) % n : (c.rank - peer + n) % n;
  int np = std::max(1, c.spec->p2p_channels);
  int bits = 0;
  while ((1 << (bits + 1)) <= np) ++bits;
  np = 1 << bits;
  const unsigned r = static_cast<unsigned>(round) & static_cast<unsigned>(np - 1);
  unsigned base = 0;
  for (int i = 0; i < bits; ++i)
    if (r & (1u << i)) base |= 1u << (bits - 1 - i);
  const int parts = bytes >= (512u << 10) ? std::max(1, c.spec->p2p_channels_per_peer) : 1;
  std::vector<int> out;
  for (int p = 0; p < parts && p < np; ++p) out.push_back(static_cast<int>((base + static_cast<unsigned>(p)) & static_cast<unsigned>(np - 1)));
  return out;
}

void fill_net(const Proc& P, const Comm& c, Task& t) {
  (void)P;
  if (t.type == kColl) {
    t.net = c.nnodes > 1;
    if (t.net) {
      t.net_send_peer = (c.rank + 1) % c.nranks;
      t.net_recv_peer = (c.rank - 1 + c.nranks) % c.nranks;
    }
  } else if (t.type == kP2p) {
    const int pn = c.members[static_cast<size_t>(t.peer)] / std::max(1, c.P->world / c.P->nodes);
    t.net = !self_p2p(t) && pn != c.R->node;
    if (t.net) {
      if (t.func == kFuncSend) t.net_send_peer = t.peer;
      else t.net_recv_peer = t.peer;
    }
  }
  if (!t.net) return;
  const double bus = static_cast<double>(t.bytes) * (t.type == kColl ? busbw_factor(t.func, c.nranks) : 1.0);
  const size_t nch = std::max<size_t>(1, t.chans.size());
  const uint64_t per_ch = std::max<uint64_t>(1, static_cast<uint64_t>(bus / static_cast<double>(nch)));
  uint64_t chunk = t.proto == kProtoSimple ? (512u << 10) : t.proto == kProtoLL128 ? (120u << 10) : (16u << 10);
  uint64_t steps = (per_ch + chunk - 1) / chunk;
  if (steps > 16) {
    chunk = (per_ch + 15) / 16;
    steps = (per_ch + chunk - 1) / chunk;
  }
  t.nsteps = static_cast<int>(std::max<uint64_t>(1, steps));
  t.chunk = static_cast<int>(chunk);
  t.step_bytes = per_ch;  // total bytes per channel per direction
}

void assign_times(Proc& P, Comm& c, std::vector<Task*> ts, int /*skew_peer_world*/) {
  if (ts.empty()) return;
  Task& t = *ts[0];
  const ModelKnobs& m = P.o->workload.model;
  const TruthKnobs& k = P.o->workload.truth;
  const uint64_t key = mix64(P.o->seed ^ c.hash ^ (static_cast<uint64_t>(c.op_index) << 24));
  const uint64_t base = c.clock_ns;
  const int per_node = std::max(1, P.world / std::max(1, P.nodes));
  // How late (us) a late_once entry makes rank g to this op; 0 if none does.
  auto late_once_us = [&](int g) {
    double us = 0;
    for (const TruthKnobs::LateOnce& lo : k.late_once)
      if (lo.world_rank == g && lo.op == c.op_index) us += lo.us;
    return us;
  };
  auto skew = [&](int g) {
    double s = unit_hash(mix64(key ^ (static_cast<uint64_t>(g) * 0x9E37ull))) * 1500.0;
    auto it = k.rank_skew_us.find(g);
    if (it != k.rank_skew_us.end()) s += it->second * 1000.0;
    s += late_once_us(g) * 1000.0;
    auto jt = k.host_jitter_us.find(g / per_node);
    if (jt != k.host_jitter_us.end()) {  // exponential, mean jt->second us
      const double u = unit_hash(mix64(key ^ (static_cast<uint64_t>(g) * 0x7F4Bull) ^ 0x1177));
      s += -std::log(1.0 - u) * jt->second * 1000.0;
    }
    return static_cast<uint64_t>(s);
  };
  uint64_t arrive_max = 0;
  bool late_member = false, late_once_member = false, late_once_me = false;
  for (int g : c.members) {
    arrive_max = std::max(arrive_max, base + skew(g));
    late_member = late_member || k.rank_skew_us.count(g) != 0;
    if (late_once_us(g) > 0) (g == c.R->g ? late_once_me : late_once_member) = true;
  }
  const uint64_t arrive_me = base + skew(c.R->g);
  std::vector<std::string> planted;
  if (k.rank_skew_us.count(c.R->g) != 0) planted.emplace_back("straggler");
  else if (late_member) planted.emplace_back("waited");
  if (late_once_me) planted.emplace_back("late_once");
  else if (late_once_member) planted.emplace_back("waited_once");
  if (k.host_jitter_us.count(c.R->g / per_node) != 0) planted.emplace_back("jitter");

  const bool net = t.net;
  const double bw = (net ? m.net_busbw_gbps : m.nvlink_busbw_gbps);  // GB/s == bytes/ns
  const double bus = static_cast<double>(t.bytes) * (t.type == kColl ? busbw_factor(t.func, c.nranks) : 1.0);
  double dur = (net ? m.net_latency_us : m.latency_us) * 1000.0 + bus / std::max(1e-3, bw);
  dur *= 1.0 + m.jitter * (unit_hash(mix64(key ^ 0x51)) - 0.5) * 2.0;
  if (c.op_index >= k.congestion_from && c.op_index <= k.congestion_to && k.congestion_factor != 1) {
    dur *= k.congestion_factor;
    planted.emplace_back("congestion");
  }
  if (k.bimodal_p > 0 && proto_name_of(t.proto) == k.bimodal_proto && unit_hash(mix64(key ^ 0xB1)) < k.bimodal_p) {
    dur *= k.bimodal_factor;
    planted.emplace_back("bimodal");
  }
  bool slow_ch = false, slow_hca = false;

  uint64_t end = arrive_max;
  for (Task* x : ts) {
    for (size_t i = 0; i < x->chans.size(); ++i) {
      ChanTime& ct = x->chans[i];
      double f = 1;
      auto cs = k.channel_slowdown.find(ct.ch);
      if (cs != k.channel_slowdown.end()) {
        f *= cs->second;
        slow_ch = true;
      }
      for (const auto& sc : k.slow_channels)
        if (sc.channel == ct.ch && (sc.comm.empty() || sc.comm == c.spec->name) && (sc.group < 0 || sc.group == c.group)) {
          f *= sc.factor;
          slow_ch = true;
        }
      if (net) {
        const int dev = ct.ch % std::max(1, m.hcas_per_node);
        auto hs = k.hca_slowdown.find(dev);
        if (hs != k.hca_slowdown.end()) {
          f *= hs->second;
          slow_hca = true;
        }
        // A slow NIC of one member: the ring through it runs at its speed on every rank.
        for (const auto& sh : k.slow_hcas)
          if (sh.hca == dev && c.op_index >= sh.from_op &&
              std::find(c.members.begin(), c.members.end(), sh.world_rank) != c.members.end()) {
            f *= sh.factor;
            slow_hca = true;
          }
      }
      ct.start_ns = arrive_me + 120 * i;
      ct.stop_ns = arrive_max + static_cast<uint64_t>(dur * f) + 40 * i;
      if (ct.stop_ns <= ct.start_ns) ct.stop_ns = ct.start_ns + 1;
      // Phases: the channel waits until the last member's same channel starts
      // (plus a 300 ns handshake), moves data, and ends with a barrier of at
      // most 600 ns (a quarter of what is left when that is shorter).
      ct.sync_end_ns = std::clamp<uint64_t>(arrive_max + 120 * i + 300, ct.start_ns, ct.stop_ns);
      ct.final_start_ns = ct.stop_ns - std::min<uint64_t>(600, (ct.stop_ns - ct.sync_end_ns) / 4);
      end = std::max(end, ct.stop_ns);
    }
  }
  if (slow_ch) planted.emplace_back("slow_channel");
  if (slow_hca) planted.emplace_back("slow_hca");
  for (Task* x : ts) {
    x->planted = planted;
    if (x->truth != nullptr) x->truth->planted = planted;
  }
  if (t.chans.empty()) end = arrive_max + static_cast<uint64_t>(dur);
  c.clock_ns = end + static_cast<uint64_t>(m.gap_us * 1000.0);
  // CE ops carry no channels; keep the model's duration in the truth.
  if (t.truth != nullptr && t.chans.empty()) t.truth->duration_us = dur / 1000.0;
}

}  // namespace ni::emu
