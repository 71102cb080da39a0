// Loads the plugin the way NCCL does (dlopen RTLD_NOW|RTLD_LOCAL, dlsym
// ncclProfiler_v5) and runs one communicator's life: init, a mark, flush,
// finalize. Built with -static-libstdc++ -static-libgcc so that it needs only
// glibc itself: check_glibc_only.sh runs it inside a chroot that holds nothing
// but the dynamic loader, libc and libm, which proves the plugin needs no more.
#include <dlfcn.h>

#include <cstdio>

#include "plugin/abi/all.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "probe: dlopen failed: %s\n", dlerror());
    return 1;
  }
  auto* t = static_cast<ni::abi::ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  auto* mark = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "ncclInspectorMark"));
  auto* flush = reinterpret_cast<int (*)()>(dlsym(lib, "ncclInspectorFlush"));
  if (t == nullptr || mark == nullptr || flush == nullptr) {
    std::fprintf(stderr, "probe: missing symbol (v5 %p, mark %p, flush %p)\n", static_cast<void*>(t),
                 reinterpret_cast<void*>(mark), reinterpret_cast<void*>(flush));
    return 1;
  }
  void* ctx = nullptr;
  int mask = 0;
  if (t->init(&ctx, 0x1234abcdULL, &mask, "probe", 1, 2, 0, nullptr) != ni::abi::kSuccess) {
    std::fprintf(stderr, "probe: init failed\n");
    return 1;
  }
  mark("glibc-only-probe");
  flush();
  std::printf("probe: ok (plugin \"%s\", mask 0x%x, context %s)\n", t->name, mask, ctx ? "set" : "null");
  t->finalize(ctx);
  dlclose(lib);
  return 0;
}
