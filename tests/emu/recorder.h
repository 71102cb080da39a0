// A recording profiler plugin for the emulator's tests: logs every call
// (thread name, event type, parent, handle, state, args, descriptor fields,
// global order) into memory. Built into the tests (driven in-process through
// PluginTables) and as .so variants (exporting all tables, or v3 only).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plugin/abi/all.h"

namespace ni::rec {

enum class Kind { kInit, kStart, kStop, kRecord, kFinalize };

struct Call {
  Kind kind = Kind::kInit;
  int abi = 0;
  int order = 0;
  std::string thread;
  uint64_t type = 0;
  void* ctx = nullptr;
  void* parent = nullptr;
  void* handle = nullptr;  // returned by start; passed to stop/record
  int rank = 0;
  // record
  int state = -1;
  bool args_null = false;
  uint64_t trans_size = 0;
  int steps = 0;
  int appended = 0;
  uint64_t raw_args = 0;  // first 8 bytes of v4+ args
  // coll / p2p / api / ce
  std::string func, dtype, algo, proto;
  int func_code = -1, dtype_code = -1;
  uint64_t count = 0, seq = 0, comm_hash = 0;
  const char* name = nullptr;
  int root = 0, peer = 0, nchannels = 0, nwarps = 0;
  void* parent_group = nullptr;
  int group_depth = 0;
  bool graph = false;
  // proxy / kernel / net
  int channel = 0;
  uint64_t ptimer = 0;
  pid_t pid = 0;
  int nsteps = 0, chunk = 0, is_send = 0, step = 0;
  int64_t net_id = 0;
  ni::abi::NetIbDescrV1 ib{};
  ni::abi::NetSockDescrV1 sock{};
  // ce
  int ce_nranks = 0;
  uint64_t ce_total = 0;
  // v7
  uint64_t user_tag = 0;
  bool sym = false, kernel_variant = false;
  int phase = -1;  // KernelPhase: phaseId (channel in `channel`, start in `ptimer`, phaseName in `name`)
  // init / finalize
  uint64_t comm_id = 0;
  std::string comm_name;
  int nnodes = 0, nranks = 0;
  bool has_logger = false;
  int mask_seen = 0;  // finalize: the mask as it is then
};

void reset();                          // clears the log and the knobs below
std::vector<Call> calls();             // a copy of the log
void set_mask(int m);                  // what init writes to *mask (default: every bit)
void set_init_result(int r);           // what init returns (default success)
void set_null_types(uint64_t types);   // starts of these types return a NULL handle

ni::abi::ProfilerV1* v1();
ni::abi::ProfilerV2* v2();
ni::abi::ProfilerV3* v3();
ni::abi::ProfilerV4* v4();
ni::abi::ProfilerV5* v5();
ni::abi::ProfilerV6* v6();
ni::abi::ProfilerV7* v7();

}  // namespace ni::rec
