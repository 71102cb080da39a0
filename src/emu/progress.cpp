// What a comm's proxy progress thread does for one posted plan (§8.4-§8.6):
// ProxyCtrl append around the ProxyOp starts (2.27+), KernelCh start/record
// 22/stop per channel, network steps with their states, NetPlugin IB QP and
// socket events, ProxyOp stops together; plus ProxyCtrl sleep/wakeup when the
// thread idles. Runs only on the progress thread (and the socket helper).
#include <time.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <mutex>

#include "src/emu/engine_internal.h"

namespace ni::emu {

using namespace ni::abi;

namespace {

struct Sub {
  Task* t = nullptr;
  int ch = 0;
  bool send = false;
  int peer = 0;
  void* h = nullptr;     // ProxyOp handle
  uint64_t cum = 0;      // cumulative bytes (2.23-2.26 ProxyOp states)
  uint64_t last = 0;     // previous step's size (what stale transSize carries)
  NetIbDescrV1 ib{};     // NCCL-owned scratch, reused for every step
  NetSockDescrV1 sock{};
};

bool has(const Task& t, Fault f) { return t.faults.test(static_cast<size_t>(f)); }

std::mutex& wire_mutex() {
  static std::mutex m;
  return m;
}

// The job-wide wire lock (Options::wire_lock), opened once per process; -1 = none.
int wire_lock_fd(const std::string& path) {
  static const int fd = path.empty() ? -1 : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  return fd;
}

// One emulated send request on the wire at a time: in this process (a mutex:
// flock does not exclude threads sharing a descriptor) and, with a lock file,
// in the whole job.
class WireTurn {
 public:
  WireTurn(bool on, const std::string& path) {
    if (!on) return;
    lock_ = std::unique_lock<std::mutex>(wire_mutex());
    fd_ = wire_lock_fd(path);
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~WireTurn() {
    if (fd_ >= 0) (void)::flock(fd_, LOCK_UN);
  }
  WireTurn(const WireTurn&) = delete;
  WireTurn& operator=(const WireTurn&) = delete;

 private:
  std::unique_lock<std::mutex> lock_;
  int fd_ = -1;
};

class ProxyRun {
 public:
  ProxyRun(Proc& P, const PlanP& plan) : P_(P), plan_(plan), c_(*plan->comm), N_(P.minor) {}

  // Kernel work the device counts with no KernelCh for it (kernel_work()): a
  // Send/Recv to itself of a comm with KernelCh on, or a Broadcast that 2.29+
  // runs as an AllGatherV task whose activation mask was lost (NVIDIA/nccl PR
  // #2369) while KernelCh is on.
  static bool hidden(Proc& P, const Task& t) {
    if (P.minor < 26 || t.type == kCeColl) return false;
    if (self_p2p(t)) return (t.mask & kKernelCh) != 0;
    return P.minor >= 29 && P.bcast_as_allgatherv && t.api_func == kFuncBroadcast && t.mask == 0 &&
           (P.read_mask() & kKernelCh) != 0;
  }

  void count_only() {
    for (const TaskP& t : plan_->tasks) (void)kernel_work(*t);
  }

  void run() {
    for (const TaskP& t : plan_->tasks) add_subs(*t);
    append();
    if (c_.profiler) {
      // 2.31+: the device work counters still advance in plan order here; the
      // KernelCh events come from the comm's profiler thread, concurrently
      // with this thread's proxy events (profiler-abi §13.3).
      std::vector<std::vector<ChanTime>> stamps;
      for (const TaskP& t : plan_->tasks) stamps.push_back(kernel_work(*t));
      Proc* pp = &P_;
      PlanP plan = plan_;
      c_.profiler->post([pp, plan, stamps = std::move(stamps)] {
        ProxyRun k(*pp, plan);
        for (size_t i = 0; i < plan->tasks.size(); ++i) {
          Task& t = *plan->tasks[i];
          const std::vector<void*> kh = k.kernel_starts(t, stamps[i]);
          k.kernel_stops(t, kh, stamps[i]);
        }
      });
      for (const TaskP& t : plan_->tasks) network(*t);
    } else {
      for (const TaskP& t : plan_->tasks) {
        const std::vector<ChanTime> stamps = kernel_work(*t);
        std::vector<void*> kh = kernel_starts(*t, stamps);
        network(*t);
        kernel_stops(*t, kh, stamps);
      }
    }
    for (Sub& s : subs_)
      if (s.h && !has(*s.t, Fault::kProxyOpNeverStopped) && !stuck(s)) P_.stop(kProxyOp, s.h);
  }

