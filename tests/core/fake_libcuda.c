/* A stand-in for the CUDA driver (built as libcuda.so.1 with that SONAME) for
 * tests/core/cuda_device_test.cpp and ce_timing_test.cpp: answers the driver
 * calls the plugin makes (the current device, contexts, events) with what the
 * test sets. Not a model of CUDA beyond that. */
#include <stdio.h>
#include <string.h>

static int g_device = -1; /* -1: no current context */
static char g_bus_id[32] = "";

__attribute__((visibility("default"))) void fake_cuda_set_current(int device, const char* bus_id) {
  g_device = device;
  snprintf(g_bus_id, sizeof g_bus_id, "%s", bus_id ? bus_id : "");
}

/* CUresult cuCtxGetDevice(CUdevice*): 201 = CUDA_ERROR_INVALID_CONTEXT. */
__attribute__((visibility("default"))) int cuCtxGetDevice(int* device) {
  if (g_device < 0) return 201;
  *device = g_device;
  return 0;
}

/* CUresult cuDeviceGetPCIBusId(char*, int, CUdevice): 101 = CUDA_ERROR_INVALID_DEVICE. */
__attribute__((visibility("default"))) int cuDeviceGetPCIBusId(char* buf, int len, int device) {
  if (device != g_device || len <= (int)strlen(g_bus_id)) return 101;
  memcpy(buf, g_bus_id, strlen(g_bus_id) + 1);
  return 0;
}

/* ---- contexts and events, for the copy-engine timing (src/core/gpu_timer.h).
 * A context is a token per device. Events complete only when the test runs
 * the "GPU": fake_cuda_run_one(ms) completes the two oldest recorded events
 * (an op's start and stop) ms apart. */
#define FAKE_EVENTS 4096
struct fake_event {
  int used, recorded, done;
  unsigned long long order; /* record order */
  double t_ms;
};
static struct fake_event g_ev[FAKE_EVENTS];
static unsigned long long g_order = 0;
static double g_clock_ms = 0;
static int g_fail_record = 0;
static long g_live = 0, g_created = 0, g_set_current = 0;

__attribute__((visibility("default"))) void fake_cuda_fail_record(int fail) { g_fail_record = fail; }
__attribute__((visibility("default"))) long fake_cuda_events_live(void) { return g_live; }
__attribute__((visibility("default"))) long fake_cuda_events_created(void) { return g_created; }

static struct fake_event* oldest_pending(void) {
  struct fake_event* best = 0;
  for (int i = 0; i < FAKE_EVENTS; ++i)
    if (g_ev[i].used && g_ev[i].recorded && !g_ev[i].done && (!best || g_ev[i].order < best->order)) best = &g_ev[i];
  return best;
}

/* Completes the oldest pending start and stop, ms apart; 0 if fewer than two. */
__attribute__((visibility("default"))) int fake_cuda_run_one(double ms) {
  struct fake_event* a = oldest_pending();
  if (!a) return 0;
  a->done = 1;
  a->t_ms = g_clock_ms;
  struct fake_event* b = oldest_pending();
  if (!b) return 0;
  b->done = 1;
  g_clock_ms += ms;
  b->t_ms = g_clock_ms;
  return 1;
}

static struct fake_event* ev_of(void* e) {
  unsigned long i = (unsigned long)e;
  if (i == 0 || i > FAKE_EVENTS || !g_ev[i - 1].used) return 0;
  return &g_ev[i - 1];
}

/* CUresult cuCtxGetCurrent(CUcontext*): success with NULL when none is current. */
__attribute__((visibility("default"))) int cuCtxGetCurrent(void** ctx) {
  *ctx = g_device < 0 ? 0 : (void*)(unsigned long)(0x1000 + g_device);
  return 0;
}
__attribute__((visibility("default"))) int cuCtxSetCurrent(void* ctx) {
  (void)ctx;
  ++g_set_current;
  return 0;
}
__attribute__((visibility("default"))) int cuCtxPushCurrent_v2(void* ctx) { return ctx ? 0 : 201; }
__attribute__((visibility("default"))) int cuCtxPopCurrent_v2(void** ctx) {
  if (ctx) *ctx = 0;
  return 0;
}

/* CUresult cuEventCreate(CUevent*, unsigned): 2 = CUDA_ERROR_OUT_OF_MEMORY. */
__attribute__((visibility("default"))) int cuEventCreate(void** e, unsigned flags) {
  (void)flags;
  for (int i = 0; i < FAKE_EVENTS; ++i)
    if (!g_ev[i].used) {
      memset(&g_ev[i], 0, sizeof g_ev[i]);
      g_ev[i].used = 1;
      *e = (void*)(unsigned long)(i + 1);
      ++g_live;
      ++g_created;
      return 0;
    }
  return 2;
}
/* 400 = CUDA_ERROR_INVALID_HANDLE, 999 = CUDA_ERROR_UNKNOWN. */
__attribute__((visibility("default"))) int cuEventRecord(void* e, void* stream) {
  struct fake_event* v = ev_of(e);
  (void)stream;
  if (!v) return 400;
  if (g_fail_record) return 999;
  v->recorded = 1;
  v->done = 0;
  v->order = ++g_order;
  return 0;
}
/* 600 = CUDA_ERROR_NOT_READY. */
__attribute__((visibility("default"))) int cuEventQuery(void* e) {
  struct fake_event* v = ev_of(e);
  if (!v) return 400;
  return !v->recorded || v->done ? 0 : 600;
}
__attribute__((visibility("default"))) int cuEventElapsedTime(float* ms, void* a, void* b) {
  struct fake_event *x = ev_of(a), *y = ev_of(b);
  if (!x || !y || !x->recorded || !y->recorded) return 400;
  if (!x->done || !y->done) return 600;
  *ms = (float)(y->t_ms - x->t_ms);
  return 0;
}
__attribute__((visibility("default"))) int cuEventDestroy_v2(void* e) {
  struct fake_event* v = ev_of(e);
  if (!v) return 400;
  v->used = 0;
  --g_live;
  return 0;
}
