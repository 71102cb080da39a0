// The emulated NCCL host side: the API layer (GroupApi state machine,
// CollApi/P2pApi, task append, seqNumber), planning (channel ranges, several
// plans per group), and the launch layer (KernelLaunch, hostStreamPlanTask,
// CE collectives, graph replay on the CUDA-callback thread).
// profiler-abi.md §7, §8.0-§8.3, §8.7-§8.11, §9.
#include <algorithm>

#include "src/emu/engine.h"
#include "src/emu/engine_internal.h"

namespace ni::emu {

using namespace ni::abi;

namespace {

constexpr int kCollApiGate = kCollApi | kColl | kProxyOp | kProxyStep | kKernelCh | kNetPlugin | kCeEventBits;
constexpr int kP2pApiGate = kP2pApi | kP2p | kProxyOp | kProxyStep | kKernelCh | kNetPlugin;

void* fake_stream(const Comm& c) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(0x57000000u + static_cast<unsigned>(c.R->g) * 16u));
}

bool gate_group(const Proc& P, int m) {
  if (P.minor >= 26) return (m & (kGroup | kColl | kP2p | kProxyOp | kProxyStep | kKernelCh | kNetPlugin)) != 0;
  return (m & (kColl | kP2p | kProxyOp | kProxyStep)) != 0;
}

// Returns "" when the Coll/P2p start happens, else why not.
const char* gate_task(const Proc& P, const Task& t, void* group_h) {
  const int m = t.mask;
  if (m == 0) return P.minor >= 29 && P.bcast_as_allgatherv && t.api_func == kFuncBroadcast
                         ? "Broadcast on 2.29+ (AllGatherV path)"
                                                                    : "activation mask is 0";
  if (P.minor <= 25) {
    if (group_h == nullptr) return "no Group handle (2.23-2.27 need one)";
    return (m & (kProxyOp | kProxyStep | kColl)) ? "" : "mask lacks Coll/ProxyOp/ProxyStep (2.23-2.25 rule)";
  }
  if (P.minor <= 27 && group_h == nullptr) return "no Group handle (2.23-2.27 need one)";
  if (t.type == kColl)
    return (m & (kColl | kProxyOp | kProxyStep | kKernelCh | kNetPlugin)) ? "" : "mask lacks Coll-related bits";
  const int p2p_bits = P.minor >= 28 ? (kP2p | kProxyOp | kProxyStep | kKernelCh | kNetPlugin)
                                     : (kP2p | kProxyOp | kProxyStep | kKernelCh);
  return (m & p2p_bits) ? "" : "mask lacks P2p-related bits";
}

void post_proxy(Proc& P, const PlanP& plan) {
  if (!plan->has_proxy) {
    if (!plan->comm->progress || !hidden_kernel_work(P, *plan)) return;
    auto count = [&P, plan] { plan->comm->progress->post([&P, plan] { count_kernel_work(P, plan); }); };
    // In launch order: behind the plans whose host task still waits on the
    // CUDA-callback thread (a comm with host_callback).
    if (plan->comm->spec->host_callback && P.cudacb)
      P.cudacb->post(count);
    else
      count();
    return;
  }
  plan->comm->progress->post([&P, plan] { run_proxy(P, plan); });
}

}  // namespace

// hostStreamPlanTask: Group start, Coll starts, P2p starts, post proxy ops,
// Coll stops, P2p stops, Group stop. Runs on the launching thread or on the
// CUDA-callback thread.
void host_stream_plan_task(Proc& P, const PlanP& plan) {
  Comm& c = *plan->comm;
  if (P.minor <= 25) {  // 2.23-2.25: the mask is re-read once per plan into a global
    const int m = P.read_mask();
    for (const TaskP& t : plan->tasks) t->mask = m;
  }
  int pm = 0;
  for (const TaskP& t : plan->tasks)
    if (t->mask != 0) {
      pm = t->mask;
      break;
    }
  void* gh = nullptr;
  if (gate_group(P, pm)) {
    Ev e;
    e.type = kGroup;
    gh = P.start(c.ctx, e);
  }
  auto start_task = [&](Task& t) {
    const char* why = gate_task(P, t, gh);
    if (!P.live()) why = "plugin disabled (init failed)";
    if (*why == 0) {
      if (t.type == kColl && P.minor <= 25) {
        // 2.23-2.25: post-incremented only when the Coll event starts.
        t.seq = c.seq[t.func].fetch_add(1, std::memory_order_relaxed);
        if (t.truth) t.truth->seq = t.seq;
      }
      Ev e;
      e.type = t.type;
      e.parent = P.minor >= 28 ? t.api_handle : gh;
      e.parent_group = gh;
      e.rank = c.rank;
      e.comm_hash = c.hash;
      e.seq = t.seq;
      e.func = t.func;
      e.sendbuff = reinterpret_cast<const void*>(static_cast<uintptr_t>(0x7f0000000000ull + t.bytes));
      e.recvbuff = reinterpret_cast<void*>(static_cast<uintptr_t>(0x7f8000000000ull + t.bytes));
      e.count = t.count;
      e.root = t.root;
      e.dtype = t.dtype;
      e.redop = t.redop;
      e.traffic_bytes = t.bytes;
      e.nchannels = static_cast<uint8_t>(t.chans.size());
      e.nwarps = static_cast<uint8_t>(t.nwarps);
      e.algo = t.algo;
      e.proto = t.proto;
      e.peer = t.peer;
      e.user_tag = t.user_tag;
      e.kernel_variant = t.kernel_variant;
      t.handle = P.start(c.ctx, e);
      t.started = true;
    }
    if (t.truth) {
      t.truth->visible = *why == 0;
      t.truth->why = why;
    }
  };
  for (const TaskP& t : plan->tasks)
    if (t->type == kColl) start_task(*t);
  for (const TaskP& t : plan->tasks)
    if (t->type == kP2p) start_task(*t);
  const bool late = P.fault(Fault::kParentStoppedFirst);
  if (!late) post_proxy(P, plan);
  for (const TaskP& t : plan->tasks)
    if (t->type == kColl && t->handle) P.stop(kColl, t->handle);
  for (const TaskP& t : plan->tasks)
    if (t->type == kP2p && t->handle) P.stop(kP2p, t->handle);
  if (gh) P.stop(kGroup, gh);
  if (late) post_proxy(P, plan);
}

