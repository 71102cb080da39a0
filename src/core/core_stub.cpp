// Minimal core (replaced by the tracker): contexts and the bound-ABI log line.
#include <atomic>
#include <cstdio>
#include <new>

#include "src/core/core.h"

namespace ni::core {
namespace {
struct Ctx {
  int abi;
};
}  // namespace

void* comm_init(const InitArgs& a) noexcept {
  if (a.mask) *a.mask = nccl_abi::kColl | nccl_abi::kP2p | nccl_abi::kKernelCh;
  if (a.logfn) a.logfn(nccl_abi::kLogInfo, nccl_abi::kSubsysInit | nccl_abi::kSubsysProfile, __FILE__, __LINE__,
                       "NCCL Inspector: bound profiler ABI v%d", a.abi);
  return new (std::nothrow) Ctx{a.abi};
}
void comm_finalize(void* ctx) noexcept { delete static_cast<Ctx*>(ctx); }
void* start_coll(void*, void*, int, const CollStart&) noexcept { return nullptr; }
void* start_p2p(void*, void*, int, const P2pStart&) noexcept { return nullptr; }
void* start_ce_coll(void*, void*, int, const CeStart&) noexcept { return nullptr; }
void* start_ce_child(void*, void*, EvType, uint64_t) noexcept { return nullptr; }
void* start_kernel_ch(void*, void*, uint8_t, uint64_t, bool) noexcept { return nullptr; }
void* start_proxy_op(void*, void*, const ProxyOpStart&) noexcept { return nullptr; }
void* start_proxy_step(void*, void*, int) noexcept { return nullptr; }
void* start_net_plugin(void*, void*, int64_t, const void*) noexcept { return nullptr; }
void* start_marker(void*, EvType, bool) noexcept { return nullptr; }
void* start_unknown(void*) noexcept { return nullptr; }
void stop(void*) noexcept {}
void record_state(void*, int, const StateArgs&) noexcept {}
}  // namespace ni::core
