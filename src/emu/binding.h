// Plugin loading and the per-version binding (profiler-abi.md §0, §4, §6).
//
// The emulated NCCL core builds every event in one neutral form (Ev) holding
// what the emulated release's *native* descriptor would carry. Binding turns
// it into the bound version's descriptor and applies the adapter behaviour
// NCCL uses when the bound version is older than the native one: string->code
// conversion, drops, garbage in uninitialised fields, *eHandle left unwritten,
// state forwarding and args rules.
//
// Threads: start/stop/record/init/finalize may be called concurrently from
// any thread; Binding holds no lock around plugin calls. Loader's load/unload
// are serialised by its own mutex (as NCCL's load mutex; it does not cover init).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "src/emu/emu.h"

namespace ni::emu {

// Index of an event-type bit (0..15), for counters.
int type_index(uint64_t type_bit);
const char* type_name(uint64_t type_bit);
inline constexpr int kNumTypes = 16;

// Static string tables (the literals NCCL puts in descriptors, §5).
const char* func_name_of(int code);           // ncclFunc_t-ish code -> name
int func_code_of(std::string_view name);      // name -> code, -1 unknown
const char* dtype_name_of(int code);          // Uint8 -> "Unknown"
int dtype_code_of(std::string_view name);     // accepts "ncclUint8" too; -1 unknown
size_t dtype_size(int code);
const char* algo_name_of(int code);
int algo_code_of(std::string_view name);
const char* proto_name_of(int code);
int proto_code_of(std::string_view name);
// Our own func codes beyond NCCL's 0..7 for the 2.28+ split functions.
inline constexpr int kFuncSendRecv = 5, kFuncSend = 6, kFuncRecv = 7, kFuncAlltoAll = 8, kFuncGather = 9,
                     kFuncScatter = 10;

// The neutral event: the union of every descriptor field, filled as the
// emulated release would fill its native descriptor.
struct Ev {
  uint64_t type = 0;
  void* parent = nullptr;
  int rank = 0;
  // coll / p2p / api / ce
  uint64_t comm_hash = 0;  // carried by v1..v3 descriptors natively
  uint64_t seq = 0;
  int func = 0;            // code
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  uint64_t count = 0;
  int root = 0;
  int dtype = 0;           // code
  uint32_t redop = 0;
  uint64_t traffic_bytes = 0;
  uint8_t nchannels = 0;
  uint8_t nwarps = 0;
  int algo = 0, proto = 0;
  void* parent_group = nullptr;
  int peer = 0;
  // api
  bool graph_captured = false;
  int group_depth = 0;
  void* stream = nullptr;
  // proxy
  pid_t pid = 0;
  uint8_t channel = 0;
  int nsteps = 0, chunk = 0, is_send = 0, step = 0;
  // kernelCh
  uint64_t ptimer = 0;
  // netPlugin
  int64_t net_id = 0;
  void* net_data = nullptr;
  // ce
  const char* sync_strategy = "MC";
  uint32_t ce_seq = 0;
  bool ce_complete = false;
  int ce_nranks = 0;
  uint32_t ce_numops = 0;
  uint64_t ce_total_bytes = 0;
  // v7 (2.31+): the application's tag (API, Coll, P2p, CeColl); 0 = none
  uint64_t user_tag = 0;
  // v7 (2.31+) Coll: a symmetric-kernel plan's variant (a string that lives as long as the process), else NULL
  const char* kernel_variant = nullptr;
  // kernelPhase
  uint8_t phase_id = 0;
};

// Neutral state args. `null` = the native call passes a NULL args pointer.
struct St {
  bool null = false;
  uint64_t trans_size = 0;
  int steps = 0;
  int appended = 0;
  void* net_data = nullptr;
  uint64_t ptimer = 0;
};

// Garbage byte NCCL's adapters leave in uninitialised fields (we make it deterministic).
inline constexpr unsigned char kGarbage = 0xA5;

// The library, loaded once per emulated process, refcounted per comm (§6).
class Loader {
 public:
  // path empty: use `tables` in-process.
  Loader(std::string path, const PluginTables& tables) : path_(std::move(path)), fixed_(tables) {}
  ~Loader();
  // Loads if not loaded (refcount 0 -> 1 dlopens). Returns false + error.
  bool acquire(PluginTables* out, std::string* err);
  // Drops a reference; at zero dlcloses (a later acquire re-dlopens).
  void release();
  int loads() const;      // how many times the library was (re)opened
  int unloads() const;
  // Never dlclose from now on: contexts that were never finalized (a planted
  // hang) may still run plugin code.
  void keep_loaded();

 private:
  std::string path_;
  PluginTables fixed_;
  mutable std::mutex mu_;  // guards everything below (NCCL's plugin load mutex)
  void* dl_ = nullptr;
  PluginTables loaded_;
  int refs_ = 0;
  int loads_ = 0;
  int unloads_ = 0;
  bool keep_ = false;
};

// Probe a plugin file without keeping it open: which ncclProfiler_vN it exports.
// Returns false + a user-facing message on error.
bool probe_plugin(const std::string& path, unsigned* avail_mask, std::string* err);
unsigned avail_mask_of(const PluginTables& t);

struct CommInit {
  uint64_t comm_hash = 0;
  const char* comm_name = nullptr;
  int nnodes = 0, nranks = 0, rank = 0;
  ni::abi::DebugLogger logfn = nullptr;
};

class Binding {
 public:
  Binding(NcclVersion v, const PluginTables& t);
  int bound() const { return bound_; }
  int native() const { return native_; }
  const char* plugin_name() const;

  // Calls the bound init the way the release does; applies the v5-on-2.29+
  // mask rewrite. Returns the plugin's result (after the 2.24-2.25 v1 quirk).
  int init(void** ctx, int* mask, const CommInit& c);
  void finalize(void* ctx);
  // Returns the handle NCCL would hold after the call (nullptr if dropped).
  void* start(void* ctx, const Ev& e);
  void stop(uint64_t type, void* h);   // no NULL check here: callers decide
  void record(uint64_t type, void* h, int state, const St& a);
  // The plugin's ncclInspectorMark (user code's call); -1 when it has none.
  int mark(const char* label) const { return t_.mark != nullptr ? t_.mark(label) : -1; }
  int name_tag(uint64_t tag, const char* name) const { return t_.name_tag != nullptr ? t_.name_tag(tag, name) : -1; }

  // Callback counters (calls actually made into the plugin).
  struct Counters {
    std::atomic<uint64_t> start[kNumTypes] = {};
    std::atomic<uint64_t> stop[kNumTypes] = {};
    std::atomic<uint64_t> record[kNumTypes] = {};
    std::atomic<uint64_t> init{0}, finalize{0};
  };
  const Counters& counters() const { return cnt_; }
  // Whether events of this type reach the plugin at all under this binding.
  bool forwards(uint64_t type) const;

 private:
  void* start_v1(void* ctx, const Ev& e);
  void* start_v2(void* ctx, const Ev& e);
  void* start_v3(void* ctx, const Ev& e);
  void* start_v4(void* ctx, const Ev& e);
  void* start_v5(void* ctx, const Ev& e);
  void* start_v6(void* ctx, const Ev& e);
  void* start_v7(void* ctx, const Ev& e);
  void count_start(uint64_t type) { cnt_.start[type_index(type)].fetch_add(1, std::memory_order_relaxed); }

  NcclVersion v_;
  PluginTables t_;
  int bound_ = 0;
  int native_ = 0;
  // Relaxed counters: read only after every thread that calls the plugin was joined.
  Counters cnt_;
};

}  // namespace ni::emu
