// Internal structures of the emulated NCCL: one Proc (an emulated process),
// Ranks (one app thread each, one GPU), Comms (one rank's view of one
// communicator), Tasks and Plans. See emu.h for the public API.
//
// Ownership and threads:
// - A Rank and its Comms are touched by the rank's app thread, except the
//   fields documented as shared.
// - Tasks and Plans are created on the app thread, then handed (through a
//   Worker queue, which orders memory) to the launcher / CUDA-callback
//   thread, which writes the Coll/P2p handles, and then to the progress
//   thread, which only reads them. A task's TruthOp is written by whichever
//   thread owns the task at that stage and read only after all threads joined.
#pragma once

#include <atomic>
#include <barrier>
#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/emu/binding.h"
#include "src/emu/emu.h"
#include "src/emu/worker.h"

namespace ni::emu {

struct Proc;
struct Rank;

struct ChanTime {
  int ch = 0;
  uint64_t start_ns = 0, stop_ns = 0;  // virtual GPU time since job start
  // Kernel phases (2.31+ KernelPhase): initial_sync runs start -> sync_end
  // (waiting for the last peer's channel), compute sync_end -> final_start,
  // final_sync final_start -> stop.
  uint64_t sync_end_ns = 0, final_start_ns = 0;
};

struct Comm {
  Proc* P = nullptr;
  Rank* R = nullptr;
  const CommSpec* spec = nullptr;
  int spec_idx = 0, group = 0, rank = 0, nranks = 0, nnodes = 0, local_rank = 0;
  uint64_t hash = 0;
  std::vector<int> members;  // world ranks of this comm instance, by comm rank
  void* ctx = nullptr;       // plugin per-comm context
  bool inited = false;
  std::string name_storage;  // v4+ commName: NCCL keeps the user's pointer
  std::shared_ptr<Worker> progress;
  Comm* progress_owner = nullptr;  // the comm that created the (shared) proxy
  // 2.31+: the dedicated profiler thread that delivers KernelCh (profiler-abi
  // §13.3); one per comm, shared by comms that share the proxy (split children).
  std::shared_ptr<Worker> profiler;
  std::unique_ptr<Worker> launcher;     // non-blocking comms
  std::unique_ptr<Worker> sock_helper;  // socket NetPlugin events of large transfers
  // seqNumber per function (5 collectives). Relaxed counters: on 2.23-2.25 they
  // are bumped on the launching / CUDA-callback thread, otherwise on the app thread.
  std::atomic<uint64_t> seq[5] = {};
  std::map<std::pair<int, int>, uint64_t> p2p_seq;  // (peer, is_send) -> next; app thread
  uint64_t clock_ns = 0;  // app thread: virtual time at which the next op may start
  int op_index = 0;       // app thread
  uint32_t ce_seq = 0;    // app thread
  int next_ch = 0;        // app thread: running channel counter of the open plan
  std::bitset<static_cast<size_t>(Fault::kCount)> fired;  // app thread: one-shot faults done
  bool unload_twice = false;  // 2.30 init failure: Unload runs again at destroy
  // KernelCh work counters per channel (profiler-abi §8.6): the kernel counts
  // every work item, NCCL's host only those it gave a profiler proxy op, and
  // the host reads the stamps in slot (its count % 64). The comm's progress
  // thread only (its plans run there in order).
  struct KernelChannel {
    uint64_t dev = 0, host = 0;
    uint64_t counter[64] = {}, start_ns[64] = {}, stop_ns[64] = {}, sync_end_ns[64] = {}, final_start_ns[64] = {};
  };
  std::vector<KernelChannel> kernel_ch;  // by channel id
};

// What a planted hang (TruthKnobs::Hang) does to one rank's task at the hang
// op. The progress thread reads it (set before the task is posted).
enum class HangMode : uint8_t {
  kNone,
  kStuck,      // KernelCh starts, never stops; each ProxyOp's first step posted, nothing completes
  kNoKernel,   // kernel_stuck culprit: no KernelCh at all; proxy as kStuck (sends wait for GPU data)
  kRecvStuck,  // KernelCh starts, never stops; only the steps between the culprit and its peer hang
};

struct Task {
  Comm* comm = nullptr;
  uint64_t type = 0;  // kColl, kP2p or kCeColl
  int func = 0, api_func = 0;
  int dtype = 0, api_dtype = 0;
  uint64_t count = 0, api_count = 0, bytes = 0;
  int root = 0, peer = -1;
  int algo = 1, proto = 2, nwarps = 16;
  uint32_t redop = 0;
  uint64_t user_tag = 0;  // 2.31+: the call's tag (OpSpec::tag); older releases never pass it
  const char* kernel_variant = nullptr;  // 2.31+: a symmetric-kernel plan's variant (interned), else NULL
  // 2.31+: a task of a symmetric plan after its head (same group, comm,
  // function and variant): no channels of its own (its Coll says nChannels 0)
  // and no KernelCh; the head's channels run its work too.
  Task* sym_head = nullptr;
  int sym_tasks = 0;        // a head: its later tasks
  uint64_t sym_bytes = 0;   // a head: their bytes
  std::vector<ChanTime> chans;
  uint64_t seq = 0;
  int mask = 0;               // activation-mask snapshot the task carries
  void* api_handle = nullptr; // CollApi / P2pApi handle
  void* handle = nullptr;     // Coll / P2p handle (launch thread writes, progress reads)
  bool started = false;       // Coll/P2p start delivered
  bool net = false;
  int net_send_peer = -1, net_recv_peer = -1;  // comm ranks; -1 = no such direction
  int nsteps = 0, chunk = 0;
  uint64_t step_bytes = 0;
  bool graph = false;
  int op_index = 0;           // per-comm op index (for faults, congestion)
  bool new_plan = false;      // the plan's channel counter overflowed: start a new plan
  int replay = -1;            // graph replay index
  std::bitset<static_cast<size_t>(Fault::kCount)> faults;
  HangMode hang = HangMode::kNone;
  int stuck_recv_peer = -1, stuck_send_peer = -1;  // kRecvStuck: comm ranks whose subs hang
  TruthOp* truth = nullptr;
  std::vector<std::string> planted;  // TruthOp::planted, set by assign_times()
};
using TaskP = std::shared_ptr<Task>;

// A Send/Recv to the rank itself: a copy in the kernel with no proxy op, so no
// network steps and no KernelCh (enqueue.cc: nProxyOps = selfSend ? 0 : 2,
// every release).
inline bool self_p2p(const Task& t) { return t.type == ni::abi::kP2p && t.peer == t.comm->rank; }

struct Plan {
  Comm* comm = nullptr;
  std::vector<TaskP> tasks;
  bool has_proxy = false;
  // Its host task may be deferred to the CUDA callback thread (a captured
  // graph replays it; a busy host stream runs it there): when it has proxy
  // ops, and from 2.31 also when it has profiler ops (Coll/P2p events), so
  // intra-node plans too get their events on every replay (profiler-abi §13.3).
  bool host_task = false;
  bool ce = false;
  bool graph = false;
  void* group_api = nullptr;  // GroupApi handle (KernelLaunch parent)
};
using PlanP = std::shared_ptr<Plan>;

// Per app-thread GroupApi state (NCCL keeps it thread-local, §8.2).
struct ApiState {
  int user_depth = 0;         // ncclGroupStart nesting
  bool group_started = false; // GroupApi started in this group
  void* group_handle = nullptr;
  Comm* group_comm = nullptr;
  bool graph = false;
  int n_replays = 0;           // graph replays of the captured step
  std::vector<TaskP> pending;  // tasks appended in this group
};

struct Rank {
  int g = 0;                   // world rank
  int node = 0;
  uint64_t epoch = 0;          // this GPU's pTimer epoch
  std::vector<std::unique_ptr<Comm>> comms;  // by comm spec index
  ApiState api;
  std::vector<std::unique_ptr<TruthOp>> truth;
  // App thread, read by run_impl after the join: the rank blocked in a
  // planted hang (or died with the killed process); it issues nothing more
  // and its comms are never finalized.
  bool stopped = false;
  bool hang_seen = false;      // it reached the hang op ...
  uint64_t hang_seq = 0;       // ... whose planned seqNumber was this
};

// A planted hang resolved against the job (hang.cpp); fixed before any rank
// thread starts, except kill_pending.
struct HangPlan {
  bool on = false;
  TruthKnobs::Hang spec;
  int spec_idx = 0, group = 0;  // the comm spec and which group of it
  std::vector<int> members;     // world ranks of the group, by comm rank
  int culprit_rank = 0;         // R's comm rank
  int peer = -1;                // recv_stuck: comm rank R never receives from
  int func = 0;                 // the group's function at the hang op
  int desync_func = 0;          // desync: what R issues instead
  bool holder = false;          // this process emulates R (killed: it dies)
  // killed, in the holder: set by R's app thread just before it would issue
  // the hang op; the other app threads load it at every step boundary and
  // stop there (the process dies with them). A flag: no data is published
  // through it (run_impl reads the ranks after joining their threads).
  std::atomic<bool> kill_pending{false};
};

struct Proc {
  const Options* o = nullptr;
  NcclVersion v;
  int minor = 30;
  // 2.29+: Broadcast runs as AllGatherV (CollApi only, no Coll) unless
  // NCCL_ALLGATHERV_ENABLE=0 in the environment, as in NCCL.
  bool bcast_as_allgatherv = true;
  Loader* loader = nullptr;
  std::unique_ptr<Binding> binding;
  // NCCL's process-wide activation mask. The plugin writes it plainly in init
  // (and whenever it likes); emulator threads access it through
  // std::atomic_ref<int> with relaxed order: it is a flag, ordering with other
  // data is not needed, and NCCL itself reads it plainly.
  alignas(64) int mask = 0;
  // Set (release) when an init failure disables the plugin for the process
  // (2.23-2.27); loaded (acquire) before every event.
  std::atomic<bool> disabled{false};
  std::unique_ptr<Worker> cudacb;  // the CUDA driver's host-callback thread
  uint64_t t0_mono_ns = 0, t0_real_ns = 0;
  void* foreign_page = nullptr;    // PROT_NONE page for PXN foreign pointers
  std::bitset<static_cast<size_t>(Fault::kCount)> faults;
  std::vector<std::unique_ptr<Rank>> ranks;
  int world = 1, nodes = 1;
  int op_limit = -1;               // steps to run in this phase (-1 = all)
  std::vector<StepSpec> steps;     // program + expanded mix
  HangPlan hang;
  // Iteration marks (Workload::mark_every): the process's ranks meet here,
  // each with its work done, around the mark. nullptr when there are none.
  std::unique_ptr<std::barrier<>> iteration_sync;
  uint64_t mark_job_ns = 0;  // job time of the last mark (written before the barrier, read after it)