 private:
  // A sub of a task blocked in a planted hang whose transfer never completes:
  // every sub of the task, or with kRecvStuck only the culprit's receive from
  // its peer and the peer's send to the culprit.
  static bool stuck(const Sub& s) {
    const Task& t = *s.t;
    switch (t.hang) {
      case HangMode::kNone: return false;
      case HangMode::kRecvStuck: return s.send ? s.peer == t.stuck_send_peer : s.peer == t.stuck_recv_peer;
      default: return true;
    }
  }

  void* ctx_of(const Sub& s) const { return has(*s.t, Fault::kPxn) ? P_.foreign_page : c_.ctx; }

  void add_subs(Task& t) {
    if (!t.net) return;
    for (int dir = 0; dir < 2; ++dir) {
      const int peer = dir == 0 ? t.net_send_peer : t.net_recv_peer;
      if (peer < 0) continue;
      for (size_t i = 0; i < t.chans.size(); ++i) {
        if (N_ == 27 && i > 0) break;  // 2.27 only emits sub 0 of a multi-sub args
        Sub s;
        s.t = &t;
        s.ch = t.chans[i].ch;
        s.send = dir == 0;
        s.peer = peer;
        subs_.push_back(s);
      }
    }
  }

  void start_op(Sub& s) {
    const int gate = N_ >= 26 ? (kProxyOp | kProxyStep | kNetPlugin) : (kProxyOp | kProxyStep);
    if (!(s.t->mask & gate)) return;
    const bool pxn = has(*s.t, Fault::kPxn);
    Ev e;
    e.type = kProxyOp;
    e.parent = pxn ? static_cast<char*>(P_.foreign_page) + 64 : s.t->handle;
    e.rank = c_.rank;
    e.pid = pxn ? getpid() + 7919 : getpid();
    e.channel = static_cast<uint8_t>(s.ch);
    e.peer = s.peer;
    e.nsteps = s.t->nsteps;
    e.chunk = s.t->chunk;
    e.is_send = s.send ? 1 : 0;
    s.h = P_.start(ctx_of(s), e);
  }

  void append() {
    const int m = P_.read_mask();  // ProxyCtrl is gated by the current global mask
    void* ch = nullptr;
    void* owner_ctx = c_.progress_owner ? c_.progress_owner->ctx : c_.ctx;
    if (m & kProxyCtrl) {
      Ev e;
      e.type = kProxyCtrl;
      ch = P_.start(owner_ctx, e);
      if (ch) P_.record(kProxyCtrl, ch, kProxyCtrlAppend, St{});
    }
    if (N_ >= 27)
      for (Sub& s : subs_) start_op(s);
    if (ch) {
      St a;
      a.appended = static_cast<int>(subs_.size());
      P_.record(kProxyCtrl, ch, kProxyCtrlAppendEnd, a);
      P_.stop(kProxyCtrl, ch);
    }
  }

