// Planted hangs and desyncs (truth.hang): for each kind, the exact events the
// plugin receives for the hang op on the culprit and on another rank of the
// group, what never comes, the truth line, and the validation errors. Run
// in-process with HangExit::kReturn (the process is not ended).
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "tests/emu/helpers.h"

namespace ni::emu_test {
namespace {

// 8 ranks on 2 nodes: "tp" (4 contiguous ranks, one node: NVLink) and "dp"
// (2 strided ranks, g and g+4: network). The hang is at dp op 1 of the group
// {1, 5}; world rank 5 (dp rank 1) is the culprit, world rank 1 the other.
constexpr int kCulprit = 5, kOther = 1, kBystander = 0;

Workload job(HangKind kind) {
  Workload w;
  w.world = 8;
  w.nodes = 2;
  w.net_profiler = NetProfiler::kIb;
  CommSpec tp;
  tp.name = "tp";
  tp.nranks = 4;
  tp.nchannels = 4;
  CommSpec dp;
  dp.name = "dp";
  dp.nranks = 2;
  dp.strided = true;
  dp.nchannels = 2;
  w.comms = {tp, dp};
  auto add = [&](const char* comm, const char* func, uint64_t bytes) {
    OpSpec o = op(func, bytes);
    o.comm = comm;
    w.program.push_back(solo(o));
  };
  add("tp", "AllReduce", 1 << 20);  // tp 0
  add("dp", "AllReduce", 1 << 20);  // dp 0
  add("tp", "AllGather", 1 << 18);  // tp 1
  add("dp", "AllReduce", 4 << 20);  // dp 1: the hang op (AllReduce seq 1)
  add("tp", "AllReduce", 1 << 20);  // tp 2
  add("dp", "AllGather", 1 << 20);  // dp 2
  w.truth.hang.kind = kind;
  w.truth.hang.world_rank = kCulprit;
  w.truth.hang.comm = "dp";
  w.truth.hang.at_op = 1;
  w.truth.hang.hold_ms = 100;
  return w;
}

RunResult go_hang(const Workload& w, std::vector<int> ranks = {}, int hold_ms = 0,
                  const std::string& ver = "2.28") {
  Options o;
  o.nccl = *NcclVersion::parse(ver);
  o.tables = all_tables();
  o.workload = w;
  o.world_ranks = std::move(ranks);
  o.pace = Pace::kNone;
  o.hang_exit = HangExit::kReturn;
  o.hang_hold_ms = hold_ms;
  RunResult r = run(o);
  EXPECT_TRUE(r.ok) << r.error;
  return r;
}

std::string app(int g) {
  return "emu-app-r" + std::to_string(g);
}

// Coll starts issued by world rank g's app thread.
std::vector<Call> colls_of(const std::vector<Call>& cs, int g) {
  std::vector<Call> out;
  for (const Call& c : starts(cs, kColl))
    if (c.thread == app(g)) out.push_back(c);
  return out;
}

// World rank g's Coll start of the hang op (a dp op: 2 channels) with this function and seq.
std::optional<Call> hang_coll(const std::vector<Call>& cs, int g, const std::string& func, uint64_t seq) {
  for (const Call& c : colls_of(cs, g))
    if (c.func == func && c.seq == seq && c.nchannels == 2) return c;
  return std::nullopt;
}

std::vector<Call> children(const std::vector<Call>& cs, uint64_t type, void* parent) {
  std::vector<Call> out;
  for (const Call& c : starts(cs, type))
    if (c.parent == parent) out.push_back(c);
  return out;
}

bool stopped(const std::vector<Call>& cs, void* h) {
  return stop_call(cs, h) != nullptr;
}

// Every call on `thread` after global order `after`, as "start <type>", "record <state>", "stop", "finalize".
std::vector<std::string> sequence(const std::vector<Call>& cs, const std::string& thread, int after) {
  std::vector<std::string> out;
  for (const Call& c : cs) {
    if (c.thread != thread || c.order <= after) continue;
    switch (c.kind) {
      case Kind::kStart:
        out.push_back("start " + std::to_string(c.type));
        break;
      case Kind::kRecord:
        out.push_back("record " + std::to_string(c.state));
        break;
      case Kind::kStop:
        out.push_back("stop");
        break;
      case Kind::kFinalize:
        out.push_back("finalize");
        break;
      case Kind::kInit:
        out.push_back("init");
        break;
    }
  }
  return out;
}
std::string st(uint64_t type) {
  return "start " + std::to_string(type);
}
std::string rec(int state) {
  return "record " + std::to_string(state);
}

// The app thread's calls for the hang op (2.28, §8.1), from its GroupApi on:
// the last calls that thread ever makes (no finalize).
const std::vector<std::string> kAppSeq = {st(kGroupApi),
                                          rec(kGroupStartApiStop),
                                          st(kCollApi),
                                          "stop",
                                          rec(kGroupEndApiStart),
                                          st(kKernelLaunch),
                                          "stop",
                                          st(kGroup),
                                          st(kColl),
                                          "stop",
                                          "stop",
                                          "stop"};

int last_group_api(const std::vector<Call>& cs, int g) {
  int o = -1;
  for (const Call& c : starts(cs, kGroupApi))
    if (c.thread == app(g)) o = c.order;
  return o - 1;
}

// The hang op's KernelCh events on one rank: `n` started, none stopped.
void expect_kernels_started_never_stopped(const std::vector<Call>& cs, const Call& coll, size_t n) {
  auto kc = children(cs, kKernelCh, coll.handle);
  EXPECT_EQ(kc.size(), n);
  for (const Call& k : kc)
    EXPECT_TRUE(on(cs, k.handle).empty()) << "KernelCh " << k.channel << " got a stop/record";
}

// A stuck ProxyOp: started, InProgress (19) only, never stopped; its first
// step posted with `want` states, never stopped; no later step, no NetPlugin.
void expect_stuck_op(const std::vector<Call>& cs, const Call& pop, const std::vector<int>& want) {
  EXPECT_EQ(states_of(cs, pop.handle), std::vector<int>{kProxyOpInProgress});
  EXPECT_FALSE(stopped(cs, pop.handle));
  auto st = children(cs, kProxyStep, pop.handle);
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].step, 0);
  EXPECT_EQ(states_of(cs, st[0].handle), want);
  EXPECT_FALSE(stopped(cs, st[0].handle));
  EXPECT_TRUE(children(cs, kNetPlugin, st[0].handle).empty());
}

