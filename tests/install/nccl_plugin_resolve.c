/* Resolves NCCL_PROFILER_PLUGIN the way NCCL 2.26+ does (src/plugin/plugin_open.cc): dlopen the value as given,
 * then "libnccl-profiler-<value>.so" through the normal library search (LD_LIBRARY_PATH, ld.so.cache, /usr/lib),
 * and binds the newest profiler table it knows. Prints the file it loaded and the table's name.
 * Exit 0 on success, 1 when nothing loads. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const char* value = getenv("NCCL_PROFILER_PLUGIN");
  char name[4096];
  void* h = NULL;
  if (value == NULL || value[0] == '\0') {
    snprintf(name, sizeof name, "libnccl-profiler.so");
    h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  } else {
    snprintf(name, sizeof name, "%s", value);
    h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      snprintf(name, sizeof name, "libnccl-profiler-%s.so", value);
      h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (h == NULL) {
    fprintf(stderr, "resolve: could not load a profiler plugin for NCCL_PROFILER_PLUGIN=%s: %s\n",
            value ? value : "(unset)", dlerror());
    return 1;
  }
  const char* versions[] = {"ncclProfiler_v6", "ncclProfiler_v5", "ncclProfiler_v4",
                            "ncclProfiler_v3", "ncclProfiler_v2", "ncclProfiler_v1"};
  for (int i = 0; i < 6; ++i) {
    /* Every table starts with `const char* name`. */
    const char* const* table = (const char* const*)dlsym(h, versions[i]);
    if (table != NULL) {
      struct link_map* lm = NULL;
      dlinfo(h, RTLD_DI_LINKMAP, &lm);
      printf("resolve: %s -> %s, bound %s (plugin name \"%s\")\n", name, lm ? lm->l_name : "?", versions[i],
             table[0]);
      dlclose(h);
      return 0;
    }
  }
  fprintf(stderr, "resolve: %s has no ncclProfiler_v* symbol\n", name);
  dlclose(h);
  return 1;
}
