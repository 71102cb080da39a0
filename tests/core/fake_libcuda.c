/* A stand-in for the CUDA driver (built as libcuda.so.1 with that SONAME) for
 * tests/core/cuda_device_test.cpp: answers the two driver calls the plugin
 * makes with a device the test sets. Not a model of CUDA beyond that. */
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