namespace {

// CE collective (2.29+): everything on the launching thread, no KernelLaunch,
// no Group, no Coll (§9).
void run_ce(Proc& P, const PlanP& plan) {
  Comm& c = *plan->comm;
  Task& t = *plan->tasks.front();
  const int m = P.read_mask();  // re-read at every CE start
  const char* why = "";
  if (!P.live()) why = "plugin disabled (init failed)";
  else if (!(m & kCeEventBits)) why = "mask lacks CE bits";
  else if (!P.binding->forwards(kCeColl)) why = "CE events dropped by the bound ABI";
  if (t.truth) {
    t.truth->visible = *why == 0;
    t.truth->why = why;
  }
  if (!(m & kCeEventBits)) return;
  Ev e;
  e.type = kCeColl;
  e.parent = t.api_handle;
  e.rank = c.rank;
  e.seq = t.seq;
  e.ce_seq = static_cast<uint32_t>(t.seq);
  e.func = t.api_func;
  e.count = t.api_count;
  e.dtype = t.api_dtype;
  e.root = t.root;
  e.stream = fake_stream(c);
  e.user_tag = t.user_tag;
  e.sendbuff = reinterpret_cast<const void*>(static_cast<uintptr_t>(0x7e0000000000ull));
  e.recvbuff = reinterpret_cast<void*>(static_cast<uintptr_t>(0x7e8000000000ull));
  void* h = P.start(c.ctx, e);
  if (h == nullptr) return;
  auto sync = [&](bool complete) {
    if (!(m & kCeSync)) return;
    Ev s;
    s.type = kCeSync;
    s.parent = h;
    s.rank = c.rank;
    s.ce_complete = complete;
    s.ce_nranks = c.nranks;
    if (void* sh = P.start(c.ctx, s)) P.stop(kCeSync, sh);
  };
  sync(false);
  if (m & kCeBatch) {
    Ev b;
    b.type = kCeBatch;
    b.parent = h;
    b.rank = c.rank;
    b.ce_numops = static_cast<uint32_t>(std::max(1, c.nranks - 1));
    b.ce_total_bytes = t.bytes * static_cast<uint64_t>(std::max(1, c.nranks - 1));
    if (void* bh = P.start(c.ctx, b)) P.stop(kCeBatch, bh);
  }
  sync(true);
  P.stop(kCeColl, h);
}

void launch_plan(Proc& P, const PlanP& plan, const std::vector<PlanP>& replays) {
  Comm& c = *plan->comm;
  if (plan->ce) {
    run_ce(P, plan);
    return;
  }
  int fm = 0;
  for (const TaskP& t : plan->tasks)
    if (t->mask != 0) {
      fm = t->mask;
      break;
    }
  if (P.minor >= 28 && (fm & kKernelLaunch)) {
    Ev e;
    e.type = kKernelLaunch;
    e.parent = plan->group_api;
    e.stream = fake_stream(c);
    if (void* h = P.start(c.ctx, e)) P.stop(kKernelLaunch, h);
  }
  if (plan->graph) {
    if (plan->host_task) {
      // A host-callback node was captured: every replay runs hostStreamPlanTask
      // on the CUDA driver thread with the capture-time API handles.
      for (const PlanP& rp : replays)
        if (rp->comm == plan->comm) P.cudacb->post([&P, rp] { host_stream_plan_task(P, rp); });
    } else {
      for (const TaskP& t : plan->tasks)
        if (t->truth)
          t->truth->why = P.minor >= 31 ? "graph without proxy or profiler ops: events only at capture"
                                        : "graph without proxy ops: events only at capture";
      host_stream_plan_task(P, plan);  // once, at capture; replays emit nothing
    }
    return;
  }
  if (plan->host_task && c.spec->host_callback) {
    P.cudacb->post([&P, plan] { host_stream_plan_task(P, plan); });
    return;
  }
  host_stream_plan_task(P, plan);
}

}  // namespace

