// One emulated process: validation, plugin load/bind, comm init (serial or
// concurrent), one app thread per emulated GPU, teardown (proxy first, then
// finalize, dlclose after the last one, §6), the reload fault, and the summary.
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <sys/mman.h>

#include <algorithm>
#include <barrier>
#include <latch>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "src/emu/engine_internal.h"

namespace ni::emu {

using namespace ni::abi;

namespace {

std::vector<StepSpec> expand_steps(const Options& o) {
  const Workload& w = o.workload;
  std::vector<StepSpec> steps = w.program;
  if (w.mix.empty() || w.iterations <= 0) return steps;
  std::mt19937_64 rng(mix64(o.seed ^ 0x6d6978ull));
  double total = 0;
  for (const MixEntry& m : w.mix) total += std::max(0.0, m.weight);
  if (total <= 0) return steps;
  const int gs = std::max(1, w.group_size);
  for (int i = 0; i < w.iterations; ++i) {
    StepSpec s;
    s.group = gs > 1;
    if (w.mark_every > 0 && i % w.mark_every == 0) s.mark = "iteration " + std::to_string(i / w.mark_every);
    for (int j = 0; j < gs; ++j) {
      double x = std::uniform_real_distribution<double>(0, total)(rng);
      const MixEntry* pick = &w.mix.back();
      for (const MixEntry& m : w.mix) {
        if (x < m.weight) {
          pick = &m;
          break;
        }
        x -= std::max(0.0, m.weight);
      }
      OpSpec op;
      op.comm = pick->comm;
      op.func = pick->func;
      op.dtype = pick->dtype;
      op.tag = pick->tag;
      const uint64_t bytes = pick->bytes.empty() ? 1048576 : pick->bytes[rng() % pick->bytes.size()];
      op.count = std::max<uint64_t>(1, bytes / dtype_size(dtype_code_of(op.dtype)));
      s.ops.push_back(op);
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

void validate(const Options& o, int* world) {
  const Workload& w = o.workload;
  if (w.comms.empty()) throw std::runtime_error("workload has no communicators");
  int mx = 0;
  std::set<std::string> names;
  for (const CommSpec& c : w.comms) {
    if (c.nranks < 1) throw std::runtime_error("comm '" + c.name + "': nranks must be >= 1");
    if (c.nchannels < 1 || c.nchannels > kMaxChannels) throw std::runtime_error("comm '" + c.name + "': nchannels must be 1..64");
    if (!names.insert(c.name).second) throw std::runtime_error("duplicate comm name '" + c.name + "'");
    if (!c.share_progress_with.empty() && !names.count(c.share_progress_with))
      throw std::runtime_error("comm '" + c.name + "': share_progress_with names no earlier comm");
    mx = std::max(mx, c.nranks);
  }
  *world = w.world > 0 ? w.world : mx;
  for (const CommSpec& c : w.comms)
    if (*world % c.nranks != 0)
      throw std::runtime_error("comm '" + c.name + "': nranks " + std::to_string(c.nranks) + " does not divide world " +
                               std::to_string(*world));
  if (w.nodes < 1 || *world % w.nodes != 0) throw std::runtime_error("nodes must divide the world size");
  auto check_op = [&](const OpSpec& op) {
    if (!names.count(op.comm)) throw std::runtime_error("op refers to unknown comm '" + op.comm + "'");
    const int f = func_code_of(op.func);
    if (f < 0) throw std::runtime_error("unknown func '" + op.func + "'");
    if (dtype_code_of(op.dtype) < 0) throw std::runtime_error("unknown dtype '" + op.dtype + "'");
    if ((f == kFuncSend || f == kFuncRecv) && op.peer < 0) throw std::runtime_error(op.func + " needs a peer");
  };
  for (const StepSpec& s : w.program)
    for (const OpSpec& op : s.ops) check_op(op);
  for (const MixEntry& m : w.mix) {
    OpSpec op;
    op.comm = m.comm;
    op.func = m.func;
    op.dtype = m.dtype;
    op.peer = 0;
    check_op(op);
  }
  for (int g : o.world_ranks)
    if (g < 0 || g >= *world) throw std::runtime_error("emulated rank " + std::to_string(g) + " outside world");
  for (const TruthKnobs::LateOnce& lo : w.truth.late_once)
    if (lo.world_rank >= *world)
      throw std::runtime_error("truth.late_once: world_rank " + std::to_string(lo.world_rank) + " is outside the world (" +
                               std::to_string(*world) + " ranks)");
}

void build_rank(Proc& P, Rank& R) {
  const Workload& w = P.o->workload;
  const int per_node = P.world / P.nodes;
  R.node = R.g / per_node;
  R.epoch = 1000000000000ull + (mix64(P.o->seed * 131 + static_cast<uint64_t>(R.g)) % 500000000000000ull);
  for (size_t i = 0; i < w.comms.size(); ++i) {
    const CommSpec& s = w.comms[i];
    auto c = std::make_unique<Comm>();
    c->P = &P;
    c->R = &R;
    c->spec = &s;
    c->spec_idx = static_cast<int>(i);
    c->nranks = s.nranks;
    comm_layout(s, P.world, R.g, &c->group, &c->rank, &c->members);
    std::set<int> nodes;
    for (int g : c->members) nodes.insert(g / per_node);
    c->nnodes = static_cast<int>(nodes.size());
    int local = 0;
    for (int g : c->members)
      if (g / per_node == R.node && g < R.g) ++local;
    c->local_rank = local;
    c->hash = hash_str(P.o->seed, s.name + "#" + std::to_string(c->group));
    c->name_storage = s.name;
    R.comms.push_back(std::move(c));
  }
}

// ncclCommInitRank's profiler part: load (refcounted), bind, init (§6).
void init_plugin(Proc& P, Comm& c) {
  if (!P.live()) return;  // 2.23-2.27: disabled for the whole process
  PluginTables t;
  std::string err;
  if (!P.loader->acquire(&t, &err)) return;
  CommInit ci;
  ci.comm_hash = c.hash;
  ci.comm_name = c.spec->set_comm_name ? c.name_storage.c_str() : nullptr;
  ci.nnodes = c.nnodes;
  ci.nranks = c.nranks;
  ci.rank = c.rank;
  ci.logfn = P.o->logger ? P.o->logger : nccl_logger();
  void* ctx = nullptr;
  const int r = P.binding->init(&ctx, &P.mask, ci);
  c.ctx = ctx;
  c.inited = true;
  // 2.31+: the RAS override is re-applied after each comm's init, over what
  // the plugin (and the adapters) wrote: the plugin cannot assume its mask is
  // the one in force. Relaxed, as every write of NCCL's mask (read_mask()).
  if (P.minor >= 31 && P.o->ras_mask >= 0) {
    std::atomic_ref<int>(P.mask).store(P.o->ras_mask, std::memory_order_relaxed);
    ci.logfn(kLogInfo, kSubsysInit, __FILE__, __LINE__, "PROFILER/Plugin: event mask 0x%x set by RAS for comm %s",
             static_cast<unsigned>(P.o->ras_mask), c.spec->name.c_str());
  }
  if (r != kSuccess) {
    ci.logfn(kLogWarn, kSubsysInit, __FILE__, __LINE__, "PROFILER/Plugin: init for comm %s returned %d", c.spec->name.c_str(),
             r);
    if (P.minor <= 27) {
      P.disabled.store(true, std::memory_order_release);  // pairs with the acquire in Proc::live()
    } else if (P.minor >= 30) {
      P.loader->release();
      c.unload_twice = true;
    }
  }
}

// 2.31+: how many empty looks the profiler thread takes, backing off to 10 us,
// before it sleeps on its condition variable (NCCL sleeps when it has no op in
// flight; ~140 us of polling stands for the gap between two ops of a busy job).
constexpr int kProfilerIdlePolls = 16;

// Proxy resources: NCCL creates the progress thread after init (§6). We also
// start it only after every comm of the phase ran init, so the plugin's plain
// write of the mask in init never races with an emulator thread reading it.
void start_workers(Proc& P, Comm& c) {
  // Proxy resources: the progress thread is created after init (§6).
  if (!c.spec->share_progress_with.empty()) {
    for (auto& o : c.R->comms)
      if (o->spec->name == c.spec->share_progress_with) {
        c.progress = o->progress;
        c.progress_owner = o->progress_owner;
        c.profiler = o->profiler;
      }
  }
  if (!c.progress) {
    auto ctrl = std::make_shared<void*>(nullptr);
    Proc* pp = &P;
    Comm* owner = &c;
    c.progress_owner = &c;
    c.progress = std::make_shared<Worker>(
        "emu-prog-" + c.spec->name.substr(0, 4) + std::to_string(c.R->g),
        [pp, owner, ctrl](bool sleeping) { progress_idle(*pp, owner, sleeping, ctrl.get()); });
  }
  if (P.minor >= 31 && !c.profiler)
    c.profiler = std::make_shared<Worker>("emu-prof-" + c.spec->name.substr(0, 4) + std::to_string(c.R->g),
                                          Worker::IdleHook{}, Worker::Polling{kProfilerIdlePolls, {}});
  if (!c.spec->blocking) c.launcher = std::make_unique<Worker>("emu-launch-r" + std::to_string(c.R->g));
  if (P.o->workload.net_profiler == NetProfiler::kSocket)
    c.sock_helper = std::make_unique<Worker>("emu-sock-r" + std::to_string(c.R->g));
}

// commFree's profiler part: proxy teardown, then finalize, then Unload.
void teardown_rank(Proc& P, Rank& R) {
  for (auto& c : R.comms) {
    c->launcher.reset();
    c->sock_helper.reset();
  }
  for (auto& c : R.comms) c->progress.reset();  // the last owner joins the progress thread
  // 2.31+: the profiler thread finishes the pass in flight (its queue) before finalize.
  for (auto& c : R.comms) c->profiler.reset();
  for (auto& c : R.comms) {
    if (!c->inited) continue;
    if (!P.live()) continue;  // 2.23-2.27 after an init failure: never finalized, never unloaded
    if (P.minor <= 27 || c->ctx != nullptr) P.binding->finalize(c->ctx);
    P.loader->release();
    if (c->unload_twice) P.loader->release();
  }
}

void rank_main(Proc& P, Rank& R, std::latch* init_latch, std::latch* inited) {
  pthread_setname_np(pthread_self(), ("emu-app-r" + std::to_string(R.g)).c_str());
  if (init_latch != nullptr) {
    init_latch->arrive_and_wait();  // every rank thread calls init at the same instant
    for (auto& c : R.comms) init_plugin(P, *c);
    inited->arrive_and_wait();      // no comm runs before every init returned
    for (auto& c : R.comms) start_workers(P, *c);
  }
  const int n = P.op_limit >= 0 ? std::min<int>(P.op_limit, static_cast<int>(P.steps.size()))
                                : static_cast<int>(P.steps.size());
  for (int i = 0; i < n && !R.stopped; ++i) {
    // Pairs with the store in hang_action(): the killed process's threads stop where they are.
    if (P.hang.kill_pending.load(std::memory_order_relaxed)) {
      R.stopped = true;
      break;
    }
    exec_step(P, R, P.steps[static_cast<size_t>(i)], i);
  }
  for (auto& c : R.comms)
    if (c->launcher) c->launcher->drain();
  P.cudacb->drain();
  for (auto& c : R.comms)
    if (c->progress) c->progress->drain();
  // Blocked in a planted hang: everything it issued has been delivered; its
  // comms are never finalized (that would let the plugin complete the open ops).
  if (R.stopped) return;
  teardown_rank(P, R);
}

void add_counters(Summary& s, const Binding& b) {
  const auto& k = b.counters();
  for (int i = 0; i < kNumTypes; ++i) {
    const std::string n = type_name(1ull << i);
    const uint64_t st = k.start[i].load(std::memory_order_relaxed);
    const uint64_t sp = k.stop[i].load(std::memory_order_relaxed);
    const uint64_t rc = k.record[i].load(std::memory_order_relaxed);
    if (st) s.callbacks[n + ".start"] += st;
    if (sp) s.callbacks[n + ".stop"] += sp;
    if (rc) s.callbacks[n + ".record"] += rc;
    s.total_callbacks += st + sp + rc;
  }
  s.callbacks["init"] += k.init.load(std::memory_order_relaxed);
  s.callbacks["finalize"] += k.finalize.load(std::memory_order_relaxed);
  s.total_callbacks += k.init.load(std::memory_order_relaxed) + k.finalize.load(std::memory_order_relaxed);
}

}  // namespace

void comm_layout(const CommSpec& s, int world, int g, int* group, int* rank, std::vector<int>* members) {
  const int groups = world / s.nranks;
  members->clear();
  if (s.strided) {
    *group = g % groups;
    *rank = g / groups;
    for (int r = 0; r < s.nranks; ++r) members->push_back(*group + r * groups);
  } else {
    *group = g / s.nranks;
    *rank = g % s.nranks;
    for (int r = 0; r < s.nranks; ++r) members->push_back(*group * s.nranks + r);
  }
}

RunResult run(const Options& o) {
  RunResult res;
  try {
    res = run_impl(o);
  } catch (const std::exception& e) {
    res.ok = false;
    res.error = e.what();
  }
  return res;
}

RunResult run_impl(const Options& o) {
  RunResult res;
  Proc P;
  P.o = &o;
  P.v = o.nccl;
  P.minor = o.nccl.minor;
  if (const char* agv = std::getenv("NCCL_ALLGATHERV_ENABLE"); agv != nullptr && *agv != '\0' && std::strtol(agv, nullptr, 0) == 0)
    P.bcast_as_allgatherv = false;
  if (o.nccl.major != 2 || o.nccl.minor < 23 || o.nccl.minor > 32)
    throw std::runtime_error("unsupported NCCL version " + o.nccl.str() + " (supported: 2.23 .. 2.32)");
  unsigned avail = 0;
  if (!o.plugin_path.empty()) {
    std::string err;
    if (!probe_plugin(o.plugin_path, &avail, &err)) throw std::runtime_error(err);
  } else {
    avail = avail_mask_of(o.tables);
    if (avail == 0) throw std::runtime_error("no plugin given (neither a path nor in-process tables)");
  }
  if (select_abi(o.nccl, avail) == 0)
    throw std::runtime_error("plugin exports no ncclProfiler_vN that NCCL " + o.nccl.str() + " would bind (it tries v" +
                             std::to_string(o.nccl.native_abi()) + " down to v1)");
  validate(o, &P.world);
  P.nodes = o.workload.nodes;
  for (Fault f : o.faults) P.faults.set(static_cast<size_t>(f));
  P.steps = expand_steps(o);
  std::vector<int> gs = o.world_ranks;
  if (gs.empty())
    for (int g = 0; g < P.world; ++g) gs.push_back(g);
  resolve_hang(P, gs);
  Loader loader(o.plugin_path, o.tables);
  P.loader = &loader;
  P.foreign_page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (P.foreign_page == MAP_FAILED) P.foreign_page = reinterpret_cast<void*>(uintptr_t{0xdead0000});
  P.cudacb = std::make_unique<Worker>("emu-cudacb");
  if (o.start_at_real_ns > now_real_ns()) {
    timespec ts{static_cast<time_t>(o.start_at_real_ns / 1000000000ull),
                static_cast<long>(o.start_at_real_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  P.t0_mono_ns = now_mono_ns();
  P.t0_real_ns = o.start_at_real_ns != 0 ? o.start_at_real_ns : now_real_ns();


  const int phases = P.fault(Fault::kReload) ? 2 : 1;
  for (int phase = 0; phase < phases; ++phase) {
    P.op_limit = phase == 0 ? -1 : 5;
    PluginTables t;
    std::string err;
    if (!loader.acquire(&t, &err)) throw std::runtime_error(err);  // our own reference while comms init
    P.binding = std::make_unique<Binding>(o.nccl, t);
    res.bound_abi = P.binding->bound();
    res.bound_symbol = "ncclProfiler_v" + std::to_string(res.bound_abi);
    res.summary.plugin_name = P.binding->plugin_name();
    P.disabled.store(false, std::memory_order_relaxed);
    P.ranks.clear();
    for (int g : gs) {
      auto R = std::make_unique<Rank>();
      R->g = g;
      build_rank(P, *R);
      P.ranks.push_back(std::move(R));
    }
    // Marks synchronise the process's ranks; a planted hang stops ranks where
    // they are, so it gets no marks.
    P.iteration_sync.reset();
    if (o.workload.mark_every > 0 && !P.hang.on)
      P.iteration_sync = std::make_unique<std::barrier<>>(static_cast<std::ptrdiff_t>(P.ranks.size()));
    const bool concurrent = P.fault(Fault::kConcurrentInit);
    std::latch init_latch(static_cast<std::ptrdiff_t>(P.ranks.size()));
    std::latch inited(static_cast<std::ptrdiff_t>(P.ranks.size()));
    if (!concurrent) {
      for (auto& R : P.ranks)
        for (auto& c : R->comms) init_plugin(P, *c);  // like one thread calling ncclCommInitRank per GPU
      for (auto& R : P.ranks)
        for (auto& c : R->comms) start_workers(P, *c);
    }
    std::vector<std::thread> th;
    for (auto& R : P.ranks)
      th.emplace_back(rank_main, std::ref(P), std::ref(*R), concurrent ? &init_latch : nullptr,
                      concurrent ? &inited : nullptr);
    // Wait until every init has run before dropping our reference, so the
    // library is dlclosed by the last comm's finalize (or here, if later).
    if (!concurrent) loader.release();
    for (auto& x : th) x.join();
    if (concurrent) loader.release();
    P.cudacb->drain();
    add_counters(res.summary, *P.binding);
    for (auto& R : P.ranks)
      for (auto& tr : R->truth) res.truth.push_back(std::move(*tr));
  }
  P.cudacb.reset();
  res.summary.bound_abi = res.bound_abi;
  res.summary.callbacks["dlopen"] = static_cast<uint64_t>(loader.loads());
  res.summary.callbacks["dlclose"] = static_cast<uint64_t>(loader.unloads());
  for (const TruthOp& t : res.truth) ++res.summary.ops_by_comm_kind[t.comm + "/" + t.kind];
  res.summary.wall_s = static_cast<double>(now_mono_ns() - P.t0_mono_ns) / 1e9;
  res.planted = o.workload.truth;
  res.world = P.world;
  res.nodes = std::max(1, P.nodes);
  finish_hang(P, loader, res);  // returns only with HangExit::kReturn or when no rank of ours hung
  if (P.foreign_page != reinterpret_cast<void*>(uintptr_t{0xdead0000})) munmap(P.foreign_page, 4096);
  res.ok = true;
  return res;
}

}  // namespace ni::emu
