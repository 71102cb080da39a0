// Local, hidden definitions of two glibc symbols that the statically linked
// libstdc++/libgcc reference when the plugin is built on glibc >= 2.35/2.36,
// so that loading it needs only glibc 2.34 (RHEL/Rocky 9, Ubuntu 22.04, NGC
// containers). Both are reached only from cold paths: std::random_device and
// the exception unwinder. tests/portability checks the resulting minimum.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#define NI_HIDDEN __attribute__((visibility("hidden")))

// arc4random (GLIBC_2.36): only std::random_device's "arc4random" token reaches it.
NI_HIDDEN uint32_t arc4random(void) {
  uint32_t v = 0;
  while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
  }
  return v;
}

// _dl_find_object (GLIBC_2.35): used by libgcc's unwinder to find the .eh_frame of a PC. Use glibc's when it
// has one, else the same answer from dl_iterate_phdr.
struct dl_find_object;
typedef int (*ni_dfo_fn)(void*, struct dl_find_object*);
struct ni_dfo_search {
  uintptr_t pc;
  struct dl_find_object* out;
  int found;
};
// Mirrors glibc's struct dl_find_object (x86_64/aarch64 layout, glibc 2.35+).
struct ni_dfo {
  unsigned long long dlfo_flags;
  void* dlfo_map_start;
  void* dlfo_map_end;
  struct link_map* dlfo_link_map;
  void* dlfo_eh_frame;
  unsigned long long __dlfo_reserved[7];
};
static int ni_dfo_cb(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct ni_dfo_search* s = (struct ni_dfo_search*)data;
  uintptr_t lo = UINTPTR_MAX, hi = 0, eh = 0;
  int inside = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* p = &info->dlpi_phdr[i];
    if (p->p_type == PT_LOAD) {
      uintptr_t a = info->dlpi_addr + p->p_vaddr, b = a + p->p_memsz;
      if (a < lo) lo = a;
      if (b > hi) hi = b;
      if (s->pc >= a && s->pc < b) inside = 1;
    } else if (p->p_type == PT_GNU_EH_FRAME) {
      eh = info->dlpi_addr + p->p_vaddr;
    }
  }
  if (!inside) return 0;
  struct ni_dfo* o = (struct ni_dfo*)s->out;
  memset(o, 0, sizeof *o);
  o->dlfo_map_start = (void*)lo;
  o->dlfo_map_end = (void*)hi;
  o->dlfo_eh_frame = (void*)eh;
  s->found = 1;
  return 1;
}
NI_HIDDEN int _dl_find_object(void* pc, struct dl_find_object* result) {
  static ni_dfo_fn real;
  static int looked;
  if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
    ni_dfo_fn f = (ni_dfo_fn)dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35");
    __atomic_store_n(&real, f, __ATOMIC_RELAXED);
    __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
  }
  ni_dfo_fn f = __atomic_load_n(&real, __ATOMIC_RELAXED);
  if (f) return f(pc, result);
  struct ni_dfo_search s = {(uintptr_t)pc, result, 0};
  dl_iterate_phdr(ni_dfo_cb, &s);
  return s.found ? 0 : -1;
}
