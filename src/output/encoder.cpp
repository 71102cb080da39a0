#include "src/output/encoder.h"

#include <algorithm>
#include <bit>
#include <string_view>

#include "include/nccl_inspector/schema.h"
#include "src/core/names.h"

namespace ni::out {
namespace {

namespace sc = ni::schema;
namespace ctr = ni::counters;

// ,"name":
inline void key(Buf& b, std::string_view name) {
  char* p = b.room(name.size() + 4);
  p[0] = ',';
  p[1] = '"';
  std::memcpy(p + 2, name.data(), name.size());
  p[2 + name.size()] = '"';
  p[3 + name.size()] = ':';
  b.advance(name.size() + 4);
}
// "name": (the first member of an object)
inline void key_bare(Buf& b, std::string_view name) {
  b.put('"');
  b.put(name);
  b.put(std::string_view("\":"));
}
inline void kv_str(Buf& b, std::string_view name, std::string_view v) {  // v needs no escaping
  key(b, name);
  b.put('"');
  b.put(v);
  b.put('"');
}
template <typename Int>
inline void kv_int(Buf& b, std::string_view name, Int v) {
  key(b, name);
  b.put_int(v);
}
inline void kv_milli(Buf& b, std::string_view name, int64_t milli) {
  key(b, name);
  b.put_milli(milli);
}
inline void kv_fixed3(Buf& b, std::string_view name, double v) {
  if (!std::isfinite(v) || std::fabs(v) > 9.0e15) return;  // undefined -> omitted
  key(b, name);
  b.put_fixed3(v);
}
// Bandwidths: 3 significant digits (derived values; bytes and dur_us are exact).
inline void kv_sig3(Buf& b, std::string_view name, double v) {
  if (!std::isfinite(v) || std::fabs(v) > 9.0e15) return;
  key(b, name);
  b.put_sig(v, 3);
}
// Secondary times (per-channel, network): 0.1 us resolution.
inline void kv_us_tenth(Buf& b, std::string_view name, uint64_t ns) {
  key(b, name);
  b.put_milli(static_cast<int64_t>((ns + 50) / 100 * 100));
}
// Ratios 0..1: 2 decimals.
inline void kv_ratio(Buf& b, std::string_view name, double v) {
  if (!std::isfinite(v)) return;
  key(b, name);
  b.put_milli(std::llround(v * 100.0) * 10);
}
inline void begin(Buf& b, std::string_view type) {
  b.put(std::string_view("{\"type\":\""));
  b.put(type);
  b.put('"');
}
inline void finish(Buf& b) { b.put(std::string_view("}\n")); }

bool is_rooted(Func f) {
  return f == Func::kBroadcast || f == Func::kReduce || f == Func::kGather || f == Func::kScatter;
}
// Factors of names.h that depend on the number of ranks: unknown n -> omit.
bool traffic_needs_n(Func f) { return f == Func::kAllGather || f == Func::kAllGatherV || f == Func::kReduceScatter; }
bool busbw_needs_n(Func f) {
  return f == Func::kAllReduce || f == Func::kAllGather || f == Func::kAllGatherV || f == Func::kReduceScatter ||
         f == Func::kAlltoAll;
}

template <typename E>
E enum_or(uint8_t v, E count, E unknown) {
  return v < static_cast<uint8_t>(count) ? static_cast<E>(v) : unknown;
}

std::string_view op_type(OpKind kind) {
  return kind == OpKind::kColl ? sc::kTypeColl : kind == OpKind::kP2p ? sc::kTypeP2p : sc::kTypeCe;
}

// "name":true (flags are present only when set).
inline void flag(Buf& b, std::string_view name) {
  key(b, name);
  b.put(std::string_view("true"));
}

// "name":[3,5,...]: the ids of a channel mask's bits, ascending.
void put_id_list(Buf& b, std::string_view name, uint64_t mask) {
  key(b, name);
  b.put('[');
  bool first = true;
  while (mask != 0) {
    if (!first) b.put(',');
    first = false;
    b.put_int(std::countr_zero(mask));
    mask &= mask - 1;
  }
  b.put(']');
}
// "channels":[...]: the channels that ran.
void put_channel_ids(Buf& b, uint64_t mask) { put_id_list(b, sc::kChannels, mask); }

// "net":{...}: what the network plugin / proxy events said about the op.
void put_net(Buf& b, const OpRecord& r) {
  key(b, sc::kNet);
  b.put('{');
  b.put('"');
  b.put(sc::kNetSendBytes);
  b.put(std::string_view("\":"));
  b.put_int(r.net_send_bytes);
  kv_int(b, sc::kNetRecvBytes, r.net_recv_bytes);
  kv_int(b, sc::kNetSteps, r.net_steps);
  kv_int(b, sc::kNetOps, r.net_ops);
  kv_int(b, sc::kNetPeers, r.net_peer_count);
  kv_us_tenth(b, sc::kNetGpuWaitUs, uint64_t{r.net_gpu_wait_100ns} * 100);
  kv_us_tenth(b, sc::kNetWaitUs, uint64_t{r.net_wait_100ns} * 100);
  kv_us_tenth(b, sc::kNetFlushUs, uint64_t{r.net_flush_100ns} * 100);
  if (r.net_last_ns >= r.net_first_ns && r.net_first_ns != 0)
    kv_us_tenth(b, sc::kNetSpanUs, r.net_last_ns - r.net_first_ns);
  b.put('}');
}

// "hcas":[{"dev":..,"bytes":..,"wrs":..,"qps":..},...]: traffic per HCA.
void put_hcas(Buf& b, const OpRecord& r) {
  key(b, sc::kHcas);
  b.put('[');
  int n = r.n_hcas < kRecordHcas ? r.n_hcas : kRecordHcas;
  for (int i = 0; i < n; ++i) {
    const HcaTraffic& h = r.hcas[i];
    if (i) b.put(',');
    b.put(std::string_view("{\"dev\":"));
    if (h.device == 0xFFFF)
      b.put_int(-1);
    else
      b.put_int(h.device);
    kv_int(b, sc::kBytes, h.bytes);
    kv_int(b, sc::kHcaWrs, h.wrs);
    kv_int(b, sc::kHcaQps, h.qps);
    if (r.hca_wire_100ns[i] != 0) {
      // Time its send work requests were on the wire, and the bandwidth they got.
      kv_us_tenth(b, sc::kHcaWireUs, uint64_t{r.hca_wire_100ns[i]} * 100);
      kv_sig3(b, sc::kHcaGbs, static_cast<double>(h.bytes) / (static_cast<double>(r.hca_wire_100ns[i]) * 100.0));
    }
    b.put('}');
  }
  b.put(']');
}

// "ch_slow":[channel id, its us, median channel us]: which channel was the
// longest and by how much, for ops with 2+ channels all in the record (the
// slow-channel detector's input without verbose logs).
void put_ch_slow(Buf& b, const OpRecord& r) {
  const int nch = std::popcount(r.channel_mask);
  if (nch < 2 || nch > kRecordChannels || (r.flags & (kFlagChannelsTruncated | kFlagPartialChannels | kFlagKernelDesync)))
    return;
  uint32_t d[kRecordChannels] = {};
  int slow = 0;
  for (int i = 0; i < nch; ++i) {
    d[i] = r.channels[i].dur_ns;
    if (d[i] > d[slow]) slow = i;
  }
  const uint32_t slow_ns = d[slow];
  std::nth_element(d, d + nch / 2, d + nch);
  uint64_t med = d[nch / 2];
  if (nch % 2 == 0) med = (med + *std::max_element(d, d + nch / 2)) / 2;
  uint64_t m = r.channel_mask;
  for (int i = 0; i < slow; ++i) m &= m - 1;
  key(b, sc::kChSlow);
  b.put('[');
  b.put_int(std::countr_zero(m));
  b.put(',');
  b.put_milli(static_cast<int64_t>(slow_ns));
  b.put(',');
  b.put_milli(static_cast<int64_t>(med));
  b.put(']');
}

// "ch_times":[[channel, start offset us, dur us],...] (verbose only).
void put_ch_times(Buf& b, const OpRecord& r, int nch) {
  key(b, sc::kChTimes);
  b.put('[');
  uint64_t m = r.channel_mask;
  int n = nch < kRecordChannels ? nch : kRecordChannels;
  for (int i = 0; i < n; ++i) {
    if (i) b.put(',');
    b.put('[');
    b.put_int(std::countr_zero(m));
    m &= m - 1;
    b.put(',');
    b.put_milli(r.channels[i].start_off_ns);
    b.put(',');
    b.put_milli(r.channels[i].dur_ns);
    b.put(']');
  }
  b.put(']');
}

// "phases":{"initial_sync":[min us, median us, max us, channels],...}: the
// kernel phases of the op's channels (ABI v7), each phase its channels reported.
void put_phases(Buf& b, const OpRecord& r) {
  static constexpr std::string_view kName[kPhases] = {sc::kPhaseInitialSync, sc::kPhaseCompute, sc::kPhaseFinalSync};
  key(b, sc::kPhases);
  b.put('{');
  bool first = true;
  for (int p = 0; p < kPhases; ++p) {
    if (r.phases.channels[p] == 0) continue;
    if (!first) b.put(',');
    first = false;
    key_bare(b, kName[p]);
    b.put('[');
    b.put_milli(r.phases.min_ns[p]);
    b.put(',');
    b.put_milli(r.phases.med_ns[p]);
    b.put(',');
    b.put_milli(r.phases.max_ns[p]);
    b.put(',');
    b.put_int(r.phases.channels[p]);
    b.put(']');
  }
  if (r.phases.truncated != 0) {
    b.put(',');
    key_bare(b, sc::kPhasesTruncated);
    b.put(std::string_view("true"));
  }
  b.put('}');
}

}  // namespace

OpTiming op_timing(const OpRecord& r, int nranks) {
  OpTiming t;
  const auto timing = enum_or(r.timing, TimingSource::kCount_, TimingSource::kNone);
  const Func func = enum_or(r.func, Func::kCount_, Func::kUnknown);
  const auto kind = static_cast<OpKind>(r.kind);
  // start_ns 0 is a valid GPU timer value; only the timing source says "no time".
  t.has_span = timing != TimingSource::kNone && r.end_ns >= r.start_ns;
  t.span_ns = t.has_span ? r.end_ns - r.start_ns : 0;
  // Bandwidth only from a time that measures the transfer: the GPU timer's
  // span of the kernel, or the CUDA events around a copy-engine op's copies. A CPU time (the proxy thread's view of the kernel,
  // network progress, the enqueue) says when the CPU saw things happen, not
  // how long the bytes moved: an enqueue-timed copy-engine AllGather would
  // read 22,000 GB/s. Such records keep their duration and say their timing.
  // A symmetric plan's head: its kernel time covers the plan's later tasks
  // too, whose bytes it does not know: no bandwidth (sym_plan_tasks says why).
  const bool plan_time = (r.flags & kFlagSymKernel) != 0 && r.sym_tasks != 0;
  const bool measures_transfer = (timing == TimingSource::kGpu || timing == TimingSource::kCudaEvent) && !plan_time;
  if (measures_transfer && t.span_ns > 0 && r.bytes > 0 && !(nranks <= 0 && traffic_needs_n(func))) {
    t.algbw_gbs = static_cast<double>(r.bytes) * traffic_multiplier(func, kind, nranks) / static_cast<double>(t.span_ns);
    t.has_algbw = std::isfinite(t.algbw_gbs);
    double factor = busbw_factor(func, kind, nranks);
    if (t.has_algbw && factor > 0 && !(nranks <= 0 && busbw_needs_n(func))) {
      t.busbw_gbs = t.algbw_gbs * factor;
      t.has_busbw = std::isfinite(t.busbw_gbs);
    }
  }
  return t;
}

void Encoder::mark(Buf& b, const OpRecord& r) const {
  const bool tag = static_cast<OpKind>(r.kind) == kTagNameKind;
  begin(b, tag ? sc::kTypeTag : sc::kTypeMark);
  uint64_t t = r.enqueue_ns != 0 ? r.enqueue_ns : r.start_ns;
  if (t != 0) kv_int(b, sc::kWallNs, mono_to_wall(t));
  if (tag) kv_int(b, sc::kUserTag, r.user_tag);
  const char* label = reinterpret_cast<const char*>(r.channels);
  size_t n = 0;
  while (n < kMarkLabelMax && label[n] != '\0') ++n;
  key(b, sc::kLabel);
  b.put_json_string(std::string_view(label, n));
  finish(b);
}

void Encoder::op(Buf& b, const OpRecord& r, const CommInfo* comm, const ClockEstimate* clk) const {
  const auto kind = static_cast<OpKind>(r.kind);
  if (is_note(r.kind)) {
    mark(b, r);
    return;
  }
  const int nranks = comm != nullptr ? comm->nranks : 0;
  b.reserve(b.size() + 1024);
  begin(b, op_type(kind));
  op_identity(b, r, comm, nranks);
  op_times(b, r, clk, op_timing(r, nranks));
  kv_str(b, sc::kTransport, transport_name(enum_or(r.transport, Transport::kCount_, Transport::kUnknown)));
  if (r.flags & kFlagGraphCaptured) flag(b, sc::kGraph);
  if (r.flags & kFlagReclaimed) flag(b, sc::kReclaimed);
  if (r.flags & kFlagPartialChannels) flag(b, sc::kPartial);
  if (r.flags & kFlagApiOnly) flag(b, sc::kApiOnly);
  if (r.flags & kFlagKernelDesync) flag(b, sc::kKernelDesync);
  if (r.net_ops != 0) put_net(b, r);
  if (r.n_hcas != 0) put_hcas(b, r);
  if (r.flags & kFlagPhases) [[unlikely]] put_phases(b, r);
  const int nch = std::popcount(r.channel_mask);
  if (verbose_ && nch > 0 && (r.flags & kFlagKernelDesync) == 0) put_ch_times(b, r, nch);
  finish(b);
}

// What ran where: comm, rank, seq, operation, sizes, algorithm, channels.
void Encoder::op_identity(Buf& b, const OpRecord& r, const CommInfo* comm, int nranks) const {
  const auto kind = static_cast<OpKind>(r.kind);
  const Func func = enum_or(r.func, Func::kCount_, Func::kUnknown);
  kv_int(b, sc::kCommId, r.comm_id);
  key(b, sc::kCommHash);
  b.put('"');
  b.put_hex64(r.comm_hash != 0 || comm == nullptr ? r.comm_hash : comm->comm_hash);
  b.put('"');
  kv_int(b, sc::kRank, r.rank);
  kv_int(b, sc::kNranks, nranks);
  kv_int(b, sc::kSeq, r.seq);
  // issue = seq + issue_off; the offset (the collectives of other functions
  // started before it) repeats from record to record, the issue does not.
  // An API-only collective has no place in the issue order (which counts Coll events).
  if (kind == OpKind::kColl && (r.flags & kFlagApiOnly) == 0)
    kv_int(b, sc::kIssueOff, static_cast<int64_t>(static_cast<int32_t>(r.issue - static_cast<uint32_t>(r.seq))));
  kv_str(b, sc::kFunc, func_name(func));
  if (kind == OpKind::kP2p) {
    kv_int(b, sc::kPeer, r.peer);
    if (r.issue != 0) kv_int(b, sc::kGroupNo, r.issue);
  }
  if (r.user_tag != 0) kv_int(b, sc::kUserTag, r.user_tag);
  kv_str(b, sc::kDtype, dtype_name(enum_or(r.dtype, DType::kCount_, DType::kUnknown)));
  kv_int(b, sc::kCount, r.count);
  kv_int(b, sc::kBytes, r.bytes);
  if (kind != OpKind::kP2p && is_rooted(func) && r.peer >= 0) kv_int(b, sc::kRoot, r.peer);
  if (kind == OpKind::kColl && (r.flags & kFlagSymKernel) != 0) {
    // As NCCL describes a symmetric kernel: algo from the variant, no protocol.
    const std::string_view v = variant_name(r.kernel_variant);
    kv_str(b, sc::kAlgo, v.empty() ? algo_name(Algo::kUnknown) : variant_algo(v));
    kv_str(b, sc::kProto, "");
    flag(b, sc::kSym);
    if (!v.empty()) kv_str(b, sc::kKernelVariant, v);
    if (r.sym_tasks != 0) kv_int(b, sc::kSymPlanTasks, 1 + r.sym_tasks);
  } else if (kind == OpKind::kColl) {
    kv_str(b, sc::kAlgo, algo_name(enum_or(r.algo, Algo::kCount_, Algo::kUnknown)));
    kv_str(b, sc::kProto, proto_name(enum_or(r.proto, Proto::kCount_, Proto::kUnknown)));
  }
  if (r.n_channels != 0) kv_int(b, sc::kNchannels, r.n_channels);
  if (kind == OpKind::kColl && r.n_warps != 0) kv_int(b, sc::kNwarps, r.n_warps);
  if (r.channel_mask != 0) put_channel_ids(b, r.channel_mask);
}

// Times, bandwidths and channel use. GPU pTimer -> monotonic through the
// comm's clock estimate; without a valid estimate the op still has its
// duration but no wall-clock start.
void Encoder::op_times(Buf& b, const OpRecord& r, const ClockEstimate* clk, const OpTiming& t) const {
  const auto timing = enum_or(r.timing, TimingSource::kCount_, TimingSource::kNone);
  const uint64_t span_ns = t.span_ns;
  if (t.has_span) {
    if (timing != TimingSource::kGpu) {
      kv_int(b, sc::kStartWallNs, mono_to_wall(r.start_ns));
    } else if (clk != nullptr && clk->valid) {
      kv_int(b, sc::kStartWallNs, mono_to_wall(r.start_ns + static_cast<uint64_t>(clk->offset_ns)));
    }
  }
  if (r.enqueue_ns != 0) kv_int(b, sc::kEnqueueWallNs, mono_to_wall(r.enqueue_ns));
  if (t.has_span) kv_milli(b, sc::kDurUs, static_cast<int64_t>(span_ns));
  // Verbose-only fields are derivable from the others (or from ch_times); they
  // stay out of the default line to keep it under ~40 compressed bytes.
  if (verbose_ && r.max_channel_ns != 0) kv_us_tenth(b, sc::kMaxChUs, r.max_channel_ns);
  kv_str(b, sc::kTiming, timing_name(timing));
  if (t.has_algbw) kv_sig3(b, sc::kAlgbwGbs, t.algbw_gbs);
  if (t.has_busbw) kv_sig3(b, sc::kBusbwGbs, t.busbw_gbs);
  if (r.busy_ns != 0) {
    if (verbose_) kv_us_tenth(b, sc::kChBusyUs, r.busy_ns);
    const int nch = std::popcount(r.channel_mask);
    if (span_ns > 0 && nch > 0) {
      double util = static_cast<double>(r.busy_ns) / (static_cast<double>(span_ns) * nch);
      kv_ratio(b, sc::kChUtil, util > 1.0 ? 1.0 : util);
    }
  }
  if (r.max_channel_ns != 0 && r.min_channel_ns <= r.max_channel_ns)
    kv_ratio(b, sc::kChBalance, static_cast<double>(r.min_channel_ns) / r.max_channel_ns);
  put_ch_slow(b, r);
}

void Encoder::meta(Buf& b, const MetaInfo& m, uint32_t file_seq) const {
  begin(b, sc::kTypeMeta);
  key(b, sc::kFormat);
  b.put_json_string(sc::kFormatName);
  kv_int(b, sc::kFormatVersionField, sc::kFormatVersion);
  key(b, sc::kPluginVersion);
  b.put_json_string(m.plugin_version);
  key(b, sc::kHost);
  b.put_json_string(m.host);
  kv_int(b, sc::kPid, m.pid);
  kv_int(b, sc::kFileSeq, file_seq);
  if (!m.instance.empty()) {
    key(b, sc::kInstance);
    b.put_json_string(m.instance);
  }
  // Clock anchors: CLOCK_REALTIME wall_ns and CLOCK_MONOTONIC mono_ns read
  // together; wall = wall_ns + (mono - mono_ns) for every CPU time in the file.
  kv_int(b, sc::kWallNs, anchor_.wall_ns);
  kv_int(b, sc::kClockMonoNs, anchor_.mono_ns);
  key(b, sc::kJob);
  b.put('{');
  bool first = true;
  auto field = [&](std::string_view k, const std::string& v) {
    if (!first) b.put(',');
    first = false;
    b.put_json_string(k);
    b.put(':');
    b.put_json_string(v);
  };
  for (const auto& [k, v] : m.job.fields) field(k, v);
  field("job_id", m.job.job_id);
  field("job_id_source", m.job.job_id_source);
  if (!m.job.global_rank.empty()) {
    field("global_rank", m.job.global_rank);
    field("global_rank_source", m.job.global_rank_source);
  }
  b.put('}');
  kv_int(b, sc::kAbiVersion, m.abi_version);
  key(b, sc::kConfig);
  b.put('{');
  first = true;
  for (const auto& [k, v] : m.config) {
    if (!first) b.put(',');
    first = false;
    b.put_json_string(k);
    b.put(':');
    b.put(v);
  }
  b.put('}');
  finish(b);
}

void Encoder::comm(Buf& b, const CommInfo& c, int64_t wall_ns) const {
  begin(b, sc::kTypeComm);
  kv_int(b, sc::kWallNs, wall_ns);
  kv_int(b, sc::kCommId, c.comm_id);
  key(b, sc::kCommHash);
  b.put('"');
  b.put_hex64(c.comm_hash);
  b.put('"');
  key(b, sc::kCommName);
  b.put_json_string(c.name);
  kv_int(b, sc::kRank, c.rank);
  kv_int(b, sc::kNranks, c.nranks);
  kv_int(b, sc::kNnodes, c.nnodes);
  kv_int(b, sc::kAbiVersion, c.abi_version);
  if (c.cuda_device >= 0) kv_int(b, sc::kCudaDevice, c.cuda_device);
  if (!c.pci_bus_id.empty()) {
    key(b, sc::kPciBusId);
    b.put_json_string(c.pci_bus_id);
  }
  finish(b);
}

void Encoder::comm_end(Buf& b, const CommInfo& c, int64_t wall_ns) const {
  begin(b, sc::kTypeCommEnd);
  kv_int(b, sc::kWallNs, wall_ns);
  kv_int(b, sc::kCommId, c.comm_id);
  key(b, sc::kCommHash);
  b.put('"');
  b.put_hex64(c.comm_hash);
  b.put('"');
  kv_int(b, sc::kRank, c.rank);
  finish(b);
}

namespace {
// "key":{"AllReduce":41,...}: the seqNumber each function reached (stored + 1, 0 = none).
void put_func_seqs(Buf& b, std::string_view name, const uint64_t (&seq_plus_1)[kProgressFuncs]) {
  key(b, name);
  b.put('{');
  bool first = true;
  for (int f = 0; f < kProgressFuncs; ++f) {
    if (seq_plus_1[f] == 0) continue;
    if (!first) b.put(',');
    first = false;
    b.put('"');
    b.put(func_name(static_cast<Func>(f)));
    b.put(std::string_view("\":"));
    b.put_int(seq_plus_1[f] - 1);
  }
  b.put('}');
}
}  // namespace

void Encoder::progress(Buf& b, const CommProgress& p, const CommInfo& c, uint64_t now_mono_ns) const {
  begin(b, sc::kTypeProgress);
  kv_int(b, sc::kWallNs, mono_to_wall(now_mono_ns));
  kv_int(b, sc::kCommId, c.comm_id);
  key(b, sc::kCommHash);
  b.put('"');
  b.put_hex64(c.comm_hash);
  b.put('"');
  kv_int(b, sc::kRank, c.rank);
  kv_int(b, sc::kNranks, c.nranks);
  kv_int(b, sc::kIssued, p.issued);
  put_func_seqs(b, sc::kStarted, p.func_seq);
  put_func_seqs(b, sc::kDoneSeq, p.done_seq);
  if (p.issued != 0) kv_str(b, sc::kLastFunc, func_name(enum_or(p.last_func, Func::kCount_, Func::kUnknown)));
  if (p.api_issued != 0) {
    kv_int(b, sc::kApiIssued, p.api_issued);
    kv_str(b, sc::kLastApiFunc, func_name(enum_or(p.last_api_func, Func::kCount_, Func::kUnknown)));
  }
  kv_int(b, sc::kP2pStarted, p.p2p_started);
  kv_int(b, sc::kInFlight, p.in_flight);
  kv_int(b, sc::kQuietMs, p.quiet_ns / 1000000);
  key(b, sc::kStuck);
  b.put('[');
  for (size_t i = 0; i < p.stuck.size(); ++i) {
    const StuckOp& o = p.stuck[i];
    const auto kind = enum_or(o.kind, static_cast<OpKind>(3), OpKind::kColl);
    const Func func = enum_or(o.func, Func::kCount_, Func::kUnknown);
    if (i != 0) b.put(',');
    b.put(std::string_view("{\"kind\":\""));
    b.put(kind_name(kind));
    b.put('"');
    kv_str(b, sc::kFunc, func_name(func));
    kv_int(b, sc::kSeq, o.seq);
    if (kind == OpKind::kColl && o.issue != UINT32_MAX) kv_int(b, sc::kIssue, o.issue);  // UINT32_MAX: API-only
    if (kind == OpKind::kP2p) kv_int(b, sc::kPeer, o.peer);
    if (kind != OpKind::kP2p && is_rooted(func) && o.peer >= 0) kv_int(b, sc::kRoot, o.peer);
    kv_int(b, sc::kBytes, o.bytes);
    kv_str(b, sc::kDtype, dtype_name(enum_or(o.dtype, DType::kCount_, DType::kUnknown)));
    kv_int(b, sc::kEnqueueWallNs, mono_to_wall(o.enqueue_ns));
    const int64_t age = static_cast<int64_t>(now_mono_ns - o.enqueue_ns);
    kv_int(b, sc::kAgeMs, age > 0 ? age / 1000000 : 0);
    if (o.n_channels != 0) kv_int(b, sc::kNchannels, o.n_channels);
    put_id_list(b, sc::kChStarted, o.ch_started);
    put_id_list(b, sc::kChDone, o.ch_stopped);
    if (!o.net.empty()) {
      key(b, sc::kNet);
      b.put('[');
      for (size_t k = 0; k < o.net.size(); ++k) {
        const StuckOp::Net& n = o.net[k];
        if (k != 0) b.put(',');
        b.put(std::string_view("{\"peer\":"));
        b.put_int(n.peer);
        kv_str(b, sc::kDir, n.send ? "send" : "recv");
        kv_int(b, sc::kNetOps, n.proxy_ops);
        kv_int(b, sc::kPosted, n.posted);
        kv_int(b, sc::kDone, n.done);
        b.put('}');
      }
      b.put(']');
    }
    b.put('}');
  }
  b.put(']');
  finish(b);
}

void Encoder::alive(Buf& b, int64_t wall_ns) const {
  begin(b, sc::kTypeAlive);
  kv_int(b, sc::kWallNs, wall_ns);
  finish(b);
}

void Encoder::clock(Buf& b, const ClockEstimate& e, uint64_t comm_hash, int64_t wall_ns) const {
  begin(b, sc::kTypeClock);
  kv_int(b, sc::kWallNs, wall_ns);
  kv_int(b, sc::kCommId, e.comm_id);
  key(b, sc::kCommHash);
  b.put('"');
  b.put_hex64(comm_hash);
  b.put('"');
  kv_int(b, sc::kGpuOffsetNs, e.offset_ns);
  kv_int(b, sc::kUncertaintyNs, e.uncertainty_ns);
  kv_int(b, sc::kSamples, e.samples);
  finish(b);
}

std::array<uint64_t, ctr::kCount> counter_values(const StatsSnapshot& s) {
#define NI_VALUE(id, key, group, origin, ...) NI_COUNTER_IF_CORE(origin, s.core.id, ) NI_COUNTER_IF_OUTPUT(origin, s.id, )
  return {NI_COUNTERS(NI_VALUE)};
#undef NI_VALUE
}

// Rows of counters.h in order; a group's rows go into one object named for it.
void Encoder::stats(Buf& b, const StatsSnapshot& s, int64_t wall_ns) const {
  begin(b, sc::kTypeStats);
  kv_int(b, sc::kWallNs, wall_ns);
  const auto values = counter_values(s);
  ctr::Group open = ctr::Group::kTop;
  bool first = false;  // the next field is the first of its object
  for (size_t i = 0; i < ctr::kCount; ++i) {
    const ctr::Counter& c = ctr::kCounters[i];
    if (c.group != open) {
      if (open != ctr::Group::kTop) b.put('}');
      if (c.group != ctr::Group::kTop) {
        key(b, ctr::group_key(c.group));
        b.put('{');
        first = true;
      }
      open = c.group;
    }
    if (first) {
      b.put_json_string(c.key);
      b.put(':');
      b.put_int(values[i]);
      first = false;
    } else {
      kv_int(b, c.key, values[i]);
    }
  }
  if (open != ctr::Group::kTop) b.put('}');
  finish(b);
}

void Encoder::end(Buf& b, const StatsSnapshot& s, int64_t wall_ns) const {
  begin(b, sc::kTypeEnd);
  kv_int(b, sc::kWallNs, wall_ns);
  kv_int(b, sc::kRecordsWritten, s.records_written);
  // Every loss, whatever its reason: the sum of the "dropped" group.
  const auto values = counter_values(s);
  uint64_t dropped = 0;
  for (size_t i = 0; i < ctr::kCount; ++i)
    if (ctr::kCounters[i].group == ctr::Group::kDropped) dropped += values[i];
  kv_int(b, sc::kDroppedTotal, dropped);
  finish(b);
}

std::vector<std::pair<std::string, std::string>> config_json_fields(const Config& c) {
  // describe() is "NAME=value NAME=value ..." in settings() order; string
  // values may contain spaces, so each value runs up to " <next NAME>=".
  const std::string d = describe(c);
  const auto& st = settings();
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    std::string name(st[i].env);
    std::string head = name + "=";
    if (d.compare(pos, head.size(), head) != 0) break;  // table and describe() disagree: stop
    size_t vstart = pos + head.size();
    size_t vend = d.size();
    if (i + 1 < st.size()) {
      size_t nx = d.find(" " + std::string(st[i + 1].env) + "=", vstart);
      if (nx != std::string::npos) vend = nx;
    }
    std::string v = d.substr(vstart, vend - vstart);
    Buf b;
    bool numeric = st[i].type != SettingType::kString && !v.empty() &&
                   v.find_first_not_of("-0123456789") == std::string::npos;
    if (numeric)
      b.put(v);
    else
      b.put_json_string(v);
    out.emplace_back(name, std::string(b.view()));
    pos = vend + 1;
  }
  return out;
}

}  // namespace ni::out