  // The work item's place in each of its channels' counters, and the stamps
  // NCCL hands its KernelCh: those of the work the host count names, which is
  // this task's own unless a work the host did not count (a self Send/Recv
  // pair) ran on that channel before it; the shift never closes.
  std::vector<ChanTime> kernel_work(Task& t) {
    std::vector<ChanTime> out = t.chans;
    const bool self = self_p2p(t), invisible = hidden(P_, t);
    if (N_ < 26 || !((t.mask & kKernelCh) || invisible) || t.hang != HangMode::kNone) return out;
    if (self && t.func != kFuncSend) return out;  // the pair's one work item: counted with its Send
    for (ChanTime& ct : out) {
      if (ct.ch < 0 || ct.ch >= 64) continue;
      if (c_.kernel_ch.size() <= static_cast<size_t>(ct.ch)) c_.kernel_ch.resize(static_cast<size_t>(ct.ch) + 1);
      Comm::KernelChannel& k = c_.kernel_ch[static_cast<size_t>(ct.ch)];
      const uint64_t d = ++k.dev;
      k.counter[d % 64] = d;
      k.start_ns[d % 64] = ct.start_ns;
      k.stop_ns[d % 64] = ct.stop_ns;
      k.sync_end_ns[d % 64] = ct.sync_end_ns;
      k.final_start_ns[d % 64] = ct.final_start_ns;
      if (invisible) continue;
      const uint64_t h = ++k.host;
      ct.start_ns = k.start_ns[h % 64];  // the work that last wrote slot h % 64
      ct.stop_ns = k.stop_ns[h % 64];
      ct.sync_end_ns = k.sync_end_ns[h % 64];
      ct.final_start_ns = k.final_start_ns[h % 64];
      if (k.counter[h % 64] != d && t.truth) t.truth->kernel_stamps_shifted = true;
    }
    if (has(t, Fault::kKernelStampsBackwards)) {  // NCCL hands stamps that end before they start
      for (ChanTime& ct : out) ct.stop_ns = ct.start_ns > 2'000'000'000 ? ct.start_ns - 2'000'000'000 : ct.start_ns / 2;
      if (t.truth) t.truth->kernel_stamps_shifted = true;
    }
    return out;
  }

  std::vector<void*> kernel_starts(Task& t, const std::vector<ChanTime>& stamps) {
    std::vector<void*> kh(t.chans.size(), nullptr);
    if (N_ < 26 || !(t.mask & kKernelCh) || self_p2p(t)) return kh;
    if (t.hang == HangMode::kNoKernel) return kh;  // kernel_stuck culprit: its kernel never runs
    // A symmetric plan's later task has no channels: no KernelCh (the head's cover its work).
    if (t.truth) t.truth->kernel_events = !t.chans.empty() && P_.live() && P_.binding->forwards(kKernelCh);
    for (size_t i = 0; i < t.chans.size(); ++i) {
      P_.pace_until(t.chans[i].start_ns);
      Ev e;
      e.type = kKernelCh;
      e.parent = t.handle;
      e.channel = static_cast<uint8_t>(t.chans[i].ch);
      e.ptimer = N_ >= 27 ? c_.R->epoch + stamps[i].start_ns : 0;
      kh[i] = P_.start(c_.ctx, e);
    }
    return kh;
  }

  // 2.31+ with KernelPhase in the mask the task carries (the v6 and v5
  // adapters cleared it).
  bool k_phases(const Task& t) const { return N_ >= 31 && (t.mask & kKernelPhase) != 0; }

  // A channel's phases, before its KernelChStop (profiler-abi.md §13.3): per
  // phase a start (pTimer = its start), state 31 (pTimer = its end) and a
  // stop; a zero-length phase is not sent. The stamps are those NCCL hands
  // the channel (kernel_work()).
  void phases(Task& t, void* kch, const ChanTime& s) {
    const uint64_t bound[4] = {s.start_ns, s.sync_end_ns, s.final_start_ns, s.stop_ns};
    for (uint8_t p = 0; p < 3; ++p) {
      if (bound[p + 1] <= bound[p]) continue;
      Ev e;
      e.type = kKernelPhase;
      e.parent = kch;
      e.rank = c_.rank;
      e.channel = static_cast<uint8_t>(s.ch);
      e.phase_id = p;
      e.ptimer = c_.R->epoch + bound[p];
      void* h = P_.start(c_.ctx, e);
      if (t.truth && p == 0) t.truth->phase_events = P_.live() && P_.binding->forwards(kKernelPhase);
      if (h == nullptr) continue;
      St a;
      a.ptimer = c_.R->epoch + bound[p + 1];
      P_.record(kKernelPhase, h, kKernelPhaseStop, a);
      P_.stop(kKernelPhase, h);
    }
  }

