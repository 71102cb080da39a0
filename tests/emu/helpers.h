// Shared helpers for the emulator tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "src/emu/emu.h"
#include "tests/emu/recorder.h"

namespace ni::emu_test {

using namespace ni::emu;
using namespace ni::abi;
using ni::rec::Call;
using ni::rec::Kind;

inline PluginTables all_tables() {
  PluginTables t;
  t.v1 = ni::rec::v1();
  t.v2 = ni::rec::v2();
  t.v3 = ni::rec::v3();
  t.v4 = ni::rec::v4();
  t.v5 = ni::rec::v5();
  t.v6 = ni::rec::v6();
  t.v7 = ni::rec::v7();
  return t;
}

// One comm "c" of `nranks` ranks spread over `nodes` nodes (contiguous).
inline Workload one_comm(int nranks, int nodes, int nchannels = 8) {
  Workload w;
  w.world = nranks;
  w.nodes = nodes;
  CommSpec c;
  c.name = "c";
  c.nranks = nranks;
  c.nchannels = nchannels;
  w.comms.push_back(c);
  return w;
}

inline OpSpec op(const std::string& func, uint64_t bytes, const std::string& dtype = "ncclFloat32", int nch = 0) {
  OpSpec o;
  o.comm = "c";
  o.func = func;
  o.dtype = dtype;
  const size_t sz = dtype == "ncclFloat32" ? 4 : dtype == "ncclBfloat16" ? 2 : dtype == "ncclFloat64" ? 8 : 1;
  o.count = bytes / sz;
  o.nchannels = nch;
  return o;
}

inline StepSpec solo(const OpSpec& o) {
  StepSpec s;
  s.ops.push_back(o);
  return s;
}
inline StepSpec group(std::vector<OpSpec> ops, int depth = 1) {
  StepSpec s;
  s.group = true;
  s.depth = depth;
  s.ops = std::move(ops);
  return s;
}

inline RunResult go(const std::string& ver, const Workload& w, PluginTables t = all_tables(),
                    std::vector<Fault> faults = {}, std::vector<int> ranks = {0}) {
  Options o;
  o.nccl = *NcclVersion::parse(ver);
  o.tables = t;
  o.workload = w;
  o.faults = std::move(faults);
  o.world_ranks = std::move(ranks);
  o.pace = Pace::kNone;
  o.fault_op = 0;
  RunResult r = run(o);
  EXPECT_TRUE(r.ok) << r.error;
  return r;
}

inline std::vector<Call> starts(const std::vector<Call>& cs, uint64_t type) {
  std::vector<Call> out;
  for (const Call& c : cs)
    if (c.kind == Kind::kStart && c.type == type) out.push_back(c);
  return out;
}
inline int count_kind(const std::vector<Call>& cs, Kind k) {
  return static_cast<int>(std::count_if(cs.begin(), cs.end(), [&](const Call& c) { return c.kind == k; }));
}
// Calls (stop/record) made on a handle.
inline std::vector<Call> on(const std::vector<Call>& cs, void* h) {
  std::vector<Call> out;
  for (const Call& c : cs)
    if (c.kind != Kind::kStart && c.kind != Kind::kInit && c.kind != Kind::kFinalize && c.handle == h) out.push_back(c);
  return out;
}
inline int stops_of(const std::vector<Call>& cs, uint64_t type) {
  int n = 0;
  for (const Call& s : starts(cs, type))
    for (const Call& c : on(cs, s.handle)) n += c.kind == Kind::kStop;
  return n;
}
inline std::vector<int> states_of(const std::vector<Call>& cs, void* h) {
  std::vector<int> out;
  for (const Call& c : on(cs, h))
    if (c.kind == Kind::kRecord) out.push_back(c.state);
  return out;
}
inline const Call* stop_call(const std::vector<Call>& cs, void* h) {
  for (const Call& c : cs)
    if (c.kind == Kind::kStop && c.handle == h) return &c;
  return nullptr;
}
// Events other than ProxyCtrl (the idle progress thread emits sleep/wakeup ProxyCtrl events).
inline std::vector<Call> without_ctrl(const std::vector<Call>& cs) {
  std::vector<void*> ctrl;
  for (const Call& c : starts(cs, kProxyCtrl)) ctrl.push_back(c.handle);
  std::vector<Call> out;
  for (const Call& c : cs) {
    if (c.kind == Kind::kStart && c.type == kProxyCtrl) continue;
    if ((c.kind == Kind::kStop || c.kind == Kind::kRecord) &&
        std::find(ctrl.begin(), ctrl.end(), c.handle) != ctrl.end())
      continue;
    out.push_back(c);
  }
  return out;
}

class Emu : public ::testing::Test {
 protected:
  void SetUp() override { ni::rec::reset(); }
};

}  // namespace ni::emu_test
