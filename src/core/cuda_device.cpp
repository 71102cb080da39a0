#include "src/core/cuda_device.h"

#include <dlfcn.h>

#include <cctype>

namespace ni::core {

CudaDevice current_cuda_device() noexcept {
  CudaDevice d;
  // RTLD_NOLOAD: only a driver that is already in the process (NCCL's).
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return d;
  // Driver API signatures: CUresult cuCtxGetDevice(CUdevice*) and
  // CUresult cuDeviceGetPCIBusId(char*, int, CUdevice); CUresult and CUdevice are ints, 0 = CUDA_SUCCESS.
  using CtxGetDevice = int (*)(int*);
  using DeviceGetPciBusId = int (*)(char*, int, int);
  auto get_device = reinterpret_cast<CtxGetDevice>(dlsym(lib, "cuCtxGetDevice"));
  auto get_bus_id = reinterpret_cast<DeviceGetPciBusId>(dlsym(lib, "cuDeviceGetPCIBusId"));
  int dev = -1;
  if (get_device != nullptr && get_device(&dev) == 0 && dev >= 0) {
    d.ordinal = dev;
    char buf[64] = {};
    if (get_bus_id != nullptr && get_bus_id(buf, static_cast<int>(sizeof buf - 1), dev) == 0) {
      for (const char* p = buf; *p != '\0'; ++p) d.pci_bus_id += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    }
  }
  dlclose(lib);  // drops the reference RTLD_NOLOAD took
  return d;
}

}  // namespace ni::core