  void kernel_stops(Task& t, const std::vector<void*>& kh, const std::vector<ChanTime>& stamps) {
    if (N_ < 26 || !(t.mask & kKernelCh) || self_p2p(t)) return;
    if (t.hang != HangMode::kNone) return;  // blocked in a planted hang: the kernel never ends
    for (size_t i = 0; i < t.chans.size(); ++i) {
      P_.pace_until(t.chans[i].stop_ns);
      if (kh[i] == nullptr) continue;
      if (i == 0 && has(t, Fault::kKernelChNeverStopped)) continue;
      const int times = i == 0 && has(t, Fault::kKernelChDoubleStop) ? 2 : 1;
      if (k_phases(t)) phases(t, kh[i], stamps[i]);
      for (int k = 0; k < times; ++k) {
        if (N_ >= 27) {
          St a;
          a.ptimer = c_.R->epoch + stamps[i].stop_ns;
          P_.record(kKernelCh, kh[i], kKernelChStop, a);
        }
        P_.stop(kKernelCh, kh[i]);
      }
    }
  }

  uint64_t step_size(const Task& t, int k) const {
    const uint64_t off = static_cast<uint64_t>(k) * static_cast<uint64_t>(t.chunk);
    return off >= t.step_bytes ? 0 : std::min<uint64_t>(static_cast<uint64_t>(t.chunk), t.step_bytes - off);
  }

  void network(Task& t) {
    if (!t.net) return;
    if (N_ <= 26)
      for (Sub& s : subs_)
        if (s.t == &t) start_op(s);  // 2.23-2.26: started inside net progress
    if (N_ >= 27)
      for (Sub& s : subs_)
        if (s.t == &t && s.h) P_.record(kProxyOp, s.h, kProxyOpInProgress, St{});
    for (int k = 0; k < t.nsteps; ++k)
      for (Sub& s : subs_) {
        if (s.t != &t) continue;
        if (stuck(s)) {
          if (k == 0) step_stuck(s);
        } else if (N_ >= 27) {
          step_new(s, k);
        } else {
          step_old(s, k);
        }
      }
  }

  // A planted hang: the sub's first step is posted and never completes (no
  // NetPlugin event, no stop; the later steps are never posted). A send whose
  // kernel runs has its data and waits for the peer (8, 20); the kernel_stuck
  // culprit's sends wait for GPU data (8); receives wait for data (10).
  void step_stuck(Sub& s) {
    void* sh = start_step(s, 0, N_ <= 27);
    const bool gpu_ready = s.t->hang != HangMode::kNoKernel;
    if (N_ >= 27) {
      if (!sh || !s.h) return;  // state records are skipped without a ProxyOp handle
      if (s.send) {
        P_.record(kProxyStep, sh, kProxyStepSendGPUWait, St{});
        if (gpu_ready) P_.record(kProxyStep, sh, kProxyStepSendPeerWait, St{});
      } else {
        P_.record(kProxyStep, sh, kProxyStepRecvWait, St{});
      }
      return;
    }
    St null;
    null.null = true;
    if (s.h) {
      St a;
      a.steps = 1;
      P_.record(kProxyOp, s.h, s.send ? kProxyOpSendPosted : kProxyOpRecvPosted, a);
    }
    if (sh) P_.record(kProxyStep, sh, s.send ? kProxyStepSendGPUWait : kProxyStepRecvWait, null);
  }

  void* start_step(Sub& s, int k, bool need_op) {
    const int gate = N_ >= 26 ? (kProxyStep | kNetPlugin) : kProxyStep;
    if (!(s.t->mask & gate) || (need_op && s.h == nullptr)) return nullptr;
    Ev e;
    e.type = kProxyStep;
    e.parent = s.h;
    e.rank = c_.rank;
    e.step = k;
    return P_.start(ctx_of(s), e);
  }