// ------------------------------------------------------------------ API layer

void api_group_event(Proc& P, Rank& R, Comm& c, int mask) {
  ApiState& a = R.api;
  if (P.minor < 28 || a.group_started || (mask & ~kProxyCtrl) == 0) return;
  Ev e;
  e.type = kGroupApi;
  e.group_depth = a.user_depth + 1;  // user levels + the implicit one
  e.graph_captured = a.graph;
  a.group_handle = P.start(c.ctx, e);
  a.group_started = true;
  a.group_comm = &c;
  if (a.group_handle) {
    St s;
    s.null = true;
    P.record(kGroupApi, a.group_handle, kGroupStartApiStop, s);
  }
}

void* api_op_event(Proc& P, Rank& R, Comm& c, const Task& t, int mask) {
  if (P.minor < 28) return nullptr;
  const bool coll = t.type != kP2p;
  if (!(mask & (coll ? kCollApiGate : kP2pApiGate))) return nullptr;
  Ev e;
  e.type = coll ? kCollApi : kP2pApi;
  e.parent = R.api.group_handle;
  e.func = coll ? t.api_func : t.func;
  e.count = t.api_count;
  e.dtype = t.api_dtype;
  e.root = t.root;
  e.stream = fake_stream(c);
  e.graph_captured = R.api.graph;
  e.user_tag = t.user_tag;
  void* h = P.start(c.ctx, e);
  if (h) P.stop(e.type, h);
  return h;
}

void group_end(Proc& P, Rank& R) {
  ApiState& a = R.api;
  if (a.pending.empty() && !a.group_started) {
    a = ApiState{};
    return;
  }
  if (P.minor >= 28 && a.group_started && a.group_handle) {
    St s;
    s.null = true;
    P.record(kGroupApi, a.group_handle, kGroupEndApiStart, s);
  }
  // Plans per comm, in order of first appearance. Colls split into a new plan
  // when their running channel counter overflowed (Task::new_plan); p2p tasks
  // join the comm's first plan; CE tasks get their own plan.
  std::vector<PlanP> plans;
  std::vector<Comm*> order;
  for (const TaskP& t : a.pending)
    if (std::find(order.begin(), order.end(), t->comm) == order.end()) order.push_back(t->comm);
  for (Comm* c : order) {
    std::vector<PlanP> mine;
    PlanP cur;
    auto fresh = [&] {
      cur = std::make_shared<Plan>();
      cur->comm = c;
      cur->graph = a.graph;
      cur->group_api = a.group_handle;
      mine.push_back(cur);
    };
    for (const TaskP& t : a.pending) {
      if (t->comm != c || t->type != kColl) continue;
      if (!cur || t->new_plan) fresh();
      cur->tasks.push_back(t);
    }
    for (const TaskP& t : a.pending) {
      if (t->comm != c || t->type != kP2p) continue;
      if (mine.empty()) fresh();
      mine.front()->tasks.push_back(t);
    }
    for (const TaskP& t : a.pending) {
      if (t->comm != c || t->type != kCeColl) continue;
      fresh();
      cur->ce = true;
      cur->tasks.push_back(t);
    }
    for (const PlanP& p : mine) {
      for (const TaskP& t : p->tasks) {
        if (t->net) p->has_proxy = true;
        if (P.minor >= 26 && (t->mask & kKernelCh) && !self_p2p(*t)) p->has_proxy = true;
      }
      if (P.minor <= 25)  // the task mask is decided at plan time; be conservative
        for (const TaskP& t : p->tasks)
          if (t->net) p->has_proxy = true;
      p->host_task = p->has_proxy;
      if (P.minor >= 31)
        for (const TaskP& t : p->tasks)
          if (t->mask & (kColl | kP2p)) p->host_task = true;
    }
    plans.insert(plans.end(), mine.begin(), mine.end());
  }
  std::vector<PlanP> replays;
  if (a.graph) replays = make_replays(P, R, plans);

  Comm* nb = nullptr;
  for (const PlanP& p : plans)
    if (!p->comm->spec->blocking) {
      nb = p->comm;
      break;
    }
  auto launch = [&P, plans, replays] {
    for (const PlanP& p : plans) launch_plan(P, p, replays);
  };
  void* gh = a.group_started ? a.group_handle : nullptr;
  if (nb != nullptr) {
    nb->launcher->post(launch);  // the group-launch thread of a non-blocking comm
    if (gh) P.stop(kGroupApi, gh);
    nb->launcher->drain();  // the app polls ncclCommGetAsyncError until done
  } else {
    launch();
    if (gh) P.stop(kGroupApi, gh);
  }
  const int depth = a.user_depth;
  a = ApiState{};
  a.user_depth = depth;
}

}  // namespace ni::emu
