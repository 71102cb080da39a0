#include "src/core/gpu_timer.h"

#include <dlfcn.h>

namespace ni::core {

namespace {
constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorNotReady = 600;  // CUDA_ERROR_NOT_READY
constexpr unsigned kEventDefault = 0;    // CU_EVENT_DEFAULT: timing enabled
}  // namespace

bool GpuTimers::bind() noexcept {
  // RTLD_NOLOAD: only a driver that is already in the process (NCCL's). The
  // reference is kept until this object goes, so the entry points stay valid.
  lib_ = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (lib_ == nullptr) return false;
  auto sym = [this](const char* name) { return dlsym(lib_, name); };
  create_ = reinterpret_cast<EventCreate>(sym("cuEventCreate"));
  record_ = reinterpret_cast<EventRecord>(sym("cuEventRecord"));
  query_ = reinterpret_cast<EventQuery>(sym("cuEventQuery"));
  elapsed_ = reinterpret_cast<EventElapsed>(sym("cuEventElapsedTime"));
  destroy_ = reinterpret_cast<EventDestroy>(sym("cuEventDestroy_v2"));
  ctx_get_ = reinterpret_cast<CtxGet>(sym("cuCtxGetCurrent"));
  ctx_push_ = reinterpret_cast<CtxPush>(sym("cuCtxPushCurrent_v2"));
  ctx_pop_ = reinterpret_cast<CtxPop>(sym("cuCtxPopCurrent_v2"));
  ctx_set_ = reinterpret_cast<CtxSet>(sym("cuCtxSetCurrent"));
  const bool ok = create_ && record_ && query_ && elapsed_ && destroy_ && ctx_get_ && ctx_push_ && ctx_pop_ && ctx_set_;
  // Release pairs with available()'s acquire: the entry points are set.
  ok_.store(ok, std::memory_order_release);
  return ok;
}

GpuTimers::~GpuTimers() {
  if (lib_ != nullptr) dlclose(lib_);
}

int GpuTimers::take(void* stream) noexcept {
  if (stream == nullptr || !available()) return -1;
  void* ctx = nullptr;
  if (ctx_get_(&ctx) != kCudaSuccess || ctx == nullptr) {
    fallbacks.fetch_add(1, std::memory_order_relaxed);  // statistic
    return -1;
  }
  const uint32_t first = hint_.load(std::memory_order_relaxed);  // a hint
  for (uint32_t k = 0; k < kPairs; ++k) {
    const int i = static_cast<int>((first + k) % kPairs);
    Pair& p = pairs_[i];
    uint32_t expected = kFree;
    // Acquire pairs with give()'s release store: the previous owner's use of
    // the pair (and its fields) happened before ours.
    if (p.state.load(std::memory_order_relaxed) != kFree ||
        !p.state.compare_exchange_strong(expected, kTaken, std::memory_order_acquire, std::memory_order_relaxed))
      continue;
    if (p.ctx != nullptr && p.ctx != ctx) {  // events of another GPU's context: leave it to that GPU's comms
      give(i);
      continue;
    }
    if (p.ctx == nullptr) {
      if (create_(&p.start, kEventDefault) != kCudaSuccess) {
        give(i);
        break;
      }
      if (create_(&p.stop, kEventDefault) != kCudaSuccess) {
        destroy_(p.start);
        p.start = nullptr;
        give(i);
        break;
      }
      p.ctx = ctx;
    }
    if (record_(p.start, stream) != kCudaSuccess) {
      give(i);
      break;
    }
    hint_.store(static_cast<uint32_t>(i + 1) % kPairs, std::memory_order_relaxed);  // a hint
    return i;
  }
  fallbacks.fetch_add(1, std::memory_order_relaxed);  // statistic
  return -1;
}

bool GpuTimers::stop(int idx, void* stream) noexcept {
  if (idx < 0 || idx >= kPairs) return false;
  if (record_(pairs_[idx].stop, stream) == kCudaSuccess) return true;
  fallbacks.fetch_add(1, std::memory_order_relaxed);  // statistic
  give(idx);
  return false;
}

GpuTimers::Poll GpuTimers::poll(int idx, uint64_t* ns) noexcept {
  if (idx < 0 || idx >= kPairs) return Poll::kFailed;
  Pair& p = pairs_[idx];
  // The consumer is our own thread: its current context is ours to set.
  if (p.ctx != consumer_ctx_) {
    if (ctx_set_(p.ctx) != kCudaSuccess) return Poll::kFailed;
    consumer_ctx_ = p.ctx;
  }
  const int q = query_(p.stop);
  if (q == kCudaErrorNotReady) return Poll::kPending;
  float ms = 0;
  if (q != kCudaSuccess || elapsed_(&ms, p.start, p.stop) != kCudaSuccess || !(ms >= 0)) {
    fallbacks.fetch_add(1, std::memory_order_relaxed);  // statistic
    return Poll::kFailed;
  }
  *ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6 + 0.5);
  timed.fetch_add(1, std::memory_order_relaxed);  // statistic
  return Poll::kDone;
}

void GpuTimers::give(int idx) noexcept {
  if (idx < 0 || idx >= kPairs) return;
  // Release pairs with take()'s acquire CAS.
  pairs_[idx].state.store(kFree, std::memory_order_release);
}

void GpuTimers::shutdown() noexcept {
  if (!available()) return;
  // Release pairs with available()'s acquire: take() starts no new pair.
  ok_.store(false, std::memory_order_release);
  for (Pair& p : pairs_) {
    uint32_t expected = kFree;
    // Acquire pairs with give()'s release store; a pair still taken (an op a
    // straggling thread has not finished) keeps its events.
    if (!p.state.compare_exchange_strong(expected, kRetired, std::memory_order_acquire, std::memory_order_relaxed))
      continue;
    if (p.ctx == nullptr) continue;
    if (ctx_push_(p.ctx) == kCudaSuccess) {
      destroy_(p.start);
      destroy_(p.stop);
      void* popped = nullptr;
      ctx_pop_(&popped);
    }
    p.ctx = nullptr;
  }
  consumer_ctx_ = nullptr;
}

}  // namespace ni::core