  // 2.27+: states 8, 20 (maybe repeated), 9 / 10, 11, 12 with transSize.
  void step_new(Sub& s, int k) {
    const uint64_t size = step_size(*s.t, k);
    void* sh = start_step(s, k, N_ <= 27);
    if (!s.send && k == 0 && has(*s.t, Fault::kRecvStepTwice) && &s == first_recv_sub(*s.t)) {
      sh = start_step(s, k, N_ <= 27);  // retry: the first handle is overwritten, never stopped
    }
    const bool rec = sh && s.h;  // state records are skipped without a ProxyOp handle
    St prev;
    prev.trans_size = s.last;
    St cur;
    cur.trans_size = size;
    if (s.send) {
      if (rec) P_.record(kProxyStep, sh, kProxyStepSendGPUWait, prev);
      if (rec) P_.record(kProxyStep, sh, kProxyStepSendPeerWait, prev);
      if (rec && unit_hash(mix64(c_.hash ^ (static_cast<uint64_t>(s.ch) << 32) ^ static_cast<uint64_t>(k))) < 0.2)
        P_.record(kProxyStep, sh, kProxyStepSendPeerWait, prev);  // isend retried
      net_events(s, sh, k, size);
      if (rec) P_.record(kProxyStep, sh, kProxyStepSendWait, cur);
    } else {
      if (rec) P_.record(kProxyStep, sh, kProxyStepRecvWait, prev);
      net_events(s, sh, k, size);
      if (rec) P_.record(kProxyStep, sh, kProxyStepRecvFlushWait, cur);
      if (rec) P_.record(kProxyStep, sh, kProxyStepRecvGPUWait, cur);
    }
    if (sh) P_.stop(kProxyStep, sh);
    s.last = size;
  }

  // 2.23-2.26: ProxyOp states 0-7 with cumulative transSize, step states with NULL args.
  void step_old(Sub& s, int k) {
    const uint64_t size = step_size(*s.t, k);
    void* sh = start_step(s, k, true);
    St null;
    null.null = true;
    auto op_state = [&](int st) {
      if (!s.h) return;
      St a;
      a.trans_size = s.cum;
      a.steps = k + 1;
      P_.record(kProxyOp, s.h, st, a);
    };
    if (s.send) {
      op_state(kProxyOpSendPosted);
      if (sh) P_.record(kProxyStep, sh, kProxyStepSendGPUWait, null);
      op_state(kProxyOpSendRemFifoWait);
      net_events(s, sh, k, size);
      if (sh) P_.record(kProxyStep, sh, kProxyStepSendWait, null);
      s.cum += size;
      op_state(kProxyOpSendTransmitted);
      if (sh) P_.stop(kProxyStep, sh);
      op_state(kProxyOpSendDone);
    } else {
      op_state(kProxyOpRecvPosted);
      if (sh) P_.record(kProxyStep, sh, kProxyStepRecvWait, null);
      net_events(s, sh, k, size);
      s.cum += size;
      op_state(kProxyOpRecvReceived);
      if (sh) P_.record(kProxyStep, sh, kProxyStepRecvFlushWait, null);
      op_state(kProxyOpRecvTransmitted);
      if (sh) P_.record(kProxyStep, sh, kProxyStepRecvGPUWait, null);
      // 2.24-2.26 (#1658): the recv stop uses the wrong step id; model it as
      // odd recv steps never being stopped, so starts outnumber stops.
      const bool lost = N_ >= 24 && (k % 2) == 1;
      if (sh && !lost) P_.stop(kProxyStep, sh);
      op_state(kProxyOpRecvDone);
    }
  }

  // With model.hca_gbps: a send work request of `bytes` stays on the wire for
  // bytes / hca_gbps (x a slow_hcas factor of this rank's HCA), in real time:
  // a sleep for all but the last 100 us, then a spin, so that the plugin's
  // clock sees the modelled time (a sleep alone would add the wakeup latency,
  // which on a loaded machine is as long as the transfer).
  void wire_wait(const Sub& s, uint64_t bytes) {
    const ModelKnobs& m = P_.o->workload.model;
    if (m.hca_gbps <= 0 || bytes == 0) return;
    double ns = static_cast<double>(bytes) / m.hca_gbps;
    const int dev = s.ch % std::max(1, m.hcas_per_node);
    for (const auto& sh : P_.o->workload.truth.slow_hcas)
      if (sh.world_rank == c_.R->g && sh.hca == dev && s.t->op_index >= sh.from_op) ns *= sh.factor;
    const uint64_t end = now_mono_ns() + static_cast<uint64_t>(ns);
    if (ns > 200e3) {
      const uint64_t d = static_cast<uint64_t>(ns) - 100000;
      timespec ts{static_cast<time_t>(d / 1000000000ull), static_cast<long>(d % 1000000000ull)};
      while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
      }
    }
    while (now_mono_ns() < end) {
    }
  }

