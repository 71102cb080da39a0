// libnccl-profiler-null.so: exports ncclProfiler_v1..v7 that do nothing but
// return success and non-NULL handles. The floor for `nccl-emu bench`.
#include "plugin/abi/all.h"

namespace {

using namespace ni::abi;

char g_ctx;     // any non-NULL address will do
char g_handle;
constexpr int kNullMask = kColl | kP2p | kKernelCh;

Result init1(void** ctx, int* mask) noexcept {
  *ctx = &g_ctx;
  *mask = kNullMask;
  return kSuccess;
}
Result init4(void** ctx, int* mask, const char*, uint64_t, int, int, int, DebugLogger) noexcept {
  return init1(ctx, mask);
}
Result init5(void** ctx, uint64_t, int* mask, const char*, int, int, int, DebugLogger) noexcept {
  return init1(ctx, mask);
}
template <typename D>
Result start(void*, void** h, D*) noexcept {
  *h = &g_handle;
  return kSuccess;
}
Result stop(void*) noexcept { return kSuccess; }
template <typename A>
Result record(void*, EventState, A*) noexcept {
  return kSuccess;
}
Result fin(void*) noexcept { return kSuccess; }

}  // namespace

#define NULL_EXPORT __attribute__((visibility("default")))
extern "C" {
NULL_EXPORT ProfilerV1 ncclProfiler_v1 = {"null", init1, start<EventDescrV1>, stop, record<StateArgsV1>, fin};
NULL_EXPORT ProfilerV2 ncclProfiler_v2 = {"null", init1, start<EventDescrV2>, stop, record<StateArgsV2>, fin};
NULL_EXPORT ProfilerV3 ncclProfiler_v3 = {"null", init1, start<EventDescrV3>, stop, record<StateArgsV3>, fin};
NULL_EXPORT ProfilerV4 ncclProfiler_v4 = {"null", init4, start<EventDescrV4>, stop, record<StateArgsV4>, fin};
NULL_EXPORT ProfilerV5 ncclProfiler_v5 = {"null", init5, start<EventDescrV5>, stop, record<StateArgsV5>, fin};
NULL_EXPORT ProfilerV6 ncclProfiler_v6 = {"null", init5, start<EventDescrV6>, stop, record<StateArgsV6>, fin};
NULL_EXPORT ProfilerV7 ncclProfiler_v7 = {"null", init5, start<EventDescrV7>, stop, record<StateArgsV7>, fin};
}  // extern "C"