  bool fault(Fault f) const { return faults.test(static_cast<size_t>(f)); }
  int read_mask() { return std::atomic_ref<int>(mask).load(std::memory_order_relaxed); }
  void write_mask(int m) { std::atomic_ref<int>(mask).store(m, std::memory_order_relaxed); }
  bool live() const { return !disabled.load(std::memory_order_acquire); }
  // Event helpers: no-ops once the plugin is disabled.
  void* start(void* ctx, const Ev& e) { return live() ? binding->start(ctx, e) : nullptr; }
  void stop(uint64_t type, void* h) {
    if (live()) binding->stop(type, h);
  }
  void record(uint64_t type, void* h, int state, const St& a) {
    if (live()) binding->record(type, h, state, a);
  }
  // Sleeps until the job's virtual time t (realtime pace only).
  void pace_until(uint64_t t_ns) const;
};

// model.cpp
uint64_t mix64(uint64_t x);
uint64_t hash_str(uint64_t seed, const std::string& s);
double unit_hash(uint64_t h);  // [0,1)
void choose_algo_proto(const Proc& P, const Comm& c, Task& t, const OpSpec& op);
void assign_times(Proc& P, Comm& c, std::vector<Task*> ts, int skew_peer_world);
void fill_net(const Proc& P, const Comm& c, Task& t);
std::vector<int> p2p_channels(const Comm& c, int peer, bool is_send, uint64_t bytes);
double busbw_factor(int func, int nranks);
uint64_t now_mono_ns();
uint64_t now_real_ns();

// run.cpp: the group of comm `s` that world rank g is in, its comm rank there
// and the group's world ranks by comm rank.
void comm_layout(const CommSpec& s, int world, int g, int* group, int* rank, std::vector<int>* members);

// hang.cpp: the planted hang (TruthKnobs::Hang).
struct HangAction {
  bool issue = true;            // false: the rank issues nothing from the hang op on
  int func = 0;                 // the function it issues there
  HangMode mode = HangMode::kNone;
  int stuck_recv_peer = -1, stuck_send_peer = -1;
};
// Validates the hang against the job (throws std::runtime_error) and fills P.hang.
void resolve_hang(Proc& P, const std::vector<int>& world_ranks);
// Whether op `c.op_index` of comm c is the hang op of a group this rank is in.
bool at_hang_op(const Proc& P, const Comm& c);
// What rank R does at the hang op (app thread).
HangAction hang_action(Proc& P, Rank& R, Comm& c);
// After every rank thread joined, if a rank of this process blocked in the
// hang: hold, write the truth (Options::truth_path), then end the process,
// or (HangExit::kReturn) fill res.hang and return.
void finish_hang(Proc& P, Loader& loader, RunResult& res);

// progress.cpp: everything the progress thread does for one plan.
void run_proxy(Proc& P, const PlanP& plan);
// A plan with no proxy op whose kernel still runs work items the device counts
// for KernelCh (a Send/Recv to itself; a 2.29+ Broadcast): advances the comm's
// device work counters in plan order, on its progress thread, no events.
bool hidden_kernel_work(Proc& P, const Plan& plan);
void count_kernel_work(Proc& P, const PlanP& plan);
void progress_idle(Proc& P, Comm* owner, bool going_to_sleep, void** ctrl_handle);

// engine.cpp
RunResult run_impl(const Options& o);

}  // namespace ni::emu