  const Sub* first_recv_sub(const Task& t) const {
    for (const Sub& s : subs_)
      if (s.t == &t && !s.send) return &s;
    return nullptr;
  }

  void net_events(Sub& s, void* sh, int k, uint64_t size) {
    const NetProfiler np = P_.o->workload.net_profiler;
    if (N_ < 26 || np == NetProfiler::kNone || !(s.t->mask & kNetPlugin)) return;
    Ev e;
    e.type = kNetPlugin;
    e.parent = sh;
    e.rank = c_.rank;
    void* ctx = ctx_of(s);
    const bool dbl = has(*s.t, Fault::kNetPluginDoubleStop);
    if (np == NetProfiler::kIb) {
      s.ib.type = kNetIbQp;
      s.ib.qp.device = s.ch % std::max(1, P_.o->workload.model.hcas_per_node);
      s.ib.qp.wr_id = (static_cast<uint64_t>(k) << 8) | static_cast<uint64_t>(s.ch);
      s.ib.qp.opcode = s.send ? 1 : 0;  // send: RDMA write with immediate; recv: not set
      s.ib.qp.qpNum = 0x100 + s.ch * 2 + (s.send ? 1 : 0);
      s.ib.qp.length = s.send ? size : 0;
      e.net_id = kNetIbIdV1;
      e.net_data = &s.ib;
      // With emulated wire time, one send request of this process is on the
      // wire at a time: the emulator's spinning threads would otherwise
      // deschedule each other inside the intervals they emulate.
      WireTurn turn(s.send && P_.o->workload.model.hca_gbps > 0, P_.o->wire_lock);
      void* nh = P_.start(ctx, e);
      if (s.send) wire_wait(s, size);  // on the wire until the CQ completion
      P_.stop(kNetPlugin, nh);  // CQ completion: stopEvent(*eHandle), no NULL check
      P_.stop(kNetPlugin, nh);  // and again when test() completes the request
    } else {
      s.sock.type = kNetSocket;
      s.sock.sock.fd = 40 + s.ch;
      s.sock.sock.op = s.send ? kSocketSend : kSocketRecv;
      s.sock.sock.length = size;
      e.net_id = kNetSockIdV1;
      e.net_data = &s.sock;
      auto job = [this, e, ctx, dbl] {
        void* nh = P_.start(ctx, e);
        P_.stop(kNetPlugin, nh);
        if (dbl) P_.stop(kNetPlugin, nh);
      };
      Comm& tc = *s.t->comm;
      if (size >= (64u << 10) && tc.sock_helper) {
        tc.sock_helper->post(job);  // large transfers: the socket helper thread
        tc.sock_helper->drain();    // test() completes once the helper is done
      } else {
        job();
      }
    }
    if (has(*s.t, Fault::kNetPluginStopNull) && k == 0) P_.stop(kNetPlugin, nullptr);
  }

  Proc& P_;
  PlanP plan_;
  Comm& c_;
  int N_;
  std::vector<Sub> subs_;
};

}  // namespace

void run_proxy(Proc& P, const PlanP& plan) { ProxyRun(P, plan).run(); }

bool hidden_kernel_work(Proc& P, const Plan& plan) {
  if (P.minor < 26 || plan.ce) return false;
  for (const TaskP& t : plan.tasks)
    if (ProxyRun::hidden(P, *t)) return true;
  return false;
}

void count_kernel_work(Proc& P, const PlanP& plan) { ProxyRun(P, plan).count_only(); }

void progress_idle(Proc& P, Comm* owner, bool going_to_sleep, void** ctrl) {
  if (going_to_sleep) {
    if (!(P.read_mask() & kProxyCtrl)) return;
    Ev e;
    e.type = kProxyCtrl;
    *ctrl = P.start(owner->ctx, e);
    if (*ctrl) P.record(kProxyCtrl, *ctrl, kProxyCtrlSleep, St{});
  } else if (*ctrl) {
    P.record(kProxyCtrl, *ctrl, kProxyCtrlWakeup, St{});
    P.stop(kProxyCtrl, *ctrl);
    *ctrl = nullptr;
  }
}

}  // namespace ni::emu
