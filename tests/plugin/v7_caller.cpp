// A stand-in for the library that binds the plugin's ncclProfiler_v7: built
// twice, as libnccl-v7-caller.so and librccl-v7-caller.so, so that the plugin
// sees calls from an NCCL-named or an RCCL-named library. With `rccl_layout`
// its descriptors are as long as RCCL's v7 ones, which have no userTag: the
// Coll descriptor ends (128 bytes) right before a page the process may not
// read, and the bytes where NVIDIA's P2p has its tag hold other data.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "plugin/abi/all.h"

using namespace ni::abi;

namespace {
constexpr std::size_t kRcclDescrSize = 128;  // NVIDIA's v7 less the appended tags (profiler-abi.md §13.4)

// One op: its start, one channel's KernelCh (start, state 22, stop), its stop.
void run_op(const ProfilerV7* t, void* ctx, EventDescrV7* d) {
  void* h = nullptr;
  t->startEvent(ctx, &h, d);
  EventDescrV7 k{};
  k.type = kKernelCh;
  k.parentObj = h;
  k.kernelCh.channelId = 0;
  k.kernelCh.pTimer = 1'000'000;
  void* kh = nullptr;
  t->startEvent(ctx, &kh, &k);
  StateArgsV7 a{};
  a.kernelCh.pTimer = 1'050'000;
  t->recordEventState(kh, kKernelChStop, &a);
  t->stopEvent(kh);
  t->stopEvent(h);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int ni_v7_call(const char* plugin, uint64_t tag, int rccl_layout) {
  void* lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 1;
  const auto* t = static_cast<const ProfilerV7*>(dlsym(lib, "ncclProfiler_v7"));
  if (t == nullptr) return 2;
  void* ctx = nullptr;
  int mask = 0;
  t->init(&ctx, 0x7a9, &mask, "tagged", 1, 2, 0, nullptr);
  if (ctx == nullptr) return 3;

  const long page = sysconf(_SC_PAGESIZE);
  char* mem = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (mem == MAP_FAILED) return 4;
  if (mprotect(mem + page, page, PROT_NONE) != 0) return 5;
  const std::size_t len = rccl_layout ? kRcclDescrSize : sizeof(EventDescrV7);
  auto* d = reinterpret_cast<EventDescrV7*>(mem + page - len);

  std::memset(d, 0, len);
  d->type = kColl;
  d->coll.func = "AllReduce";
  d->coll.count = 1 << 20;
  d->coll.datatype = "ncclFloat32";
  d->coll.nChannels = 1;
  d->coll.nWarps = 8;
  d->coll.algo = "RING";
  d->coll.proto = "SIMPLE";
  if (!rccl_layout) d->coll.userTag = tag;
  run_op(t, ctx, d);

  std::memset(d, 0x5a, len);  // RCCL's bytes past its P2p member are not a tag
  d->type = kP2p;
  d->parentObj = nullptr;
  d->rank = 0;
  d->p2p.func = "Send";
  d->p2p.buff = nullptr;
  d->p2p.datatype = "ncclFloat32";
  d->p2p.count = 1 << 20;
  d->p2p.peer = 1;
  d->p2p.nChannels = 1;
  d->p2p.parentGroup = nullptr;
  if (!rccl_layout) d->p2p.userTag = tag;
  run_op(t, ctx, d);

  t->finalize(ctx);
  munmap(mem, 2 * page);
  dlclose(lib);
  return 0;
}