// A ProxyOp that completed: every step stopped, the op stopped.
void expect_complete_op(const std::vector<Call>& cs, const Call& pop) {
  EXPECT_TRUE(stopped(cs, pop.handle));
  auto st = children(cs, kProxyStep, pop.handle);
  ASSERT_FALSE(st.empty());
  for (const Call& s : st) {
    EXPECT_TRUE(stopped(cs, s.handle));
    EXPECT_FALSE(children(cs, kNetPlugin, s.handle).empty());
  }
}

const TruthOp* truth_op(const RunResult& r, int g, const std::string& comm, uint64_t seq,
                        const std::string& func) {
  for (const TruthOp& t : r.truth)
    if (t.world_rank == g && t.comm == comm && t.seq == seq && t.func == func) return &t;
  return nullptr;
}
int truth_ops_of(const RunResult& r, int g) {
  return static_cast<int>(
      std::count_if(r.truth.begin(), r.truth.end(), [&](const TruthOp& t) { return t.world_rank == g; }));
}
bool has_hang_fault(const TruthOp& t) {
  return std::find(t.faults.begin(), t.faults.end(), "hang") != t.faults.end();
}

// The "hang" line as write_truth_jsonl writes it.
nlohmann::json hang_line(const RunResult& r) {
  std::stringstream ss;
  write_truth_jsonl(ss, r);
  std::string line;
  nlohmann::json out;
  int n = 0;
  while (std::getline(ss, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "hang") {
      out = j;
      ++n;
    }
  }
  EXPECT_EQ(n, 1);
  return out;
}

