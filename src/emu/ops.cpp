// Turning the application's calls into tasks: per-rank expansion (AlltoAll,
// Gather, Scatter, SendRecv into Send/Recv parts), count/datatype rules,
// seqNumber rules, channel assignment, model times, faults and truth.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>

#include "src/emu/engine_internal.h"

namespace ni::emu {

using namespace ni::abi;

namespace {

// Symmetric-kernel variants named by workloads, kept for the process's life:
// NCCL passes pointers to its static name table, and so does the emulator.
const char* intern_variant(const std::string& v) {
  static std::mutex mu;
  static std::set<std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  return names.insert(v).first->c_str();
}

constexpr uint64_t kPaceLeadNs = 300000;  // the app enqueues up to 300 us ahead of the GPU

// The truth's channel times, duration and busbw, from the task's channels.
void truth_times(const Rank& R, const Comm& c, const Task& t, TruthOp& tr) {
  tr.ch_phase_ns.clear();
  tr.channels.clear();
  tr.ch_start_ptimer.clear();
  tr.ch_stop_ptimer.clear();
  uint64_t longest = 0;
  for (const ChanTime& ch : t.chans) {
    tr.ch_phase_ns.push_back({ch.sync_end_ns - ch.start_ns, ch.final_start_ns - ch.sync_end_ns, ch.stop_ns - ch.final_start_ns});
    tr.channels.push_back(ch.ch);
    tr.ch_start_ptimer.push_back(R.epoch + ch.start_ns);
    tr.ch_stop_ptimer.push_back(R.epoch + ch.stop_ns);
    longest = std::max(longest, ch.stop_ns - ch.start_ns);
  }
  if (longest > 0) tr.duration_us = static_cast<double>(longest) / 1000.0;
  const double bus = static_cast<double>(t.bytes) * (t.type == kP2p ? 1.0 : busbw_factor(t.func, c.nranks));
  if (tr.duration_us > 0) tr.busbw_gbps = bus / (tr.duration_us * 1000.0);
  if (t.sym_tasks > 0) {  // a symmetric plan's head: its time is the plan's
    tr.sym_plan_tasks = 1 + t.sym_tasks;
    tr.busbw_gbps = 0;
  }
}

void fill_truth(Proc& P, Rank& R, Comm& c, Task& t) {
  auto tr = std::make_unique<TruthOp>();
  tr->comm = c.spec->name;
  tr->comm_hash = c.hash;
  tr->comm_index = c.group;
  tr->rank = c.rank;
  tr->nranks = c.nranks;
  tr->nnodes = c.nnodes;
  tr->world_rank = R.g;
  tr->kind = t.type == kColl ? "coll" : t.type == kP2p ? "p2p" : "ce";
  tr->func = func_name_of(t.func);
  tr->api_func = func_name_of(t.api_func);
  tr->seq = t.seq;
  tr->count = t.count;
  tr->dtype = dtype_name_of(t.dtype);
  tr->bytes = t.bytes;
  tr->user_tag = t.user_tag;
  if (t.type == kColl && t.kernel_variant != nullptr) {
    tr->kernel_variant = t.kernel_variant;
    const char* u = std::strchr(t.kernel_variant, '_');
    tr->algo = u != nullptr ? u + 1 : t.kernel_variant;
    tr->proto = "";
  } else if (t.type == kColl) {
    tr->algo = algo_name_of(t.algo);
    tr->proto = proto_name_of(t.proto);
  }
  tr->root = t.root;
  tr->peer = t.peer;
  tr->net = t.net;
  tr->planted = t.planted;
  tr->ptimer_to_monotonic_ns = static_cast<int64_t>(P.t0_mono_ns - R.epoch);
  tr->ptimer_to_realtime_ns = static_cast<int64_t>(P.t0_real_ns - R.epoch);
  truth_times(R, c, t, *tr);
  for (size_t i = 0; i < t.faults.size(); ++i)
    if (t.faults.test(i)) tr->faults.emplace_back(fault_name(static_cast<Fault>(i)));
  if (t.hang != HangMode::kNone) {
    // Blocked in a planted hang: the kernel never ends (on a kernel_stuck
    // culprit it never starts), so no stop times and no duration.
    tr->faults.emplace_back("hang");
    std::fill(tr->ch_stop_ptimer.begin(), tr->ch_stop_ptimer.end(), 0);
    if (t.hang == HangMode::kNoKernel) std::fill(tr->ch_start_ptimer.begin(), tr->ch_start_ptimer.end(), 0);
    tr->duration_us = 0;
    tr->busbw_gbps = 0;
  }
  tr->graph_replay = t.replay;
  tr->why = "not launched";
  t.truth = tr.get();
  R.truth.push_back(std::move(tr));
}

void assign_faults(Proc& P, Comm& c, Task& t) {
  auto maybe = [&](Fault f, bool cond) {
    const auto i = static_cast<size_t>(f);
    if (P.fault(f) && cond && c.op_index >= P.o->fault_op && !c.fired.test(i)) {
      t.faults.set(i);
      c.fired.set(i);
    }
  };
  maybe(Fault::kRecvStepTwice, t.net && t.net_recv_peer >= 0);
  maybe(Fault::kNetPluginDoubleStop, t.net);
  maybe(Fault::kNetPluginStopNull, t.net);
  maybe(Fault::kProxyOpNeverStopped, t.net);
  maybe(Fault::kPxn, t.net);
  maybe(Fault::kKernelChNeverStopped, !t.chans.empty());
  maybe(Fault::kKernelChDoubleStop, !t.chans.empty());
  maybe(Fault::kKernelStampsBackwards, !t.chans.empty() && P.minor >= 27);
}

void set_channels(Task& t, const std::vector<int>& ids) {
  t.chans.clear();
  for (int id : ids) t.chans.push_back(ChanTime{id, 0, 0});
}

// Appends one task issued by the app thread: API events, mask snapshot, seq.
void append(Proc& P, Rank& R, Comm& c, const TaskP& t) {
  const int mask = P.read_mask();  // 2.26-2.27: every task append; 2.28+: every API op
  api_group_event(P, R, c, mask);
  t->api_handle = api_op_event(P, R, c, *t, mask);
  t->mask = (P.minor >= 29 && P.bcast_as_allgatherv && t->api_func == kFuncBroadcast) ? 0 : mask;
  t->graph = R.api.graph;
  if (t->type == kColl && P.minor >= 26) {
    // Per comm, per function; not advanced for graph-captured plans unless
    // KernelCh is on and an API handle exists (§8.7, §8.10).
    const bool bump = !t->graph || ((mask & kKernelCh) && (t->api_handle || R.api.group_handle || P.minor < 28));
    t->seq = bump ? c.seq[t->func].fetch_add(1, std::memory_order_relaxed)
                  : c.seq[t->func].load(std::memory_order_relaxed);
  }
  if (t->truth) t->truth->seq = t->seq;
  R.api.pending.push_back(t);
}

// Fault kMaskChange: another comm's init (or the plugin itself) rewrites the
// one activation mask around the fault op; last writer wins.
void apply_mask_fault(Proc& P, Rank& R, const Comm& c) {
  static thread_local int saved_mask = 0;
  if (!P.fault(Fault::kMaskChange) || &R != P.ranks.front().get() || c.spec_idx != 0) return;
  if (c.op_index == P.o->fault_op) {
    saved_mask = P.read_mask();
    P.write_mask(0);
  } else if (c.op_index == P.o->fault_op + 2) {
    P.write_mask(saved_mask);
  }
}

// The channels a collective of this size runs on: a new plan starts when the
// comm's channels would wrap.
void pick_coll_channels(Comm& c, Task& t, const OpSpec& op) {
  int nch = op.nchannels > 0 ? op.nchannels
            : t.bytes < (64u << 10) ? 2
            : t.bytes < (1u << 20)  ? 4
                                    : c.spec->nchannels;
  nch = std::clamp(nch, 1, std::min(c.spec->nchannels, kMaxChannels));
  if (c.next_ch > 0 && c.next_ch + nch > c.spec->nchannels) {
    t.new_plan = true;
    c.next_ch = 0;
  }
  std::vector<int> ids;
  for (int i = 0; i < nch; ++i) ids.push_back(c.next_ch + i);
  c.next_ch += nch;
  set_channels(t, ids);
}

// A collective (kernel or, 2.29+ single-node, copy engine). `hang`: the hang
// op of a group this rank is in (what the task does there), else nullptr.
void issue_coll(Proc& P, Rank& R, Comm& c, const OpSpec& op, int f, int dt, bool ce, bool issues,
                const HangAction* hang) {
  const bool is_coll = f >= kFuncBroadcast && f <= kFuncAllReduce;
  auto t = std::make_shared<Task>();
  t->comm = &c;
  t->type = ce ? kCeColl : kColl;
  t->func = t->api_func = f;
  t->api_count = op.count;
  t->api_dtype = dt;
  t->user_tag = P.minor >= 31 ? op.tag : 0;
  if (P.minor >= 31 && !ce && !op.kernel_variant.empty()) {
    t->kernel_variant = intern_variant(op.kernel_variant);
    // The next task of a symmetric plan in a group (NCCL 2.31.2 batches a
    // group's symmetric tasks of one kernel into one plan, its first the head).
    if (R.api.user_depth > 0 && !R.api.pending.empty()) {
      Task& prev = *R.api.pending.back();
      if (prev.comm == &c && prev.type == kColl && prev.kernel_variant == t->kernel_variant && prev.func == f)
        t->sym_head = prev.sym_head != nullptr ? prev.sym_head : &prev;
    }
  }
  t->root = op.root;
  t->bytes = op.count * dtype_size(dt);
  t->op_index = c.op_index;
  if (f == kFuncAllGather || f == kFuncBroadcast) {  // count in bytes, datatype ncclInt8
    t->count = t->bytes;
    t->dtype = kInt8;
  } else {
    t->count = op.count;
    t->dtype = dt;
  }
  if (!ce) {
    choose_algo_proto(P, c, *t, op);
    if (t->sym_head == nullptr) pick_coll_channels(c, *t, op);
    fill_net(P, c, *t);
  }
  if (!issues || op.count == 0 || (is_coll && c.nranks == 1)) {
    // Not issued, discarded (count 0) or a local copy (nranks 1, no events at
    // all); the comm's model clock still advances identically on every rank.
    assign_times(P, c, {t.get()}, -1);
    if (issues && op.count != 0) {
      fill_truth(P, R, c, *t);
      t->truth->why = "nranks==1: local copy, no events";
    }
    ++c.op_index;
    return;
  }
  if (t->sym_head != nullptr) {
    // The head's kernel runs this task's work too, right after what it ran so
    // far, at the head's own pace (its data time per byte): its channels end
    // that much later, and so does the comm's clock. This task has no time of
    // its own on the GPU.
    Task& h = *t->sym_head;
    uint64_t longest = 0;
    for (ChanTime& ct : h.chans) {
      const double per_byte = static_cast<double>(ct.final_start_ns - ct.sync_end_ns) /
                              static_cast<double>(std::max<uint64_t>(1, h.bytes + h.sym_bytes));
      const auto more = static_cast<uint64_t>(per_byte * static_cast<double>(t->bytes));
      ct.final_start_ns += more;
      ct.stop_ns += more;
      longest = std::max(longest, more);
    }
    ++h.sym_tasks;
    h.sym_bytes += t->bytes;
    c.clock_ns += longest;
    if (h.truth != nullptr) truth_times(R, c, h, *h.truth);
  } else {
    assign_times(P, c, {t.get()}, -1);
  }
  if (hang != nullptr) {
    t->hang = hang->mode;
    t->stuck_recv_peer = hang->stuck_recv_peer;
    t->stuck_send_peer = hang->stuck_send_peer;
  } else {
    assign_faults(P, c, *t);
  }
  fill_truth(P, R, c, *t);
  if (ce) {
    t->seq = c.ce_seq;
    c.ce_seq += 2;  // bumped once per CE sync operation (two per collective here)
  }
  append(P, R, c, t);
  ++c.op_index;
}

// Point-to-point calls as (Send/Recv, peer): 2.28+ expands AlltoAll, Gather
// and Scatter too; in earlier releases the application itself groups Send/Recv.
std::vector<std::pair<int, int>> p2p_calls(const Comm& c, const OpSpec& op, int f, bool issues) {
  const int n = c.nranks, r = c.rank;
  std::vector<std::pair<int, int>> calls;
  switch (f) {
    case kFuncSend:
      if (issues) calls.emplace_back(kFuncSend, op.peer);
      break;
    case kFuncRecv:
      if (issues) calls.emplace_back(kFuncRecv, op.peer);
      break;
    case kFuncSendRecv:
      calls.emplace_back(kFuncSend, ((r + op.shift) % n + n) % n);
      calls.emplace_back(kFuncRecv, ((r - op.shift) % n + n) % n);
      break;
    case kFuncAlltoAll:
      for (int p = 0; p < n; ++p) {
        calls.emplace_back(kFuncSend, p);
        calls.emplace_back(kFuncRecv, p);
      }
      break;
    case kFuncGather:
      if (r == op.root)
        for (int p = 0; p < n; ++p) calls.emplace_back(kFuncRecv, p);
      calls.emplace_back(kFuncSend, op.root);
      break;
    case kFuncScatter:
      if (r == op.root)
        for (int p = 0; p < n; ++p) calls.emplace_back(kFuncSend, p);
      calls.emplace_back(kFuncRecv, op.root);
      break;
    default: break;
  }
  return calls;
}

// Point-to-point: one Send/Recv task per call, timed together.
void issue_p2p(Proc& P, Rank& R, Comm& c, const OpSpec& op, int f, int dt, bool issues) {
  const size_t tsz = dtype_size(dt);
  std::vector<TaskP> ts;
  for (auto [fn, peer] : p2p_calls(c, op, f, issues)) {
    if (peer < 0 || peer >= c.nranks) continue;
    auto t = std::make_shared<Task>();
    t->comm = &c;
    t->type = kP2p;
    t->func = fn;
    t->api_func = f;
    t->count = t->api_count = op.count;
    t->dtype = t->api_dtype = dt;
    t->user_tag = P.minor >= 31 ? op.tag : 0;
    t->peer = peer;
    t->bytes = op.count * tsz;
    t->op_index = c.op_index;
    set_channels(*t, p2p_channels(c, peer, fn == kFuncSend, t->bytes));
    fill_net(P, c, *t);
    ts.push_back(t);
  }
  std::vector<Task*> raw;
  for (auto& t : ts) raw.push_back(t.get());
  if (raw.empty() || op.count == 0) {
    Task dummy;
    dummy.comm = &c;
    dummy.type = kP2p;
    dummy.bytes = op.count * tsz;
    set_channels(dummy, {0});
    assign_times(P, c, {&dummy}, -1);
    ++c.op_index;
    return;
  }
  assign_times(P, c, raw, -1);
  for (auto& t : ts) {
    assign_faults(P, c, *t);
    t->seq = c.p2p_seq[{t->peer, t->func == kFuncSend ? 1 : 0}]++;
    fill_truth(P, R, c, *t);
    append(P, R, c, t);  // the P2pApi func is the part's ("Send"/"Recv"), never "AlltoAll"
  }
  ++c.op_index;
}

void issue(Proc& P, Rank& R, const OpSpec& op) {
  Comm* cp = nullptr;
  for (auto& c : R.comms)
    if (c->spec->name == op.comm) cp = c.get();
  if (cp == nullptr) return;
  Comm& c = *cp;
  apply_mask_fault(P, R, c);
  if (c.clock_ns > kPaceLeadNs) P.pace_until(c.clock_ns - kPaceLeadNs);

  int f = func_code_of(op.func);
  const int dt = dtype_code_of(op.dtype);
  // A planted hang: this rank blocks here (resolve_hang made sure the op is a
  // standalone collective every rank of the group issues).
  const bool hang_op = at_hang_op(P, c);
  HangAction ha;
  if (hang_op) {
    ha = hang_action(P, R, c);
    R.stopped = true;
    if (!ha.issue) return;
    f = ha.func;
  }
  const bool issues = op.ranks.empty() || std::find(op.ranks.begin(), op.ranks.end(), c.rank) != op.ranks.end();
  const bool is_coll = f >= kFuncBroadcast && f <= kFuncAllReduce;
  const bool ce = P.minor >= 29 && op.ce && c.nnodes == 1 &&
                  (f == kFuncAllGather || f == kFuncAlltoAll || f == kFuncGather || f == kFuncScatter);
  if (is_coll || ce)
    issue_coll(P, R, c, op, f, dt, ce, issues, hang_op ? &ha : nullptr);
  else
    issue_p2p(P, R, c, op, f, dt, issues);
}

}  // namespace

std::vector<PlanP> make_replays(Proc& P, Rank& R, const std::vector<PlanP>& plans) {
  std::vector<PlanP> out;
  const int n = R.api.n_replays > 0 ? R.api.n_replays : P.o->graph_replays;
  for (const PlanP& p : plans) {
    if (p->ce) continue;
    if (!p->host_task) continue;
    for (const TaskP& t : p->tasks)
      if (t->truth) t->truth->why = "graph capture: events come with each replay";
    for (int i = 0; i < n; ++i) {
      auto rp = std::make_shared<Plan>(*p);
      rp->graph = false;
      rp->tasks.clear();
      Comm& c = *p->comm;
      for (const TaskP& t : p->tasks) {
        auto x = std::make_shared<Task>(*t);
        x->handle = nullptr;
        x->started = false;
        x->replay = i;
        x->faults.reset();
        x->op_index = c.op_index++;
        assign_times(P, c, {x.get()}, -1);
        fill_truth(P, R, c, *x);  // same seq as the capture: replays repeat it
        rp->tasks.push_back(x);
      }
      out.push_back(rp);
    }
  }
  return out;
}

void exec_step(Proc& P, Rank& R, const StepSpec& step, int step_index) {
  // The application names its tags once its comms exist (before its first collective).
  if (step_index == 0 && &R == P.ranks.front().get() && P.live())
    for (const auto& [tag, name] : P.o->workload.tag_names) P.binding->name_tag(tag, name.c_str());
  // A training loop marks its iterations once per process (the mark is the
  // process's, not a rank's): the process's first rank does it, after waiting
  // for what it launched so far to finish, as a loop that synchronises once
  // per iteration (loss.item(), the optimizer step) does; otherwise the CPU
  // would run ahead and the marks would not cut the GPU's time.
  if (!step.mark.empty() && P.iteration_sync) {
    for (auto& c : R.comms)
      if (c->launcher) c->launcher->drain();
    P.cudacb->drain();
    for (auto& c : R.comms)
      if (c->progress) c->progress->drain();
    P.iteration_sync->arrive_and_wait();  // every rank of the process finished the previous iteration
    if (&R == P.ranks.front().get()) {
      if (P.live()) P.binding->mark(step.mark.c_str());
      P.mark_job_ns = now_mono_ns() - P.t0_mono_ns;  // read by every rank after the barrier below
    }
    P.iteration_sync->arrive_and_wait();  // nobody starts the next iteration before the mark
    // The iteration's compute: the comms' next ops start that much later in
    // the job's time (the same on every rank, so the model stays consistent;
    // pace realtime turns it into real time), and never before the mark: a
    // process that fell more than the gap behind its schedule (a loaded
    // machine) resumes from when it marked, as a real loop would.
    const uint64_t gap = static_cast<uint64_t>(P.o->workload.iteration_gap_us) * 1000u;
    for (auto& c : R.comms) c->clock_ns = std::max(c->clock_ns + gap, P.mark_job_ns + kPaceLeadNs);
  }
  bool graph = P.fault(Fault::kGraphReplay) && step_index == P.o->fault_op;
  int replays = 0;
  for (const OpSpec& op : step.ops) {
    graph = graph || op.graph_replays > 0;
    replays = std::max(replays, op.graph_replays);
  }
  for (auto& c : R.comms) c->next_ch = 0;
  if (!step.group) {
    for (const OpSpec& op : step.ops) {
      R.api.graph = graph;
      R.api.n_replays = replays;
      issue(P, R, op);
      group_end(P, R);
      for (auto& c : R.comms) c->next_ch = 0;
    }
    return;
  }
  R.api.user_depth += std::max(1, step.depth);
  R.api.graph = graph;
  R.api.n_replays = replays;
  for (const OpSpec& op : step.ops) issue(P, R, op);
  R.api.user_depth -= std::max(1, step.depth);
  group_end(P, R);
  for (auto& c : R.comms) c->next_ch = 0;
}

}  // namespace ni::emu
