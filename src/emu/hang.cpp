// A planted hang or desync (TruthKnobs::Hang, docs/emulator.md "Hangs"):
// validation against the job, what each rank of the hung group does at the
// hang op, and how a process whose ranks blocked ends (hold, truth, SIGKILL
// or _exit). Every process knows the whole deterministic program, so each
// decides locally which of its ranks block; nothing crosses processes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include "src/emu/engine.h"

namespace ni::emu {

using namespace ni::abi;

namespace {

constexpr std::pair<HangKind, const char*> kHangNames[] = {
    {HangKind::kStopIssuing, "stop_issuing"},
    {HangKind::kKernelStuck, "kernel_stuck"},
    {HangKind::kRecvStuck, "recv_stuck"},
    {HangKind::kDesync, "desync"},
    {HangKind::kKilled, "killed"},
};

bool is_coll_func(int f) {
  return f >= kFuncBroadcast && f <= kFuncAllReduce;
}

[[noreturn]] void fail(const std::string& m) {
  throw std::runtime_error("truth.hang: " + m);
}

// The op at per-comm index `at_op` of comm `name` (every group of a comm
// issues the same ops, so the index is the same on every rank of it).
const OpSpec& find_hang_op(const Proc& P, const std::string& name, int at_op) {
  int idx = 0;
  for (const StepSpec& st : P.steps)
    for (const OpSpec& op : st.ops) {
      if (op.comm != name) continue;
      if (op.graph_replays > 0)  // each replay takes a per-comm op index of its own
        fail("comm '" + name + "' has a graph-captured op at or before op " + std::to_string(at_op) +
             "; hangs need ops without graph replays up to the hang");
      if (idx++ != at_op) continue;
      if (st.ops.size() != 1)
        fail("op " + std::to_string(at_op) + " of comm '" + name +
             "' is one of several ops of a ncclGroupStart/End block; hangs support standalone collectives");
      return op;
    }
  fail("comm '" + name + "' has " + std::to_string(idx) + " ops; at_op " + std::to_string(at_op) +
       " is past them");
}

HangTruth make_truth(const Proc& P) {
  const HangPlan& h = P.hang;
  HangTruth t;
  t.kind = hang_kind_name(h.spec.kind);
  t.comm = h.spec.comm;
  t.group = h.group;
  t.at_op = h.spec.at_op;
  t.func = func_name_of(h.func);
  for (const auto& R : P.ranks) {
    const Comm& c = *R->comms[static_cast<size_t>(h.spec_idx)];
    if (c.group != h.group) continue;
    t.comm_hash = c.hash;
    if (R->hang_seen) {
      t.seq = R->hang_seq;
      break;
    }
  }
  std::vector<int> culprits;
  if (h.spec.kind != HangKind::kKilled) {
    culprits.push_back(h.spec.world_rank);
  } else {
    std::set<int> mine;
    for (const auto& R : P.ranks) mine.insert(R->g);
    // The holder knows which ranks died with it; another process assumes the
    // killed process emulated R's whole host (one process per emulated host).
    const int per_node = std::max(1, P.world / std::max(1, P.nodes));
    for (int g : h.members) {
      const bool dead =
          h.holder ? mine.count(g) != 0 : g / per_node == h.spec.world_rank / per_node && mine.count(g) == 0;
      if (dead) culprits.push_back(g);
    }
  }
  for (int g : culprits) {
    t.culprit_world_ranks.push_back(g);
    t.culprit_comm_ranks.push_back(
        static_cast<int>(std::find(h.members.begin(), h.members.end(), g) - h.members.begin()));
  }
  if (h.spec.kind == HangKind::kRecvStuck) t.peer_comm_rank = h.peer;
  if (h.spec.kind == HangKind::kDesync) t.desync_func = func_name_of(h.desync_func);
  t.group_world_ranks = h.members;
  const bool killed_here = h.spec.kind == HangKind::kKilled && h.holder;
  t.end = killed_here || h.spec.end == HangEnd::kKill ? "kill" : "exit";
  return t;
}

}  // namespace

const char* hang_kind_name(HangKind k) {
  for (const auto& [kind, name] : kHangNames)
    if (kind == k) return name;
  return "none";
}

std::optional<HangKind> hang_kind_from_name(std::string_view s) {
  for (const auto& [kind, name] : kHangNames)
    if (s == name) return kind;
  return std::nullopt;
}

void resolve_hang(Proc& P, const std::vector<int>& world_ranks) {
  const Workload& w = P.o->workload;
  const TruthKnobs::Hang& h = w.truth.hang;
  if (h.kind == HangKind::kNone) return;
  int si = -1;
  for (size_t i = 0; i < w.comms.size(); ++i)
    if (w.comms[i].name == h.comm) si = static_cast<int>(i);
  if (si < 0) fail("comm '" + h.comm + "' is not a comm of the workload");
  const CommSpec& cs = w.comms[static_cast<size_t>(si)];
  if (h.world_rank < 0 || h.world_rank >= P.world)
    fail("world_rank " + std::to_string(h.world_rank) + " is outside the world (" + std::to_string(P.world) +
         ")");
  if (h.at_op < 0) fail("at_op must be >= 0");
  if (h.hold_ms < 0) fail("hold_ms must be >= 0");
  if (cs.nranks < 2)
    fail("comm '" + h.comm + "' has one rank: its collectives are local copies, nothing can hang");
  if (P.fault(Fault::kReload) || P.fault(Fault::kGraphReplay))
    fail("cannot be combined with the reload or graph-replay faults");
  HangPlan& hp = P.hang;
  hp.spec = h;
  hp.spec_idx = si;
  comm_layout(cs, P.world, h.world_rank, &hp.group, &hp.culprit_rank, &hp.members);

  const OpSpec& op = find_hang_op(P, cs.name, h.at_op);
  const std::string where = "op " + std::to_string(h.at_op) + " of comm '" + cs.name + "'";
  hp.func = func_code_of(op.func);
  if (!is_coll_func(hp.func))
    fail(where + " is a " + op.func +
         "; hangs support AllReduce, AllGather, ReduceScatter, Broadcast and Reduce");
  if (op.ce) fail(where + " is a CE collective; hangs support kernel collectives");
  if (!op.ranks.empty()) fail(where + " is issued by some ranks only ('ranks'); a hang needs all of them");
  if (op.count == 0) fail(where + " has count 0 (NCCL discards it)");

  const int n = cs.nranks;
  const int pred = (hp.culprit_rank - 1 + n) % n;
  if (h.kind == HangKind::kRecvStuck) {
    if (w.net_profiler == NetProfiler::kNone)
      fail("recv_stuck needs network profiling (net_profiler ib or socket)");
    const int per_node = std::max(1, P.world / std::max(1, P.nodes));
    std::set<int> nodes;
    for (int g : hp.members) nodes.insert(g / per_node);
    if (nodes.size() < 2)
      fail("recv_stuck needs a group spanning nodes; group " + std::to_string(hp.group) + " of comm '" +
           cs.name + "' is on one node (no network transfer)");
    hp.peer = h.peer < 0 ? pred : h.peer;
    if (hp.peer != pred)
      fail("recv_stuck: peer must be comm rank " + std::to_string(pred) +
           ", the culprit's ring predecessor (the emulated rings receive only from it)");
  } else if (h.peer >= 0) {
    fail("peer is for recv_stuck only");
  }
  if (h.kind == HangKind::kDesync) {
    hp.desync_func =
        h.func.empty() ? (hp.func == kFuncAllGather ? kFuncAllReduce : kFuncAllGather) : func_code_of(h.func);
    if (!is_coll_func(hp.desync_func))
      fail("desync func must be AllReduce, AllGather, ReduceScatter, Broadcast or Reduce");
    if (hp.desync_func == hp.func) fail("desync func " + h.func + " is what the group issues at " + where);
  } else if (!h.func.empty()) {
    fail("func is for desync only");
  }
  hp.holder = std::find(world_ranks.begin(), world_ranks.end(), h.world_rank) != world_ranks.end();
  hp.on = true;
}

bool at_hang_op(const Proc& P, const Comm& c) {
  const HangPlan& h = P.hang;
  return h.on && c.spec_idx == h.spec_idx && c.group == h.group && c.op_index == h.spec.at_op;
}

HangAction hang_action(Proc& P, Rank& R, Comm& c) {
  HangPlan& h = P.hang;
  // The planned seqNumber: what the op takes on a rank that issues it. On
  // 2.23-2.25 earlier Coll starts bump it, maybe on the CUDA-callback thread:
  // the drain orders those increments before the relaxed load below.
  P.cudacb->drain();
  R.hang_seen = true;
  R.hang_seq = c.seq[h.func].load(std::memory_order_relaxed);
  const bool culprit = R.g == h.spec.world_rank;
  HangAction a;
  a.func = h.func;
  a.mode = HangMode::kStuck;
  switch (h.spec.kind) {
    case HangKind::kStopIssuing:
      a.issue = !culprit;
      break;
    case HangKind::kKernelStuck:
      if (culprit) a.mode = HangMode::kNoKernel;
      break;
    case HangKind::kRecvStuck:
      a.mode = HangMode::kRecvStuck;
      if (c.rank == h.culprit_rank) a.stuck_recv_peer = h.peer;
      if (c.rank == h.peer) a.stuck_send_peer = h.culprit_rank;
      break;
    case HangKind::kDesync:
      if (culprit) a.func = h.desync_func;
      break;
    case HangKind::kKilled:
      // Every rank of the group in the killed process dies before issuing it.
      a.issue = !h.holder;
      // Pairs with the loads in rank_main(): the process's other app threads stop.
      if (culprit) h.kill_pending.store(true, std::memory_order_relaxed);
      break;
    case HangKind::kNone:
      break;
  }
  return a;
}

void finish_hang(Proc& P, Loader& loader, RunResult& res) {
  const HangPlan& h = P.hang;
  if (!h.on) return;
  bool any = false;
  for (const auto& R : P.ranks) any = any || R->stopped;
  if (!any) return;  // only ranks outside the hung group: they finished normally
  res.hang = make_truth(P);
  const bool killed_here = h.spec.kind == HangKind::kKilled && h.holder;
  const int hold = P.o->hang_hold_ms >= 0 ? P.o->hang_hold_ms : h.spec.hold_ms;
  // Real time even with --pace none: it is what a watchdog waits for, while
  // the plugin's own threads keep running.
  if (!killed_here && hold > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hold));
  if (P.o->hang_exit == HangExit::kReturn) {
    // In-process: join the hung ranks' threads; their comms stay unfinalized
    // and the library loaded (its contexts are still live).
    for (const auto& R : P.ranks)
      if (R->stopped)
        for (auto& c : R->comms) {
          c->launcher.reset();
          c->sock_helper.reset();
          c->progress.reset();
        }
    loader.keep_loaded();
    return;
  }
  if (!P.o->truth_path.empty()) {
    std::ofstream out(P.o->truth_path);
    write_truth_jsonl(out, res);
    out.close();
    if (!out) std::fprintf(stderr, "nccl-emu: error: cannot write truth file %s\n", P.o->truth_path.c_str());
  }
  std::fprintf(stderr, "nccl-emu: %s at op %d of comm %s group %d (world rank %d): %s\n",
               res.hang->kind.c_str(), h.spec.at_op, h.spec.comm.c_str(), h.group, h.spec.world_rank,
               killed_here                    ? "process killed"
               : h.spec.end == HangEnd::kKill ? "hung ranks held, now SIGKILL"
                                              : "hung ranks held, now _exit(0)");
  std::fflush(stdout);
  std::fflush(stderr);
  if (killed_here || h.spec.end == HangEnd::kKill) std::raise(SIGKILL);
  _exit(0);
}

}  // namespace ni::emu