uint64_t dp1_hash(const RunResult& r) {
  for (const TruthOp& t : r.truth)
    if (t.comm == "dp" && t.comm_index == 1) return t.comm_hash;
  return 0;
}

std::string hex(uint64_t h) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(h));
  return b;
}

TEST_F(Emu, HangStopIssuing) {
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = go_hang(job(HangKind::kStopIssuing), {}, -1);  // the workload's hold_ms (100)
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  auto cs = without_ctrl(ni::rec::calls());
  // The culprit issued tp 0, dp 0, tp 1 and nothing from dp 1 on: no Coll, no CollApi.
  auto mine = colls_of(cs, kCulprit);
  ASSERT_EQ(mine.size(), 3u);
  EXPECT_EQ(mine.back().func, "AllGather");
  int apis = 0;
  for (const Call& c : starts(cs, kCollApi)) apis += c.thread == app(kCulprit);
  EXPECT_EQ(apis, 3);
  EXPECT_EQ(sequence(cs, app(kOther), last_group_api(cs, kOther)), kAppSeq);
  // The other rank issued dp 1 up to its KernelCh starts, and nothing after.
  ASSERT_EQ(colls_of(cs, kOther).size(), 4u);
  const auto coll = hang_coll(cs, kOther, "AllReduce", 1);
  ASSERT_TRUE(coll);
  const Call c1 = *coll;
  EXPECT_TRUE(stopped(cs, c1.handle));  // the host-side Coll stop still comes
  expect_kernels_started_never_stopped(cs, c1, 2);
  auto pops = children(cs, kProxyOp, c1.handle);
  ASSERT_EQ(pops.size(), 4u);  // 2 channels x send/recv
  for (const Call& p : pops)
    expect_stuck_op(cs, p,
                    p.is_send ? std::vector<int>{kProxyStepSendGPUWait, kProxyStepSendPeerWait}
                              : std::vector<int>{kProxyStepRecvWait});
  // A rank outside the group runs to the end: all 6 ops, every KernelCh stopped.
  ASSERT_EQ(colls_of(cs, kBystander).size(), 6u);
  for (const Call& c : colls_of(cs, kBystander))
    for (const Call& k : children(cs, kKernelCh, c.handle)) EXPECT_TRUE(stopped(cs, k.handle));
  // Finalize: 16 comms, less the 4 of ranks 1 and 5.
  EXPECT_EQ(count_kind(cs, Kind::kFinalize), 12);

  EXPECT_EQ(truth_ops_of(r, kBystander), 6);
  EXPECT_EQ(truth_ops_of(r, kOther), 4);
  EXPECT_EQ(truth_ops_of(r, kCulprit), 3);
  const TruthOp* t = truth_op(r, kOther, "dp", 1, "AllReduce");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(has_hang_fault(*t));
  EXPECT_TRUE(t->kernel_events);
  EXPECT_EQ(t->ch_stop_ptimer, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(truth_op(r, kCulprit, "dp", 1, "AllReduce"), nullptr);

  ASSERT_TRUE(r.hang);
  const nlohmann::json want = {{"type", "hang"},
                               {"kind", "stop_issuing"},
                               {"comm", "dp"},
                               {"comm_hash", hex(dp1_hash(r))},
                               {"group", 1},
                               {"at_op", 1},
                               {"func", "AllReduce"},
                               {"seq", 1},
                               {"culprit_world_ranks", {5}},
                               {"culprit_comm_ranks", {1}},
                               {"group_world_ranks", {1, 5}},
                               {"end", "kill"}};
  EXPECT_EQ(hang_line(r), want);
}

TEST_F(Emu, HangKernelStuck) {
  RunResult r = go_hang(job(HangKind::kKernelStuck));
  auto cs = without_ctrl(ni::rec::calls());
  // Culprit: Coll start and stop, its kernel never runs (no KernelCh), its
  // proxy posted: sends wait for GPU data (8), receives for data (10).
  ASSERT_EQ(colls_of(cs, kCulprit).size(), 4u);
  const auto cp = hang_coll(cs, kCulprit, "AllReduce", 1);
  ASSERT_TRUE(cp);
  const Call cr = *cp;
  EXPECT_TRUE(stopped(cs, cr.handle));
  EXPECT_TRUE(children(cs, kKernelCh, cr.handle).empty());
  auto pops = children(cs, kProxyOp, cr.handle);
  ASSERT_EQ(pops.size(), 4u);
  for (const Call& p : pops)
    expect_stuck_op(
        cs, p, p.is_send ? std::vector<int>{kProxyStepSendGPUWait} : std::vector<int>{kProxyStepRecvWait});
  // Other: KernelCh started, never stopped.
  ASSERT_EQ(colls_of(cs, kOther).size(), 4u);
  const Call co = hang_coll(cs, kOther, "AllReduce", 1).value();
  expect_kernels_started_never_stopped(cs, co, 2);
  for (const Call& p : children(cs, kProxyOp, co.handle))
    expect_stuck_op(cs, p,
                    p.is_send ? std::vector<int>{kProxyStepSendGPUWait, kProxyStepSendPeerWait}
                              : std::vector<int>{kProxyStepRecvWait});
  // Exact sequences: the app threads' last calls, then each rank's dp
  // progress thread from the hang op's first ProxyOp on (ProxyCtrl left out;
  // the earlier op's proxy work may still run after the hang op's Coll start):
  // ProxyOps (send ch 0, 1, recv ch 0, 1), KernelCh starts, 19s, first steps.
  EXPECT_EQ(sequence(cs, app(kCulprit), last_group_api(cs, kCulprit)), kAppSeq);
  EXPECT_EQ(sequence(cs, app(kOther), last_group_api(cs, kOther)), kAppSeq);
  const std::vector<std::string> prog_culprit = {st(kProxyOp),
                                                 st(kProxyOp),
                                                 st(kProxyOp),
                                                 st(kProxyOp),
                                                 rec(kProxyOpInProgress),
                                                 rec(kProxyOpInProgress),
                                                 rec(kProxyOpInProgress),
                                                 rec(kProxyOpInProgress),
                                                 st(kProxyStep),
                                                 rec(kProxyStepSendGPUWait),
                                                 st(kProxyStep),
                                                 rec(kProxyStepSendGPUWait),
                                                 st(kProxyStep),
                                                 rec(kProxyStepRecvWait),
                                                 st(kProxyStep),
                                                 rec(kProxyStepRecvWait)};
  EXPECT_EQ(sequence(cs, "emu-prog-dp5", children(cs, kProxyOp, cr.handle).at(0).order - 1), prog_culprit);
  const std::vector<std::string> prog_other = {st(kProxyOp),
                                               st(kProxyOp),
                                               st(kProxyOp),
                                               st(kProxyOp),
                                               st(kKernelCh),
                                               st(kKernelCh),
                                               rec(kProxyOpInProgress),
                                               rec(kProxyOpInProgress),
                                               rec(kProxyOpInProgress),
                                               rec(kProxyOpInProgress),
                                               st(kProxyStep),
                                               rec(kProxyStepSendGPUWait),
                                               rec(kProxyStepSendPeerWait),
                                               st(kProxyStep),
                                               rec(kProxyStepSendGPUWait),
                                               rec(kProxyStepSendPeerWait),
                                               st(kProxyStep),
                                               rec(kProxyStepRecvWait),
                                               st(kProxyStep),
                                               rec(kProxyStepRecvWait)};
  EXPECT_EQ(sequence(cs, "emu-prog-dp1", children(cs, kProxyOp, co.handle).at(0).order - 1), prog_other);

  const TruthOp* t = truth_op(r, kCulprit, "dp", 1, "AllReduce");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(has_hang_fault(*t));
  EXPECT_FALSE(t->kernel_events);
  EXPECT_EQ(t->ch_start_ptimer, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(truth_ops_of(r, kCulprit), 4);
  const nlohmann::json h = hang_line(r);
  EXPECT_EQ(h["kind"], "kernel_stuck");
  EXPECT_EQ(h["seq"], 1);
  EXPECT_EQ(h["culprit_world_ranks"], nlohmann::json({5}));
  EXPECT_FALSE(h.contains("peer_comm_rank"));
  EXPECT_FALSE(h.contains("desync_func"));
}

TEST_F(Emu, HangRecvStuck) {
  RunResult r = go_hang(job(HangKind::kRecvStuck));
  auto cs = without_ctrl(ni::rec::calls());
  const Call cr = hang_coll(cs, kCulprit, "AllReduce", 1).value();
  const Call co = hang_coll(cs, kOther, "AllReduce", 1).value();
  expect_kernels_started_never_stopped(cs, cr, 2);
  expect_kernels_started_never_stopped(cs, co, 2);
  // Culprit (dp rank 1): its receives from dp rank 0 are posted and never
  // complete; its sends complete.
  auto pr = children(cs, kProxyOp, cr.handle);
  ASSERT_EQ(pr.size(), 4u);
  for (const Call& p : pr) {
    EXPECT_EQ(p.peer, 0);
    if (p.is_send)
      expect_complete_op(cs, p);
    else
      expect_stuck_op(cs, p, {kProxyStepRecvWait});
  }
  // Peer (dp rank 0): its sends to the culprit never complete; its receives do.
  auto po = children(cs, kProxyOp, co.handle);
  ASSERT_EQ(po.size(), 4u);
  for (const Call& p : po) {
    EXPECT_EQ(p.peer, 1);
    if (p.is_send)
      expect_stuck_op(cs, p, {kProxyStepSendGPUWait, kProxyStepSendPeerWait});
    else
      expect_complete_op(cs, p);
  }
  EXPECT_EQ(colls_of(cs, kCulprit).size(), 4u);
  EXPECT_EQ(colls_of(cs, kOther).size(), 4u);
  const nlohmann::json h = hang_line(r);
  EXPECT_EQ(h["kind"], "recv_stuck");
  EXPECT_EQ(h["peer_comm_rank"], 0);
  EXPECT_EQ(h["culprit_comm_ranks"], nlohmann::json({1}));
}

TEST_F(Emu, HangDesync) {
  RunResult r = go_hang(job(HangKind::kDesync));
  auto cs = without_ctrl(ni::rec::calls());
  // The culprit issues an AllGather of the same count (in bytes on the
  // descriptor) with its own AllGather seqNumber (0); the other the AllReduce (seq 1).
  const auto mine = colls_of(cs, kCulprit);
  ASSERT_EQ(mine.size(), 4u);
  const Call cr = mine.back();
  EXPECT_EQ(cr.func, "AllGather");
  EXPECT_EQ(cr.seq, 0u);
  EXPECT_EQ(cr.count, 4u << 20);
  const Call co = hang_coll(cs, kOther, "AllReduce", 1).value();
  EXPECT_EQ(co.count, (4u << 20) / 4);
  expect_kernels_started_never_stopped(cs, cr, 2);
  expect_kernels_started_never_stopped(cs, co, 2);
  EXPECT_EQ(colls_of(cs, kOther).size(), 4u);
  const TruthOp* t = truth_op(r, kCulprit, "dp", 0, "AllGather");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(has_hang_fault(*t));
  const nlohmann::json h = hang_line(r);
  EXPECT_EQ(h["kind"], "desync");
  EXPECT_EQ(h["func"], "AllReduce");
  EXPECT_EQ(h["seq"], 1);
  EXPECT_EQ(h["desync_func"], "AllGather");
}

TEST_F(Emu, HangKilledTwoProcesses) {
  Workload w = job(HangKind::kKilled);
  w.truth.hang.end = HangEnd::kExit;
  // The process of node 1 holds the culprit: it dies just before the culprit
  // would issue dp 1 (always SIGKILL, whatever "end" says).
  RunResult a = go_hang(w, {4, 5, 6, 7});
  auto cs = without_ctrl(ni::rec::calls());
  EXPECT_EQ(colls_of(cs, kCulprit).size(), 3u);
  EXPECT_EQ(truth_op(a, kCulprit, "dp", 1, "AllReduce"), nullptr);
  EXPECT_LE(count_kind(cs, Kind::kFinalize), 6);  // rank 5 never finalizes; the others maybe
  nlohmann::json h = hang_line(a);
  EXPECT_EQ(h["kind"], "killed");
  EXPECT_EQ(h["culprit_world_ranks"], nlohmann::json({5}));
  EXPECT_EQ(h["end"], "kill");
  EXPECT_EQ(h["seq"], 1);
  // The process of node 0: world rank 1 blocks in dp 1 as with stop_issuing.
  ni::rec::reset();
  RunResult b = go_hang(w, {0, 1, 2, 3});
  cs = without_ctrl(ni::rec::calls());
  ASSERT_EQ(colls_of(cs, kOther).size(), 4u);
  expect_kernels_started_never_stopped(cs, hang_coll(cs, kOther, "AllReduce", 1).value(), 2);
  EXPECT_EQ(colls_of(cs, kBystander).size(), 6u);
  h = hang_line(b);
  EXPECT_EQ(h["culprit_world_ranks"], nlohmann::json({5}));
  EXPECT_EQ(h["culprit_comm_ranks"], nlohmann::json({1}));
  EXPECT_EQ(h["end"], "exit");
  EXPECT_EQ(h["comm_hash"], hex(dp1_hash(a)));
}

TEST_F(Emu, HangOnlyInProcessesOfTheGroup) {
  // A process holding only ranks outside the group finishes normally: no hang line.
  RunResult r = go_hang(job(HangKind::kKernelStuck), {0, 2, 3});
  EXPECT_FALSE(r.hang);
  EXPECT_EQ(count_kind(ni::rec::calls(), Kind::kFinalize), 6);
}

TEST_F(Emu, HangOlderReleases) {
  // 2.26: KernelCh without pTimer still starts and never stops; 2.23: no
  // KernelCh, the hang shows as proxy work that never completes.
  RunResult r = go_hang(job(HangKind::kStopIssuing), {}, 0, "2.26");
  auto cs = without_ctrl(ni::rec::calls());
  expect_kernels_started_never_stopped(cs, hang_coll(cs, kOther, "AllReduce", 1).value(), 2);
  EXPECT_EQ(hang_line(r)["seq"], 1);
  ni::rec::reset();
  r = go_hang(job(HangKind::kStopIssuing), {}, 0, "2.23");
  cs = without_ctrl(ni::rec::calls());
  std::optional<Call> c;  // v1 carries the function as a code
  for (const Call& x : colls_of(cs, kOther))
    if (x.func_code == kFuncAllReduce && x.seq == 1 && x.nchannels == 2) c = x;
  ASSERT_TRUE(c);
  EXPECT_TRUE(starts(cs, kKernelCh).empty());
  for (const Call& p : children(cs, kProxyOp, c->handle)) EXPECT_FALSE(stopped(cs, p.handle));
  EXPECT_EQ(hang_line(r)["seq"], 1);
}

std::string run_error(const Workload& w) {
  Options o;
  o.nccl = *NcclVersion::parse("2.28");
  o.tables = all_tables();
  o.workload = w;
  o.pace = Pace::kNone;
  o.hang_exit = HangExit::kReturn;
  RunResult r = run(o);
  EXPECT_FALSE(r.ok);
  return r.error;
}

TEST_F(Emu, HangRejectedAtRunStart) {
  Workload w = job(HangKind::kStopIssuing);
  w.program[3].ops[0].func = "SendRecv";
  EXPECT_NE(run_error(w).find("is a SendRecv"), std::string::npos);
  w = job(HangKind::kStopIssuing);
  w.program[3] = group({w.program[3].ops[0], w.program[4].ops[0]});
  EXPECT_NE(run_error(w).find("ncclGroupStart/End"), std::string::npos);
  w = job(HangKind::kStopIssuing);
  w.truth.hang.at_op = 3;
  EXPECT_NE(run_error(w).find("has 3 ops"), std::string::npos);
  w = job(HangKind::kRecvStuck);
  w.net_profiler = NetProfiler::kNone;
  EXPECT_NE(run_error(w).find("needs network profiling"), std::string::npos);
  w = job(HangKind::kRecvStuck);
  w.truth.hang.comm = "tp";
  EXPECT_NE(run_error(w).find("is on one node"), std::string::npos);
  w = job(HangKind::kRecvStuck);
  w.truth.hang.peer = 1;
  EXPECT_NE(run_error(w).find("ring predecessor"), std::string::npos);
  w = job(HangKind::kDesync);
  w.truth.hang.func = "AllReduce";
  EXPECT_NE(run_error(w).find("is what the group issues"), std::string::npos);
  w = job(HangKind::kStopIssuing);
  w.truth.hang.comm = "nope";
  EXPECT_NE(run_error(w).find("not a comm"), std::string::npos);
}

TEST(HangParse, KnobAndErrors) {
  const std::string base =
      R"({"world": 8, "nodes": 2, "comms": [{"name": "dp", "nranks": 2, "layout": "strided"}],
          "program": [{"comm": "dp", "func": "AllReduce", "bytes": 4096}], "truth": {"hang": )";
  Workload w = parse_workload_json(
      base +
      R"({"kind": "recv_stuck", "world_rank": 5, "comm": "dp", "at_op": 0, "peer": 0, "hold_ms": 150, "end": "exit"}}})");
  EXPECT_EQ(w.truth.hang.kind, HangKind::kRecvStuck);
  EXPECT_EQ(w.truth.hang.world_rank, 5);
  EXPECT_EQ(w.truth.hang.comm, "dp");
  EXPECT_EQ(w.truth.hang.at_op, 0);
  EXPECT_EQ(w.truth.hang.peer, 0);
  EXPECT_EQ(w.truth.hang.hold_ms, 150);
  EXPECT_EQ(w.truth.hang.end, HangEnd::kExit);
  const TruthKnobs::Hang d =
      parse_hang_json(R"({"kind": "desync", "world_rank": 1, "comm": "dp", "at_op": 2})");
  EXPECT_EQ(d.func, "");
  EXPECT_EQ(d.hold_ms, 2000);
  EXPECT_EQ(d.end, HangEnd::kKill);
  auto err = [&](const std::string& hang) {
    try {
      parse_workload_json(base + hang + "}}");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err(R"({"kind": "stuck", "world_rank": 1, "comm": "dp", "at_op": 0})").find("kind must be"),
            std::string::npos);
  EXPECT_NE(
      err(R"({"kind": "desync", "world_rank": 1, "comm": "dp", "at_op": 0, "x": 1})").find("unknown key 'x'"),
      std::string::npos);
  EXPECT_NE(err(R"({"kind": "desync", "world_rank": 1, "at_op": 0})").find("'comm' is required"),
            std::string::npos);
  EXPECT_NE(err(R"({"kind": "desync", "world_rank": 1, "comm": "dp", "at_op": 0, "end": "stop"})")
                .find("end must be"),
            std::string::npos);
  EXPECT_NE(err(R"({"kind": "desync", "world_rank": 1, "comm": "dp", "at_op": 0, "func": "Send"})")
                .find("func must be"),
            std::string::npos);
  EXPECT_NE(err(R"({"kind": "killed", "world_rank": 1, "comm": "dp", "at_op": 0, "func": "AllGather"})")
                .find("desync only"),
            std::string::npos);
  EXPECT_NE(err(R"({"kind": "killed", "world_rank": 1, "comm": "dp", "at_op": 0, "peer": 0})")
                .find("recv_stuck only"),
            std::string::npos);
  EXPECT_NE(err(R"({"kind": "killed", "world_rank": 1, "comm": "dp", "at_op": -1})").find(">= 0"),
            std::string::npos);
  for (HangKind k : {HangKind::kStopIssuing, HangKind::kKernelStuck, HangKind::kRecvStuck, HangKind::kDesync,
                     HangKind::kKilled})
    EXPECT_EQ(hang_kind_from_name(hang_kind_name(k)), k);
}

}  // namespace
}  // namespace ni::emu_test
